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

// replace-unicode-punctuation.perl's one-character substitutions, in its order (every output is
// ASCII, so one pass is the same as the script's sequence of s///g).
const char32_t* replacement(char32_t c) {
  switch (c) {
    case U'，': return U",";
    case U'、': return U",";
    case U'”': return U"\"";
    case U'“': return U"\"";
    case U'∶': return U":";
    case U'：': return U":";
    case U'？': return U"?";
    case U'《': return U"\"";
    case U'》': return U"\"";
    case U'）': return U")";
    case U'！': return U"!";
    case U'（': return U"(";
    case U'；': return U";";
    case U'１': return U"\"";  // sic: the script's line
    case U'」': return U"\"";
    case U'「': return U"\"";
    case U'０': return U"0";
    case U'３': return U"3";
    case U'２': return U"2";
    case U'５': return U"5";
    case U'６': return U"6";
    case U'９': return U"9";
    case U'７': return U"7";
    case U'８': return U"8";
    case U'４': return U"4";
    case U'～': return U"~";
    case U'’': return U"'";
    case U'…': return U"...";
    case U'━': return U"-";
    case U'〈': return U"<";
    case U'〉': return U">";
    case U'【': return U"[";
    case U'】': return U"]";
    case U'％': return U"%";
    case U'„': return U"\"";  // the quote-normalised reference
    default: return nullptr;
  }
}

}  // namespace

std::u32string normalize_t2t_punctuation(std::u32string_view text) {
  std::u32string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char32_t c = text[i];
    if (c == U'。' || c == U'．') {  // s/。 */. /g: the ASCII spaces after it go
      out += U". ";
      while (i + 1 < text.size() && text[i + 1] == U' ') ++i;
    } else if (const char32_t* r = replacement(c)) {
      out += r;
    } else {
      out += c;
    }
  }
  return out;
}

PaperBleu::PaperBleu(PaperBleuOptions options)
    : options_(std::move(options)), moses_(options_.lang), bleu_(multi_bleu_options()) {}

std::string PaperBleu::tokenize(std::string_view line) const {
  std::u32string decoded = utf8::decode(line);
  if (options_.normalize_punctuation) decoded = normalize_t2t_punctuation(decoded);
  std::u32string text = moses_.tokenize(decoded, options_.aggressive_dash_splits, true);
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
                          (options_.normalize_punctuation ? "+norm" : "") + (options_.split_compounds ? "+atat" : "");
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
  return "tokenized BLEU as in the paper: " +
         std::string(options_.normalize_punctuation
                         ? "tensor2tensor's get_ende_bleu.sh (replace-unicode-punctuation, „ as \"), "
                         : "") +
         "Moses tokenizer -l " + options_.lang + (options_.aggressive_dash_splits ? " -a" : "") +
         (options_.split_compounds ? ", ##AT## compound splitting" : "") + ", multi-bleu.perl";
}

}  // namespace dragoman::eval
