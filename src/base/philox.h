// Counter-based random numbers: Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as
// 1, 2, 3", SC 2011). A random value is a pure function of (seed, rng_stream, index): no state, so a
// dropout mask is the same whatever the thread count or device, and is regenerated exactly after a
// resume. Header-only and usable in CUDA kernels (DRAGOMAN_HOST_DEVICE), so the CUDA twin of every
// random kernel computes the same bits as the CPU spec.
//
// Layout: key = seed (low word, high word); counter = (index / 4 low, index / 4 high, rng_stream low,
// rng_stream high); element `index` is word index % 4 of that block. (Philox's "stream" is called
// rng_stream everywhere, so that "stream" means a CUDA stream.)
#pragma once

#include <cstdint>

#include "base/host_device.h"

namespace dragoman::philox {

struct Block {
  std::uint32_t v[4];
};

// The Philox4x32-10 bijection of `counter` under `key`.
DRAGOMAN_HOST_DEVICE inline Block philox4x32_10(Block counter, std::uint32_t key0, std::uint32_t key1) {
  constexpr std::uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;  // round multipliers
  constexpr std::uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;  // key schedule (golden ratio, sqrt(3)-1)
  std::uint32_t* c = counter.v;
  for (int round = 0; round < 10; ++round) {
    const std::uint64_t p0 = static_cast<std::uint64_t>(kM0) * c[0];
    const std::uint64_t p1 = static_cast<std::uint64_t>(kM1) * c[2];
    const std::uint32_t c1 = c[1], c3 = c[3];
    c[0] = static_cast<std::uint32_t>(p1 >> 32) ^ c1 ^ key0;
    c[1] = static_cast<std::uint32_t>(p1);
    c[2] = static_cast<std::uint32_t>(p0 >> 32) ^ c3 ^ key1;
    c[3] = static_cast<std::uint32_t>(p0);
    key0 += kW0;
    key1 += kW1;
  }
  return counter;
}

// The random bits of elements 4 * block .. 4 * block + 3 of `rng_stream` under `seed` (one Philox call
// for four elements: loops over many elements should take them four at a time).
DRAGOMAN_HOST_DEVICE inline Block block_bits(std::uint64_t seed, std::uint64_t rng_stream, std::uint64_t block) {
  return philox4x32_10({{static_cast<std::uint32_t>(block), static_cast<std::uint32_t>(block >> 32),
                         static_cast<std::uint32_t>(rng_stream), static_cast<std::uint32_t>(rng_stream >> 32)}},
                       static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32));
}

// 32 random bits for element `index` of `rng_stream` under `seed`.
DRAGOMAN_HOST_DEVICE inline std::uint32_t bits(std::uint64_t seed, std::uint64_t rng_stream, std::uint64_t index) {
  return block_bits(seed, rng_stream, index >> 2).v[index & 3];
}

// What random numbers are for: the top 4 bits of every rng_stream, so that streams of two purposes
// never meet, whatever their other 60 bits. Within a purpose:
//   kInit     parameter p's initial values: rng_stream p (docs/MODEL.md, "Initialisation")
//   kDropout  dropout site k of batch b on data-parallel rank r: bits 48-59 r, 24-47 b, 0-23 k
//   kData     the batcher's length ties and shuffles (data/batching.cpp), per epoch
//   kSample   sampled decoding (decode/sampling.h): a sentence's stream from its source's hash
//   kNoise    translate --noise (decode/output_noise.h): a sentence's stream from its source's hash
// The purpose values are fixed forever: checkpoints resume with the same random numbers.
enum class Purpose : std::uint64_t { kInit = 0x0, kDropout = 0x1, kSample = 0x5, kNoise = 0x6, kData = 0xB };

constexpr int kPurposeShift = 60;
constexpr std::uint64_t kPurposeMask = std::uint64_t{0xF} << kPurposeShift;

// The rng_stream `value` of `purpose` (value < 2^60).
DRAGOMAN_HOST_DEVICE constexpr std::uint64_t purpose_stream(Purpose purpose, std::uint64_t value) {
  return (static_cast<std::uint64_t>(purpose) << kPurposeShift) | (value & ~kPurposeMask);
}

// The float uniform in [0, 1) of 32 random bits (24 of them used: every value exactly representable).
DRAGOMAN_HOST_DEVICE inline float to_uniform(std::uint32_t bits) {
  return static_cast<float>(bits >> 8) * (1.0f / 16777216.0f);
}

// A float uniform in [0, 1) with 24 random bits (every value exactly representable).
DRAGOMAN_HOST_DEVICE inline float uniform(std::uint64_t seed, std::uint64_t rng_stream, std::uint64_t index) {
  return to_uniform(bits(seed, rng_stream, index));
}

}  // namespace dragoman::philox
