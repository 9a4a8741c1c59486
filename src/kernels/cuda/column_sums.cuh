// The two-pass column sums of the backward kernels (bias_backward, layer_norm_backward's parameter
// gradients), private to kernels/cuda/*.cu. Pass 1 (in the kernel's own file): one thread per column
// and chunk of kColumnSumChunkRows rows sums the chunk's rows in order into workspace[chunk, column].
// Pass 2 (here): 8 lanes per column each add every 8th chunk sum in order, then the lanes' sums are
// added in lane order to the parameter gradient. No atomics: the order depends only on (rows, cols),
// so the bits never change from run to run or GPU to GPU.
#pragma once

#include <cstdint>

#include "device/cuda/check.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/elementwise.h"

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

// Pass 2: out[c] += the sum of workspace[0, c], workspace[1, c], ... Each block takes 32 columns
// with 8 lanes of chunks: lane j sums chunks j, j + 8, j + 16, ... in order, then lane 0 adds the
// lanes' sums in lane order (a fixed order: the same bits on every run). Up to 8 chunks (1,024 rows)
// that is the chunks in order; a single chunk's sum is added as it is, which is the CPU spec's order.
// (One thread per column walking all the chunks left a few blocks on the whole GPU, each waiting on
// one load after another: 30 us a call, 4.6 ms of a base bf16 training step on an H100.)
constexpr int kChunkSumColumns = 32;
constexpr int kChunkSumLanes = 8;
constexpr int kChunkSumThreads = kChunkSumColumns * kChunkSumLanes;

template <typename A>
__global__ void __launch_bounds__(kChunkSumThreads)
    add_chunk_sums_kernel(const A* workspace, A* out, std::int64_t chunks, std::int64_t cols) {
  __shared__ A partial[kChunkSumLanes][kChunkSumColumns];
  const int column = static_cast<int>(threadIdx.x) % kChunkSumColumns;
  const int lane = static_cast<int>(threadIdx.x) / kChunkSumColumns;
  const std::int64_t c = static_cast<std::int64_t>(blockIdx.x) * kChunkSumColumns + column;
  if (c < cols && lane < chunks) {
    A sum = workspace[lane * cols + c];
#pragma unroll 8
    for (std::int64_t k = lane + kChunkSumLanes; k < chunks; k += kChunkSumLanes) sum += workspace[k * cols + c];
    partial[lane][column] = sum;
  }
  __syncthreads();
  if (lane == 0 && c < cols) {
    A total = partial[0][column];
    for (int j = 1; j < kChunkSumLanes && j < chunks; ++j) total += partial[j][column];
    out[c] += total;
  }
}

template <typename A>
void add_chunk_sums(const A* workspace, A* out, std::int64_t chunks, std::int64_t cols, Stream stream) {
  const auto blocks = static_cast<unsigned>((cols + kChunkSumColumns - 1) / kChunkSumColumns);
  add_chunk_sums_kernel<A><<<blocks, kChunkSumThreads, 0, stream>>>(workspace, out, chunks, cols);
  DRAGOMAN_CUDA_CHECK(cudaGetLastError());
}

}  // namespace
}  // namespace dragoman::cuda
