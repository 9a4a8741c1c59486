// What a test may set of the host emulation (emulated_cuda.h) without its CUDA stand-ins.
#pragma once

#include <cstddef>

namespace dragoman::emulation {

// The opt-in shared memory a block may have (default 227 KiB: an H100's), which the kernels'
// host code asks as the device's (device_shared_limit).
std::size_t shared_limit();
void set_shared_limit(std::size_t bytes);

}  // namespace dragoman::emulation
