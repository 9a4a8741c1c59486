// DRAGOMAN_HOST_DEVICE marks per-element math that the CPU kernels (the spec) and the CUDA kernels
// (their twins) share: __host__ __device__ under nvcc, nothing in a plain C++ compiler.
#pragma once

#if defined(__CUDACC__)
#define DRAGOMAN_HOST_DEVICE __host__ __device__
#else
#define DRAGOMAN_HOST_DEVICE
#endif
