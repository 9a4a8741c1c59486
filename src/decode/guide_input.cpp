// Target prefixes and constraints from text and files (see guide_input.h).
#include "decode/guide_input.h"

#include <algorithm>

#include "base/error.h"
#include "base/utf8.h"

namespace dragoman::decode {

std::vector<std::int32_t> encode_target_phrase(const text::Vocabulary& vocabulary, std::string_view phrase,
                                               const std::string& what) {
  const std::vector<std::int32_t> ids = vocabulary.encode_target(phrase);
  const std::string quoted = what + " \"" + std::string(phrase) + "\": ";
  if (ids.empty()) throw Error(quoted + "no pieces (expected text the output can hold)");
  const text::PieceTable* table = vocabulary.target().table();
  const std::int32_t unk = table != nullptr ? table->unk_id : text::kUnkId;
  if (std::find(ids.begin(), ids.end(), unk) != ids.end()) {
    throw Error(quoted + "the target vocabulary cannot encode it (it holds characters the vocabulary lacks: <unk>)");
  }
  return ids;
}

TargetGuide encode_guide(const text::Vocabulary& vocabulary, std::string_view prefix,
                         const std::vector<std::string>& constraints) {
  TargetGuide guide;
  if (!prefix.empty()) guide.prefix = encode_target_phrase(vocabulary, prefix, "target prefix");
  for (const std::string& phrase : constraints) {
    guide.constraints.push_back(encode_target_phrase(vocabulary, phrase, "constraint"));
  }
  return guide;
}

std::vector<std::string> split_constraints(std::string_view line) {
  std::vector<std::string> phrases;
  if (line.empty()) return phrases;
  std::size_t start = 0;
  while (true) {
    const std::size_t tab = line.find('\t', start);
    phrases.emplace_back(line.substr(start, tab == std::string_view::npos ? std::string_view::npos : tab - start));
    if (tab == std::string_view::npos) return phrases;
    start = tab + 1;
  }
}

GuideReader::GuideReader(const text::Vocabulary& vocabulary, io::LineSource* prefixes, io::LineSource* constraints)
    : vocabulary_(vocabulary), prefixes_(prefixes), constraints_(constraints) {}

std::string GuideReader::line_of(io::LineSource& file, const io::LineSource& input) {
  std::string line;
  if (!file.next(line)) {
    throw_input_error(file.name(), static_cast<std::size_t>(file.line_number() + 1),
                      "the file ended, but " + input.name() + " has a line " + std::to_string(input.line_number()) +
                          " (expected one line for each line of the input)");
  }
  const std::size_t bad = utf8::find_invalid(line);
  if (bad != std::string::npos) {
    throw_input_error(file.name(), static_cast<std::size_t>(file.line_number()),
                      "invalid UTF-8 at byte " + std::to_string(bad + 1) + " of the line (expected UTF-8 text)");
  }
  if (!line.empty() && line.back() == '\r') line.pop_back();
  return line;
}

TargetGuide GuideReader::next(const io::LineSource& input) {
  TargetGuide guide;
  // The files' lines are read (and their errors thrown) first; an encoding error is then named
  // after the file and line it came from.
  const std::string prefix = prefixes_ != nullptr ? line_of(*prefixes_, input) : std::string();
  const std::string constraints = constraints_ != nullptr ? line_of(*constraints_, input) : std::string();
  try {
    if (!prefix.empty()) guide.prefix = encode_target_phrase(vocabulary_, prefix, "target prefix");
  } catch (const Error& e) {
    throw_input_error(prefixes_->name(), static_cast<std::size_t>(prefixes_->line_number()), e.what());
  }
  try {
    for (const std::string& phrase : split_constraints(constraints)) {
      if (phrase.empty()) throw Error("an empty constraint (expected phrases separated by single tabs)");
      guide.constraints.push_back(encode_target_phrase(vocabulary_, phrase, "constraint"));
    }
  } catch (const Error& e) {
    throw_input_error(constraints_->name(), static_cast<std::size_t>(constraints_->line_number()), e.what());
  }
  return guide;
}

void GuideReader::finish(const io::LineSource& input) {
  for (io::LineSource* file : {prefixes_, constraints_}) {
    std::string line;
    if (file != nullptr && file->next(line)) {
      throw_input_error(file->name(), static_cast<std::size_t>(file->line_number()),
                        "a line more than " + input.name() + " has (" + std::to_string(input.line_number()) +
                            " lines; expected one line for each line of the input)");
    }
  }
}

}  // namespace dragoman::decode
