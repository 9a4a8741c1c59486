// Vocabulary shortlists (docs/DECODING.md, "Vocabulary shortlists"): for each source piece, the
// target pieces that translate it, and the pieces every output may hold (the most frequent). A
// batch's search computes the output layer over the union of its sources' lists alone (Marian's
// lexical shortlists, CTranslate2's vocabulary map): the output product and the softmax shrink from
// the whole target vocabulary to a few thousand pieces.
//
// The file is text, one line per list, CTranslate2's vocabulary-map format for single pieces:
//   <TAB>piece piece ...           the pieces every batch keeps (an empty source column)
//   SOURCE<TAB>piece piece ...     the target pieces SOURCE may translate to
// Pieces are the vocabulary's own strings, separated by one space. Lines that start with '#' and
// hold no tab are comments; empty lines are skipped. A source piece given twice gets both lists.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "text/vocabulary.h"

namespace dragoman::decode {

class Shortlist {
 public:
  // Reads `path` against the model's vocabulary. Errors name the file and line: a line without a
  // tab, a source key of several pieces, a piece the vocabulary lacks, a file without lists.
  static Shortlist load(const std::string& path, const text::Vocabulary& vocabulary);
  // From lists of ids: `always` and, for source id i < by_source.size(), by_source[i] (tests).
  Shortlist(std::int64_t target_size, std::vector<std::int32_t> always,
            std::vector<std::vector<std::int32_t>> by_source);

  // The output pieces of a batch, ascending and distinct: `keep` (special ids, a guide's tokens),
  // the pieces every batch keeps, and the list of every source piece of `sources`.
  std::vector<std::int32_t> pieces(const std::vector<std::vector<std::int32_t>>& sources,
                                   const std::vector<std::int32_t>& keep) const;
  std::int64_t target_size() const { return target_size_; }
  std::size_t always_size() const { return always_.size(); }
  std::size_t source_pieces() const;  // with a list of their own

 private:
  std::int64_t target_size_ = 0;
  std::vector<std::int32_t> always_;
  std::vector<std::vector<std::int32_t>> by_source_;  // by source id
};

}  // namespace dragoman::decode
