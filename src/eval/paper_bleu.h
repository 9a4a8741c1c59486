// The paper's BLEU: tokenized BLEU as "Attention Is All You Need" (and GNMT, ConvS2S, fairseq's and
// tensor2tensor's WMT14 scripts) reported it, beside sacreBLEU's detokenized number. For German,
// tensor2tensor's get_ende_bleu.sh step for step: its punctuation normalisation (Moses'
// replace-unicode-punctuation.perl) and the paper's quote-normalised reference („ as ") on both
// sides; then hypotheses and references are tokenized with the Moses tokenizer for the target
// language (eval/moses_tokenizer.h, exact against sacremoses), compounds are split ("a-b" ->
// "a ##AT##-##AT## b"; the caller chooses both), and BLEU is computed on those tokens as multi-bleu.perl does:
// no further tokenization, case-sensitive, no smoothing (sacreBLEU with --tokenize none --smooth-method none). On WMT14
// English-German it is typically 0.5-1 point above sacreBLEU's 13a number (docs/WMT14.md).
#pragma once

#include <string>

#include "eval/bleu.h"
#include "eval/metric.h"
#include "eval/moses_tokenizer.h"

namespace dragoman::eval {

struct PaperBleuOptions {
  std::string lang = "en";              // the Moses tokenizer's language (the target language)
  bool split_compounds = true;          // the ##AT## compound splitting (score-bleu: German only by default)
  bool aggressive_dash_splits = false;  // Moses' -a ("a-b" -> "a @-@ b") before it
  // get_ende_bleu.sh's normalisation before the tokenizer (score-bleu: German only by default).
  bool normalize_punctuation = false;
};

// tensor2tensor's normalisation in front of the Moses tokenizer: Moses'
// replace-unicode-punctuation.perl as get_ende_bleu.sh runs it (byte-wise Perl: "。 *" takes
// the ASCII spaces after it, fullwidth "１" becomes '"', as the script has it), then „ as " (the
// quote-normalised newstest2014 reference the paper's numbers were computed against, tensor2tensor
// issue 317), on hypotheses and references alike.
std::u32string normalize_t2t_punctuation(std::u32string_view text);

class PaperBleu final : public Metric {
 public:
  explicit PaperBleu(PaperBleuOptions options);

  std::string key() const override { return "BLEU"; }
  std::size_t stats_size() const override { return bleu_.stats_size(); }
  void segment_stats(std::string_view hyp, const std::vector<std::string_view>& refs, std::int64_t* out) const override;
  // BLEU's result with "tok:moses-LANG" (+"-a" for aggressive dashes, "+norm" for the
  // normalisation, "+atat" for compound splitting) and "smooth:none" in the signature.
  MetricResult result(const std::int64_t* stats, std::size_t nrefs) const override;

  // One line as the metric sees it: normalised, Moses-tokenized, compounds split.
  std::string tokenize(std::string_view line) const;
  // "tokenized BLEU as in the paper: Moses tokenizer -l de, ##AT## compound splitting, multi-bleu.perl"
  std::string description() const;

 private:
  PaperBleuOptions options_;
  MosesTokenizer moses_;
  Bleu bleu_;
};

}  // namespace dragoman::eval
