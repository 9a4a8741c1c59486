// The errors of the CHECK macros (see check.h).
#include "device/cuda/check.h"

#include "device/cuda/deferred_error.h"

namespace dragoman::cuda {
namespace {

std::string error_message(const char* call, const std::string& what, const char* file, int line) {
  return std::string(call) + " failed: " + what + " (" + file + ":" + std::to_string(line) + ")";
}

}  // namespace

void throw_cuda_error(const char* call, const std::string& what, const char* file, int line) {
  throw Error(error_message(call, what, file, line));
}

void defer_cuda_error(const char* call, const char* what, const char* file, int line) noexcept {
  try {
    defer_error(error_message(call, what, file, line));
  } catch (...) {  // building the message ran out of memory: nothing better to do in a destructor
  }
}

}  // namespace dragoman::cuda
