// The two-pass column sums of the backward kernels (bias_backward, layer_norm_backward's parameter
// gradients), private to kernels/cuda/*.cu. Pass 1 (in the kernel's own file): one thread per column
// and chunk of kColumnSumChunkRows rows sums the chunk's rows in order into workspace[chunk, column].
// Pass 2 (here): one thread per column adds its chunk sums in chunk order and adds the total to the
// parameter gradient. No atomics: the order depends only on (rows, cols), so the bits never change
// from run to run or GPU to GPU.
#pragma once

#include <cstdint>

#include "kernels/cuda/check.h"
#include "kernels/cuda/elementwise.h"
#include "kernels/cuda/launch.cuh"

namespace dragoman::cuda {
namespace {

constexpr unsigned kColumnSumThreads = 128;

// Pass 1's grid: blockIdx.x the chunk (up to 2^31 - 1), blockIdx.y a block of kColumnSumThreads columns.
inline dim3 column_sum_grid(std::int64_t rows, std::int64_t cols) {
  return dim3(static_cast<unsigned>(column_sum_chunks(rows)),
              static_cast<unsigned>((cols + kColumnSumThreads - 1) / kColumnSumThreads));
}

// This pass-1 thread's column c and its chunk's rows [r0, r1); false for a thread past the last column.
__device__ inline bool column_chunk(std::int64_t rows, std::int64_t cols, std::int64_t& c, std::int64_t& r0,
                                    std::int64_t& r1) {
  c = static_cast<std::int64_t>(blockIdx.y) * blockDim.x + threadIdx.x;
  r0 = static_cast<std::int64_t>(blockIdx.x) * kColumnSumChunkRows;
  r1 = r0 + kColumnSumChunkRows < rows ? r0 + kColumnSumChunkRows : rows;
  return c < cols;
}

// Pass 2: out[c] += workspace[0, c] + workspace[1, c] + ... (chunk order; a single chunk's sum is
// added as it is, which is the CPU spec's order).
template <typename A>
__global__ void add_chunk_sums_kernel(const A* workspace, A* out, std::int64_t chunks, std::int64_t cols) {
  for (std::int64_t c = launch::first_index(); c < cols; c += launch::grid_stride()) {
    A total = workspace[c];
    // (unrolled: 16 loads in flight instead of one global latency per chunk; the sums' order is kept)
#pragma unroll 16
    for (std::int64_t k = 1; k < chunks; ++k) total += workspace[k * cols + c];
    out[c] += total;
  }
}

template <typename A>
void add_chunk_sums(const A* workspace, A* out, std::int64_t chunks, std::int64_t cols, Stream stream) {
  add_chunk_sums_kernel<A><<<launch::blocks_for(cols), launch::kThreads, 0, stream>>>(workspace, out, chunks, cols);
  DRAGOMAN_CUDA_CHECK(cudaGetLastError());
}

}  // namespace
}  // namespace dragoman::cuda
