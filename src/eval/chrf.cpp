// chrF and chrF++ as sacreBLEU computes them (see chrf.h).
#include "eval/chrf.h"

#include "base/error.h"
#include "base/utf8.h"
#include "eval/ngrams.h"
#include "text/unicode.h"

namespace dragoman::eval {
namespace {

// Python's string.punctuation, which sacreBLEU's chrF++ word splitting uses.
bool is_ascii_punctuation(char32_t c) {
  return (c >= 0x21 && c <= 0x2F) || (c >= 0x3A && c <= 0x40) || (c >= 0x5B && c <= 0x60) || (c >= 0x7B && c <= 0x7E);
}

// sacreBLEU's CHRF._remove_punctuation: split on whitespace, then split one punctuation
// character off the end of a word, or else off its start ("(hi)" -> "(hi", ")").
std::vector<std::u32string_view> words_without_edge_punctuation(std::u32string_view text) {
  std::vector<std::u32string_view> words;
  text::unicode::split(text, [&](std::u32string_view w) {
    if (w.size() == 1) {
      words.push_back(w);
    } else if (is_ascii_punctuation(w.back())) {
      words.push_back(w.substr(0, w.size() - 1));
      words.push_back(w.substr(w.size() - 1));
    } else if (is_ascii_punctuation(w.front())) {
      words.push_back(w.substr(0, 1));
      words.push_back(w.substr(1));
    } else {
      words.push_back(w);
    }
  });
  return words;
}

// The preprocessed line: the command line's rstrip, then optional lowercasing.
std::u32string preprocess(std::string_view line, bool lowercase) {
  const std::u32string text = utf8::decode(line);
  const std::u32string_view view = text::unicode::rstrip(text);
  return lowercase ? text::unicode::to_lower(view) : std::u32string(view);
}

std::u32string remove_whitespace(std::u32string_view text) {
  std::u32string out;
  out.reserve(text.size());
  text::unicode::split(text, [&](std::u32string_view piece) { out.append(piece); });
  return out;
}

}  // namespace

Chrf::Chrf(ChrfOptions options) : options_(options) {
  if (options_.char_order < 0 || options_.word_order < 0 || order() < 1) {
    throw Error("chrF: character and word orders must be >= 0 and not both 0");
  }
  if (options_.beta < 0) throw Error("chrF: beta must be >= 0");
}

void Chrf::segment_stats(std::string_view hyp, const std::vector<std::string_view>& refs, std::int64_t* out) const {
  const auto char_order = static_cast<std::size_t>(options_.char_order);
  const auto word_order = static_cast<std::size_t>(options_.word_order);
  std::vector<std::u32string> text;  // hypothesis first, then references
  text.push_back(preprocess(hyp, options_.lowercase));
  for (std::string_view ref : refs) text.push_back(preprocess(ref, options_.lowercase));

  std::vector<std::u32string> chars(text.size());
  for (std::size_t s = 0; s < text.size(); ++s) {
    chars[s] = options_.whitespace ? text[s] : remove_whitespace(text[s]);
  }
  std::vector<std::u32string> word_ids;
  if (word_order > 0) {
    std::vector<std::vector<std::u32string_view>> words;
    for (const auto& t : text) words.push_back(words_without_edge_punctuation(t));
    word_ids = intern_tokens(words);
  }

  // counts[k][s]: the n-gram counts of order k (characters first, then words) of sentence s.
  const std::size_t orders = char_order + word_order;
  std::vector<std::vector<NgramCounts>> counts(orders);
  const std::vector<std::u32string_view> char_seqs(chars.begin(), chars.end());
  const std::vector<std::u32string_view> word_seqs(word_ids.begin(), word_ids.end());
  for (std::size_t k = 0; k < orders; ++k) {
    std::vector<std::vector<NgramKey>> keys = k < char_order ? ngram_keys(char_seqs, k + 1, kCodePointBits)
                                                             : ngram_keys(word_seqs, k - char_order + 1, kTokenIdBits);
    for (auto& sentence_keys : keys) counts[k].push_back(count_keys(std::move(sentence_keys)));
  }

  std::vector<std::int64_t> stats(3 * orders);
  double best_f = -1.0;
  for (std::size_t r = 1; r < text.size(); ++r) {
    for (std::size_t k = 0; k < orders; ++k) {
      const NgramCounts& ref_counts = counts[k][r];
      const NgramCounts& hyp_counts = counts[k][0];
      stats[3 * k + 0] = ref_counts.empty() ? 0 : total_count(hyp_counts);
      stats[3 * k + 1] = total_count(ref_counts);
      stats[3 * k + 2] = clipped_matches(hyp_counts, ref_counts);
    }
    const double f = f_score(stats.data());
    if (f > best_f) {
      best_f = f;
      std::copy(stats.begin(), stats.end(), out);
    }
  }
}

double Chrf::f_score(const std::int64_t* stats) const {
  const double eps = 1e-16;
  const double factor = static_cast<double>(options_.beta) * options_.beta;
  double score = 0.0;
  double avg_prec = 0.0;
  double avg_rec = 0.0;
  int effective_order = 0;
  for (int i = 0; i < order(); ++i) {
    const auto n_hyp = stats[3 * i];
    const auto n_ref = stats[3 * i + 1];
    const auto n_match = stats[3 * i + 2];
    const double prec = n_hyp > 0 ? static_cast<double>(n_match) / static_cast<double>(n_hyp) : eps;
    const double rec = n_ref > 0 ? static_cast<double>(n_match) / static_cast<double>(n_ref) : eps;
    const double denom = factor * prec + rec;
    score += denom > 0 ? (1 + factor) * prec * rec / denom : eps;
    if (n_hyp > 0 && n_ref > 0) {
      avg_prec += prec;
      avg_rec += rec;
      ++effective_order;
    }
  }
  if (options_.eps_smoothing) return 100 * score / order();
  if (effective_order == 0) {
    avg_prec = avg_rec = 0.0;
  } else {
    avg_prec /= effective_order;
    avg_rec /= effective_order;
  }
  if (avg_prec + avg_rec != 0.0) {
    score = (1 + factor) * avg_prec * avg_rec;
    score /= (factor * avg_prec) + avg_rec;
    return 100 * score;
  }
  return 0.0;
}

std::string Chrf::name() const {
  return "chrF" + std::to_string(options_.beta) + std::string(static_cast<std::size_t>(options_.word_order), '+');
}

std::string Chrf::signature(std::size_t nrefs, bool short_form) const {
  const auto field = [&](const char* full, const char* abbr, const std::string& value) {
    return std::string(short_form ? abbr : full) + ":" + value;
  };
  return field("nrefs", "#", std::to_string(nrefs)) + "|" + field("case", "c", options_.lowercase ? "lc" : "mixed") +
         "|" + field("eff", "e", options_.eps_smoothing ? "no" : "yes") + "|" +
         field("nc", "nc", std::to_string(options_.char_order)) + "|" +
         field("nw", "nw", std::to_string(options_.word_order)) + "|" +
         field("space", "s", options_.whitespace ? "yes" : "no") + "|" + field("version", "v", kSignatureVersion);
}

MetricResult Chrf::result(const std::int64_t* stats, std::size_t nrefs) const {
  MetricResult r;
  r.name = name();
  r.score = f_score(stats);
  r.signature = signature(nrefs, false);
  r.signature_short = signature(nrefs, true);
  r.details["exact_score"] = r.score;
  r.details["stats"] = std::vector<std::int64_t>(stats, stats + stats_size());
  return r;
}

}  // namespace dragoman::eval
