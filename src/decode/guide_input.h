// Target prefixes and constraints as users give them (docs/DECODING.md, "Target prefixes" and
// "Lexical constraints"): text encoded with the vocabulary's target side into a TargetGuide
// (constraints.h), and translate's --target-prefix and --constraints files, one line per input
// line, read in lockstep with the input.
//
// A prefix line is the text the output starts with (empty: none). A constraints line holds the
// phrases the output must contain, separated by tabs (empty: none). A phrase the vocabulary turns
// into no pieces, or into a piece it does not know (<unk>: characters outside the vocabulary),
// cannot be produced and is an error naming the file, the line and the phrase.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "decode/constraints.h"
#include "io/line_reader.h"
#include "text/vocabulary.h"

namespace dragoman::decode {

// A phrase's target ids; throws Error("<what> \"phrase\": ...") when it cannot be an output's.
std::vector<std::int32_t> encode_target_phrase(const text::Vocabulary& vocabulary, std::string_view phrase,
                                               const std::string& what);

// A guide from a prefix's text and constraints' texts (each through encode_target_phrase; an empty
// prefix is none, an empty constraint an error).
TargetGuide encode_guide(const text::Vocabulary& vocabulary, std::string_view prefix,
                         const std::vector<std::string>& constraints);

// A constraints line's phrases: split at tabs; an empty line has none.
std::vector<std::string> split_constraints(std::string_view line);

// translate's guide files, read one line per input line.
class GuideReader {
 public:
  // Either file may be absent (nullptr); both must outlive the reader, as the vocabulary.
  GuideReader(const text::Vocabulary& vocabulary, io::LineSource* prefixes, io::LineSource* constraints);

  bool active() const { return prefixes_ != nullptr || constraints_ != nullptr; }
  // The guide of the input's next line (line `input_line` of `input`): the next line of each file,
  // checked to be UTF-8 and encoded. A file that has ended is an error naming it and the input.
  TargetGuide next(const io::LineSource& input);
  // At the end of the input: a file with more lines is an error naming it.
  void finish(const io::LineSource& input);

 private:
  std::string line_of(io::LineSource& file, const io::LineSource& input);

  const text::Vocabulary& vocabulary_;
  io::LineSource* prefixes_;
  io::LineSource* constraints_;
};

}  // namespace dragoman::decode
