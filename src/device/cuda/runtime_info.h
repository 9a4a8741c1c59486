// The CUDA side of `dragoman --version` and of GPU test skipping: library versions and devices.
#pragma once

#include <string>

namespace dragoman::cuda {

// Number of usable CUDA devices; 0 when there is no driver or no device (never throws).
int device_count();

// Why device_count() is 0: the CUDA runtime's own words for its failure ("CUDA driver version is
// insufficient for CUDA runtime version", "no CUDA-capable device is detected"), "no CUDA device"
// when it succeeded with none, or "a build without CUDA". Empty when there is a device.
std::string no_device_reason();

// "CUDA: yes (runtime 13.0, driver 12.8 | none), cuBLAS 13.0.0, NCCL 2.27.3\n" followed by one
// line per device (name, compute capability, memory). Without a device, the cuBLAS version is the
// headers' (cuBLAS is not loaded then: device/cuda/cublas_loader.cpp).
std::string runtime_info();

// The name of CUDA device `device` ("NVIDIA H200"); an Error without it.
std::string device_name(int device);

// Loads cuBLASLt if it is not loaded yet (device/cuda/cublas_loader.cpp) and returns its version,
// "13.1.0"; an Error naming the library if it cannot be loaded. Needs no device.
std::string cublas_version();

}  // namespace dragoman::cuda
