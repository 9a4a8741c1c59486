// The CUDA side of `dragoman --version` and of GPU test skipping: library versions and devices.
#pragma once

#include <string>

namespace dragoman::cuda {

// Number of usable CUDA devices; 0 when there is no driver or no device (never throws).
int device_count();

// "CUDA: yes (runtime 13.0, driver 12.8 | none), cuBLAS 13.0.0, NCCL 2.27.3\n" followed by one
// line per device (name, compute capability, memory).
std::string runtime_info();

}  // namespace dragoman::cuda
