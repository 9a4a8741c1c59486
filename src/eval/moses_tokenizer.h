// The Moses tokenizer (tokenizer.perl) as the PyPI package sacremoses 0.1.1 ports it
// (MosesTokenizer.tokenize), re-implemented step for step on UTF-32 text, and the compound
// splitting of tensor2tensor's get_ende_bleu.sh: what the paper's tokenized BLEU was computed on
// (`score-bleu --paper`, eval/paper_bleu.h).
//
// tokenize() applies sacremoses' steps in its order: whitespace runs to one space, ASCII control
// characters removed, strip; a space around every character that is not IsAlnum, whitespace, or one
// of . ' ` , -; (aggressive) "a-b" to "a @-@ b"; runs of dots kept together; commas split off
// except between digits; the language's apostrophe rules (en; fr and it; others: every ' apart);
// a final '.' split off a word unless the word is a nonbreaking prefix of the language (or has a
// '.' and a letter inside, or the next word starts in lower case; "#NUMERIC_ONLY#" prefixes only
// before a number); ".'" at the end split; then XML escapes (& | < > ' " [ ]). Character classes
// and prefixes are sacremoses' own data (eval/moses_data.h). Unknown languages use the English
// prefixes and the language-neutral apostrophe rule, as sacremoses does.
#pragma once

#include <string>
#include <string_view>
#include <unordered_set>

namespace dragoman::eval {

class MosesTokenizer {
 public:
  explicit MosesTokenizer(std::string lang);

  const std::string& lang() const { return lang_; }
  // Whether sacremoses has a nonbreaking prefix list for `lang` (else the English one is used).
  static bool has_prefixes(const std::string& lang);
  // sacremoses' MosesTokenizer(lang).tokenize(text, aggressive_dash_splits, return_str=True, escape)
  // with the tokens joined by single spaces (no leading or trailing space).
  std::u32string tokenize(std::u32string_view text, bool aggressive_dash_splits = false, bool escape = true) const;
  std::string tokenize_utf8(std::string_view text, bool aggressive_dash_splits = false, bool escape = true) const;

 private:
  std::u32string nonbreaking_prefixes(std::u32string_view text) const;

  std::string lang_;
  std::unordered_set<std::u32string> prefixes_;      // nonbreaking everywhere
  std::unordered_set<std::u32string> numeric_only_;  // nonbreaking before a number
};

// perl -ple 's{(\S)-(\S)}{$1 ##AT##-##AT## $2}g' (tensor2tensor's get_ende_bleu.sh, after the
// Stanford NMT group's convention): "rich-text" -> "rich ##AT##-##AT## text"; matches do not
// overlap, so "a-b-c" -> "a ##AT##-##AT## b-c", as in Perl.
std::u32string split_compounds(std::u32string_view text);

}  // namespace dragoman::eval
