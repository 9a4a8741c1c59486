// Token embeddings on CUDA (see embedding.h). Compiled without FMA contraction (src/CMakeLists.txt),
// so scale * e + p and dtable += scale * g round as on the CPU.
#include "kernels/embedding.h"

#include <cstdint>
#include <cub/device/device_radix_sort.cuh>
#include <string>

#include "base/error.h"
#include "device/cuda/check.h"
#include "kernels/cuda/launch.cuh"

namespace dragoman::cuda {
namespace {

using launch::first_index;
using launch::grid_stride;

constexpr std::size_t kAlign = 256;  // each workspace array starts on a 256-byte boundary
constexpr unsigned kSegmentThreads = 128;

std::size_t aligned(std::size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

// The key bits that distinguish ids below `vocab` (at least 1).
int id_bits(std::int64_t vocab) {
  int bits = 1;
  while (bits < 32 && (std::int64_t{1} << bits) < vocab) ++bits;
  return bits;
}

// The workspace's arrays: sorted ids, row numbers (0, 1, ...), rows sorted by id, CUB's storage.
struct Workspace {
  std::uint32_t* sorted_ids;
  std::int32_t* rows_in;
  std::int32_t* sorted_rows;
  void* cub_storage;
  std::size_t cub_bytes;
};

std::size_t cub_bytes(std::int64_t rows, std::int64_t vocab) {
  std::size_t bytes = 0;
  DRAGOMAN_CUDA_CHECK(
      cub::DeviceRadixSort::SortPairs(nullptr, bytes, static_cast<const std::uint32_t*>(nullptr),
                                      static_cast<std::uint32_t*>(nullptr), static_cast<const std::int32_t*>(nullptr),
                                      static_cast<std::int32_t*>(nullptr), static_cast<int>(rows), 0, id_bits(vocab)));
  return bytes;
}

Workspace carve(void* workspace, std::int64_t rows, std::int64_t vocab) {
  const std::size_t array = aligned(static_cast<std::size_t>(rows) * sizeof(std::int32_t));
  // The first 256-byte boundary in the workspace (the size has kAlign bytes of slack for it).
  char* base = reinterpret_cast<char*>(aligned(reinterpret_cast<std::uintptr_t>(workspace)));
  return {reinterpret_cast<std::uint32_t*>(base), reinterpret_cast<std::int32_t*>(base + array),
          reinterpret_cast<std::int32_t*>(base + 2 * array), base + 3 * array, cub_bytes(rows, vocab)};
}

template <typename T>
__global__ void embedding_forward_kernel(const std::int32_t* ids, const T* table, const T* positions, T* out,
                                         std::int64_t rows, std::int64_t length, std::int64_t position_offset,
                                         std::int64_t d, acc_t<T> s) {
  const std::int64_t n = rows * d;
  for (std::int64_t i = first_index(); i < n; i += grid_stride()) {
    const std::int64_t r = i / d, c = i % d;
    const acc_t<T> e = load(table[static_cast<std::int64_t>(ids[r]) * d + c]);
    if (positions != nullptr) {
      out[i] = store<T>(s * e + load(positions[(position_offset + r % length) * d + c]));
    } else {
      out[i] = store<T>(s * e);
    }
  }
}

__global__ void iota_kernel(std::int32_t* out, std::int64_t n) {
  for (std::int64_t i = first_index(); i < n; i += grid_stride()) out[i] = static_cast<std::int32_t>(i);
}

constexpr int kRowsInFlight = 8;  // rows of a run whose loads a thread issues before adding them

// One block per run of equal sorted ids and kSegmentThreads columns (blockIdx.y; blocks whose first
// position is inside a run skip it): each thread owns one column of dtable[id] and adds the run's
// rows in order (the stable sort kept them in row order), exactly the CPU spec's sequence of
// additions. A frequent token's run (every sentence's BOS, the full stop) is as long as the batch
// has sentences: its loads go out kRowsInFlight at a time, and its columns spread over d /
// kSegmentThreads blocks (one block walking all of them took most of a millisecond a step).
template <typename T>
__global__ void __launch_bounds__(kSegmentThreads)
    embedding_table_grad_kernel(const std::uint32_t* sorted_ids, const std::int32_t* sorted_rows, const T* dout,
                                acc_t<T>* dtable, std::int64_t rows, std::int64_t d, acc_t<T> s,
                                std::int64_t padding_id) {
  const std::int64_t c = static_cast<std::int64_t>(blockIdx.y) * kSegmentThreads + threadIdx.x;
  for (std::int64_t i = blockIdx.x; i < rows; i += gridDim.x) {
    const std::uint32_t id = sorted_ids[i];
    if (i > 0 && sorted_ids[i - 1] == id) continue;
    std::int64_t end = i + 1;
    while (end < rows && sorted_ids[end] == id) ++end;
    if (c >= d || static_cast<std::int64_t>(id) == padding_id) continue;
    acc_t<T>* e = dtable + static_cast<std::int64_t>(id) * d;
    acc_t<T> sum = e[c];
    std::int64_t k = i;
    for (; k + kRowsInFlight <= end; k += kRowsInFlight) {
      acc_t<T> g[kRowsInFlight];
#pragma unroll
      for (int j = 0; j < kRowsInFlight; ++j) g[j] = load(dout[static_cast<std::int64_t>(sorted_rows[k + j]) * d + c]);
#pragma unroll
      for (int j = 0; j < kRowsInFlight; ++j) sum += s * g[j];
    }
    for (; k < end; ++k) sum += s * load(dout[static_cast<std::int64_t>(sorted_rows[k]) * d + c]);
    e[c] = sum;
  }
}

// dpositions[position_offset + l, c] += dout[l, c] + dout[length + l, c] + ... (rows in order).
template <typename T>
__global__ void embedding_positions_grad_kernel(const T* dout, acc_t<T>* dpositions, std::int64_t rows,
                                                std::int64_t length, std::int64_t position_offset, std::int64_t d) {
  const std::int64_t n = length * d;
  for (std::int64_t i = first_index(); i < n; i += grid_stride()) {
    const std::int64_t l = i / d, c = i % d;
    acc_t<T>* p = dpositions + (position_offset + l) * d + c;
    acc_t<T> sum = *p;
    std::int64_t r = l;
    for (; r + (kRowsInFlight - 1) * length < rows; r += kRowsInFlight * length) {  // loads in flight, adds in order
      acc_t<T> g[kRowsInFlight];
#pragma unroll
      for (int j = 0; j < kRowsInFlight; ++j) g[j] = load(dout[(r + j * length) * d + c]);
#pragma unroll
      for (int j = 0; j < kRowsInFlight; ++j) sum += g[j];
    }
    for (; r < rows; r += length) sum += load(dout[r * d + c]);
    *p = sum;
  }
}

}  // namespace

template <typename T>
void embedding_forward(const std::int32_t* ids, const T* table, const T* positions, T* out, std::int64_t rows,
                       std::int64_t length, std::int64_t position_offset, std::int64_t d, double scale, Stream stream) {
  if (rows <= 0 || d <= 0) return;
  embedding_forward_kernel<T><<<launch::blocks_for(rows * d), launch::kThreads, 0, stream>>>(
      ids, table, positions, out, rows, length, position_offset, d, static_cast<acc_t<T>>(scale));
  DRAGOMAN_CUDA_CHECK(cudaGetLastError());
}

std::size_t embedding_backward_workspace(std::int64_t rows, std::int64_t vocab) {
  return kAlign + 3 * aligned(static_cast<std::size_t>(rows) * sizeof(std::int32_t)) + cub_bytes(rows, vocab);
}

template <typename T>
void embedding_backward(const std::int32_t* ids, const T* dout, acc_t<T>* dtable, acc_t<T>* dpositions,
                        std::int64_t rows, std::int64_t length, std::int64_t position_offset, std::int64_t d,
                        double scale, std::int64_t vocab, void* workspace, Stream stream, std::int32_t padding_id) {
  if (rows <= 0 || d <= 0) return;
  const acc_t<T> s = static_cast<acc_t<T>>(scale);
  Workspace w = carve(workspace, rows, vocab);
  iota_kernel<<<launch::blocks_for(rows), launch::kThreads, 0, stream>>>(w.rows_in, rows);
  DRAGOMAN_CUDA_CHECK(cudaGetLastError());
  DRAGOMAN_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(
      w.cub_storage, w.cub_bytes, reinterpret_cast<const std::uint32_t*>(ids), w.sorted_ids, w.rows_in, w.sorted_rows,
      static_cast<int>(rows), 0, id_bits(vocab), stream));
  const std::int64_t column_blocks = (d + kSegmentThreads - 1) / kSegmentThreads;
  if (column_blocks > 65535)
    throw Error("cuda::embedding_backward: width " + std::to_string(d) + " is above 8,388,480");
  const dim3 blocks(static_cast<unsigned>(rows < 65535 ? rows : 65535), static_cast<unsigned>(column_blocks));
  embedding_table_grad_kernel<T>
      <<<blocks, kSegmentThreads, 0, stream>>>(w.sorted_ids, w.sorted_rows, dout, dtable, rows, d, s, padding_id);
  DRAGOMAN_CUDA_CHECK(cudaGetLastError());
  if (dpositions != nullptr) {
    embedding_positions_grad_kernel<T><<<launch::blocks_for(length * d), launch::kThreads, 0, stream>>>(
        dout, dpositions, rows, length, position_offset, d);
    DRAGOMAN_CUDA_CHECK(cudaGetLastError());
  }
}

#define DRAGOMAN_INSTANTIATE(T)                                                                                        \
  template void embedding_forward<T>(const std::int32_t*, const T*, const T*, T*, std::int64_t, std::int64_t,          \
                                     std::int64_t, std::int64_t, double, Stream);                                      \
  template void embedding_backward<T>(const std::int32_t*, const T*, acc_t<T>*, acc_t<T>*, std::int64_t, std::int64_t, \
                                      std::int64_t, std::int64_t, double, std::int64_t, void*, Stream, std::int32_t);
DRAGOMAN_INSTANTIATE(float)
DRAGOMAN_INSTANTIATE(double)
DRAGOMAN_INSTANTIATE(bf16)
DRAGOMAN_INSTANTIATE(f16)
#undef DRAGOMAN_INSTANTIATE

}  // namespace dragoman::cuda
