// Lexical translation probabilities p(target piece | source piece) of an encoded parallel corpus,
// by IBM model 1 (Brown et al. 1993) with a NULL source word, trained by expectation maximisation
// from uniform probabilities: what vocabulary shortlists are built from (dragoman build-shortlist,
// decode/shortlist.h). Model 1's table is the lexical part of every word-alignment model (fast_align
// adds a preference for the diagonal, which moves alignments but little of the table), and needs
// nothing outside this binary. The E step runs over the pairs in `threads` chunks whose counts are
// summed in chunk order: the same corpus and thread count give the same table, bit for bit (other
// thread counts sum in another order: the last bits of the probabilities may differ).
#pragma once

#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "data/corpus.h"

namespace dragoman::data {

struct LexicalTableOptions {
  int iterations = 5;  // EM iterations
  int threads = 1;     // at most 8 are used (each holds counts as large as the table)
  std::int64_t max_pairs = 0;  // the first this many pairs (0: all)
};

struct LexicalTable {
  // For each source id: (target id, p(target | source)), most probable first (equal: lower id).
  std::vector<std::vector<std::pair<std::int32_t, float>>> by_source;
  // How often each target id occurs in the corpus's targets.
  std::vector<std::int64_t> target_counts;
  std::int64_t pairs = 0;          // used
  std::int64_t cooccurrences = 0;  // distinct (source, target) pairs seen in a sentence pair
};

// `progress` (may be empty) is called after each iteration with its number (1-based).
LexicalTable train_ibm_model1(const EncodedCorpus& corpus, std::int64_t source_vocab, std::int64_t target_vocab,
                              const LexicalTableOptions& options,
                              const std::function<void(int iteration)>& progress = {});

}  // namespace dragoman::data
