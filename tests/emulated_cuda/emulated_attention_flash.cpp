// kernels/cuda/attention_flash.cu's own source compiled for the host emulation (emulated_cuda.h),
// its namespace renamed attention_detail_emulated: what tests/kernels/test_attention_emulated.cpp runs.
#define DRAGOMAN_CUDA_EMULATION 1
#define attention_detail attention_detail_emulated
#include "emulated_cuda/emulated_cuda.h"
#include "kernels/cuda/attention_flash.cu"
