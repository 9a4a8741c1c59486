// Errors that cannot be thrown where they happen: a CUDA call that fails inside a destructor (a
// DeviceGuard restoring the device, a PinnedBuffer freeing its memory). Throwing there would call
// std::terminate during unwinding and hide the first error, so the first such error is kept here
// and thrown by the next rethrow_deferred_error(): release_all() (core/allocator.h) calls it, and
// main calls release_all() before it exits. Plain C++ (no CUDA header), built in every build.
#pragma once

#include <string>

namespace dragoman::cuda {

// Keeps `message` unless an earlier error is already kept. Never throws.
void defer_error(const std::string& message) noexcept;

// Throws dragoman::Error with the kept message (and forgets it); does nothing if none is kept.
void rethrow_deferred_error();

}  // namespace dragoman::cuda
