// Noised translations for back-translation (translate --noise): Edunov et al. 2018's "beam +
// noise", the noise of Lample et al. 2018 (fairseq's UnsupervisedMTNoising) applied to an output's
// whitespace-separated words: a random permutation that moves no word 3 or more places (each word's
// position plus a uniform number in [0, 3), sorted), then each word deleted with probability 0.1,
// then each word left replaced by a filler with probability 0.1.
//
// Reproducible as sampling is (decode/sampling.h): every draw is a pure function of the seed, the
// source's tokens, the hypothesis's rank and the word's position (Philox, its own purpose), so a
// line's noise does not depend on the thread count or the batch it lands in.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dragoman::decode {

struct NoiseOptions {
  bool enabled = false;
  double delete_probability = 0.1;
  double blank_probability = 0.1;
  double shuffle_distance = 3;  // a word moves fewer places than this
  std::string blank = "<BLANK>";
  std::uint64_t seed = 1;
};

// `text` with noise, for the sentence whose random stream is `key` (sampling_key of its source)
// and its hypothesis `rank`. Words are separated by single spaces in the result.
std::string add_noise(std::string_view text, const NoiseOptions& options, std::uint64_t key, std::int64_t rank);

}  // namespace dragoman::decode
