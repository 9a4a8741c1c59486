// A fast 64-bit content hash (not cryptographic) for cache keys: derived files such as the encoded
// corpus record the hash of what they were made from and are rebuilt when it changes.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>

namespace dragoman {

class ContentHash {
 public:
  ContentHash& add(std::string_view bytes) {
    add_word(bytes.size());
    std::size_t i = 0;
    for (; i + 8 <= bytes.size(); i += 8) {
      std::uint64_t word;
      std::memcpy(&word, bytes.data() + i, 8);
      add_word(word);
    }
    std::uint64_t tail = 0;
    if (i < bytes.size()) std::memcpy(&tail, bytes.data() + i, bytes.size() - i);  // (an empty view's data may be null)
    add_word(tail);
    return *this;
  }
  ContentHash& add_word(std::uint64_t word) {
    state_ = mix(state_ ^ mix(word + 0x9E3779B97F4A7C15ull));
    return *this;
  }
  std::uint64_t value() const { return mix(state_); }

 private:
  // The splitmix64 finaliser: a bijection with good avalanche.
  static std::uint64_t mix(std::uint64_t x) {
    x ^= x >> 30;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 27;
    x *= 0x94D049BB133111EBull;
    return x ^ (x >> 31);
  }
  std::uint64_t state_ = 0x6A09E667F3BCC908ull;
};

}  // namespace dragoman
