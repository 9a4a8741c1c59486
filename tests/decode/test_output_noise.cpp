// Back-translation's noise: words move fewer than 3 places, about 10 % are deleted and 10 % blanked,
// a line's noise is a function of the seed, its source and the hypothesis's rank, and no noise
// leaves the words as they were.
#include <catch2/catch.hpp>

#include <map>
#include <sstream>

#include "decode/output_noise.h"

namespace dragoman::decode {
namespace {

std::vector<std::string> words_of(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

}  // namespace

TEST_CASE("output noise: moves, deletions and blanks at Edunov et al.'s rates", "[decode]") {
  std::string text;
  for (int i = 0; i < 40; ++i) text += "w" + std::to_string(i) + " ";
  NoiseOptions shuffle_only;
  shuffle_only.delete_probability = shuffle_only.blank_probability = 0;
  std::int64_t moved = 0, words = 0, deleted = 0, blanked = 0;
  NoiseOptions edunov;
  for (std::uint64_t key = 0; key < 500; ++key) {
    const std::vector<std::string> out = words_of(add_noise(text, shuffle_only, key, 0));
    REQUIRE(out.size() == 40);
    for (std::size_t j = 0; j < out.size(); ++j) {
      const int from = std::stoi(out[j].substr(1));
      CHECK(std::abs(from - static_cast<int>(j)) < 3);
      moved += from != static_cast<int>(j);
    }
    const std::vector<std::string> noised = words_of(add_noise(text, edunov, key, 0));
    deleted += 40 - static_cast<std::int64_t>(noised.size());
    for (const std::string& w : noised) blanked += w == "<BLANK>";
    words += 40;
  }
  CHECK(moved > words / 4);  // the shuffle moves words
  // 20,000 words: the binomial's standard deviation is 0.002 of them.
  CHECK(static_cast<double>(deleted) / static_cast<double>(words) == Approx(0.1).margin(0.01));
  CHECK(static_cast<double>(blanked) / static_cast<double>(words) == Approx(0.09).margin(0.01));  // 0.1 of the 0.9 kept
}

TEST_CASE("output noise: reproducible, and without noise the words as they were", "[decode]") {
  const std::string text = "das ist ein kleiner Test mit einigen Wörtern darin";
  NoiseOptions o;
  CHECK(add_noise(text, o, 7, 0) == add_noise(text, o, 7, 0));
  CHECK(add_noise(text, o, 7, 0) != add_noise(text, o, 7, 1));
  CHECK(add_noise(text, o, 7, 0) != add_noise(text, o, 8, 0));
  o.seed = 2;
  CHECK(add_noise(text, o, 7, 0) != add_noise(text, NoiseOptions{}, 7, 0));
  NoiseOptions none;
  none.delete_probability = none.blank_probability = 0;
  none.shuffle_distance = 1;  // position + U[0, 1): the order kept
  CHECK(add_noise("  a  b c ", none, 3, 0) == "a b c");
  CHECK(add_noise("", o, 3, 0).empty());
}

}  // namespace dragoman::decode
