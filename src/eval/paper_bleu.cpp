// The paper's tokenized BLEU (see paper_bleu.h): Moses tokenization and compound splitting in front
// of BLEU on whitespace tokens without smoothing.
#include "eval/paper_bleu.h"

#include <utility>

#include "base/utf8.h"

namespace dragoman::eval {
namespace {

BleuOptions multi_bleu_options() {
  BleuOptions o;
  o.tokenizer = Tokenizer::kNone;
  o.smoothing = Smoothing::kNone;
  return o;
}

}  // namespace

PaperBleu::PaperBleu(PaperBleuOptions options)
    : options_(std::move(options)), moses_(options_.lang), bleu_(multi_bleu_options()) {}

std::string PaperBleu::tokenize(std::string_view line) const {
  std::u32string text = moses_.tokenize(utf8::decode(line), options_.aggressive_dash_splits, true);
  if (options_.split_compounds) text = split_compounds(text);
  return utf8::encode(text);
}

void PaperBleu::segment_stats(std::string_view hyp, const std::vector<std::string_view>& refs,
                              std::int64_t* out) const {
  const std::string tokenized_hyp = tokenize(hyp);
  std::vector<std::string> tokenized_refs;
  tokenized_refs.reserve(refs.size());
  for (const std::string_view ref : refs) tokenized_refs.push_back(tokenize(ref));
  const std::vector<std::string_view> views(tokenized_refs.begin(), tokenized_refs.end());
  bleu_.segment_stats(tokenized_hyp, views, out);
}

MetricResult PaperBleu::result(const std::int64_t* stats, std::size_t nrefs) const {
  MetricResult r = bleu_.result(stats, nrefs);
  const std::string tok = "moses-" + options_.lang + (options_.aggressive_dash_splits ? "-a" : "") +
                          (options_.split_compounds ? "+atat" : "");
  // Not sacreBLEU's computation: the tokenizer and multi-bleu.perl's BLEU, so the signature names
  // that, not sacreBLEU's version.
  for (std::string* signature : {&r.signature, &r.signature_short}) {
    const std::size_t at = signature->find("tok:none");
    if (at != std::string::npos) signature->replace(at, 8, "tok:" + tok);
    const std::size_t version = signature->find(kSignatureVersion);
    if (version != std::string::npos) {
      signature->replace(version, std::string(kSignatureVersion).size(), "multi-bleu+dragoman");
    }
  }
  r.details["description"] = description();
  return r;
}

std::string PaperBleu::description() const {
  return "tokenized BLEU as in the paper: Moses tokenizer -l " + options_.lang +
         (options_.aggressive_dash_splits ? " -a" : "") +
         (options_.split_compounds ? ", ##AT## compound splitting" : "") + ", multi-bleu.perl";
}

}  // namespace dragoman::eval
