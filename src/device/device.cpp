// Device names (see device.h).
#include "device/device.h"

#include <charconv>

#include "base/error.h"

namespace dragoman {

Device Device::parse(std::string_view text) {
  if (text == "cpu") return cpu();
  if (text == "cuda") return cuda(0);
  if (text.substr(0, 5) == "cuda:" && text.size() > 5) {
    int index = -1;
    const auto [end, ec] = std::from_chars(text.data() + 5, text.data() + text.size(), index);
    if (ec == std::errc() && end == text.data() + text.size() && index >= 0) return cuda(index);
  }
  throw Error("invalid device '" + std::string(text) + "': expected cpu, cuda or cuda:N");
}

std::string Device::str() const { return is_cpu() ? "cpu" : "cuda:" + std::to_string(index); }

}  // namespace dragoman
