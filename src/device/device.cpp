// Device names (see device.h).
#include "device/device.h"

#include <charconv>

#include "base/error.h"
#include "device/cuda/runtime_info.h"

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

int cuda_device_count() {
  if constexpr (kWithCuda) {
    return cuda::device_count();
  } else {
    return 0;
  }
}

std::string cuda_absent_reason() {
  if constexpr (kWithCuda) {
    return cuda::no_device_reason();
  } else {
    return "a build without CUDA";
  }
}

void throw_no_cuda(const std::string& what) {
  throw Error(what + ": this build has no CUDA (rebuild with -DDRAGOMAN_CUDA=ON)");
}

std::string Device::str() const { return is_cpu() ? "cpu" : "cuda:" + std::to_string(index); }

}  // namespace dragoman
