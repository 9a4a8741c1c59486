// Error helpers (see error.h).
#include "base/error.h"

namespace dragoman {

void throw_input_error(std::string_view file, std::size_t line, std::string_view message) {
  std::string text;
  text.reserve(file.size() + message.size() + 24);
  text.append(file).append(":").append(std::to_string(line)).append(": ").append(message);
  throw Error(text);
}

}  // namespace dragoman
