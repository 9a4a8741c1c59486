// Deferred errors (see deferred_error.h). The lock is taken only on the error path and by the
// explicit rethrow, never per allocation or launch.
#include "device/cuda/deferred_error.h"

#include <mutex>
#include <optional>

#include "base/error.h"

namespace dragoman::cuda {
namespace {

std::mutex& error_mutex() {
  static std::mutex mutex;
  return mutex;
}

std::optional<std::string>& kept_error() {
  static std::optional<std::string> error;
  return error;
}

}  // namespace

void defer_error(const std::string& message) noexcept {
  try {
    const std::lock_guard<std::mutex> lock(error_mutex());
    if (!kept_error()) kept_error() = message;
  } catch (...) {  // out of memory while keeping the message: the error is lost, the process goes on
  }
}

void rethrow_deferred_error() {
  std::optional<std::string> error;
  {
    const std::lock_guard<std::mutex> lock(error_mutex());
    error.swap(kept_error());
  }
  if (error) throw Error(*error + " (reported late: it happened in a destructor)");
}

}  // namespace dragoman::cuda
