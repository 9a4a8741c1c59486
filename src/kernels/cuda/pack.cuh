// 16-byte packs of T for the memory-bound CUDA kernels (private to kernels/cuda/*.cu): the unit of
// their loads and stores where every pointer is 16-byte aligned (8 bf16 or f16, 4 floats, 2 doubles
// a load instruction: a warp then moves 512 bytes an instruction instead of 64, which is what keeps
// enough bytes in flight to use the memory's bandwidth). The per-element arithmetic is the same
// either way, so are the bits.
#pragma once

#include <cstddef>
#include <cstdint>

namespace dragoman::cuda {

template <typename T>
struct alignas(16) Pack {
  static constexpr int kSize = 16 / static_cast<int>(sizeof(T));
  T v[kSize];
};

inline bool aligned(const void* p, std::size_t alignment) {
  return reinterpret_cast<std::uintptr_t>(p) % alignment == 0;
}

// Whether p may be read or written as Pack<T>s.
template <typename T>
bool packable(const void* p) {
  return aligned(p, alignof(Pack<T>));
}

}  // namespace dragoman::cuda
