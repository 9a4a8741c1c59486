// The data of the Moses tokenizer (eval/moses_tokenizer.h): character classes and nonbreaking
// prefixes, generated from the PyPI package sacremoses by scripts/gen-moses-data.py into
// third_party/moses/moses_data.cpp (LGPL-2.1: third_party/moses/README.md says where it comes from).
#pragma once

#include <cstddef>

namespace dragoman::eval::moses {

struct CodeRange {
  char32_t first, last;  // inclusive
};

// Perl's IsN, IsAlnum (with the Indic viramas and nuktas), IsAlpha (likewise) and IsLower as
// sacremoses has them (an older Unicode: no CJK ideographs in IsAlpha, '\n' in IsN).
extern const CodeRange kIsN[], kIsAlnum[], kIsAlpha[], kIsLower[];
extern const std::size_t kIsNSize, kIsAlnumSize, kIsAlphaSize, kIsLowerSize;

struct PrefixList {
  const char* lang;   // "en", "de", ...
  const char* lines;  // the prefixes, one per line ("No #NUMERIC_ONLY#": only before a number)
};
extern const PrefixList kPrefixes[];
extern const std::size_t kPrefixesSize;

}  // namespace dragoman::eval::moses
