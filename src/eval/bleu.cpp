// BLEU as sacreBLEU computes it (see bleu.h). The floating-point operations follow sacreBLEU's
// Python in order, so the score agrees to the last bit where Python's sum() is a plain
// left-to-right sum (Python <= 3.11; 3.12's compensated sum() can differ in the last bit).
#include "eval/bleu.h"

#include <cmath>

#include "base/error.h"
#include "base/utf8.h"
#include "eval/ngrams.h"
#include "eval/report.h"
#include "text/unicode.h"

namespace dragoman::eval {
namespace {

double default_smooth_value(Smoothing smoothing) { return smoothing == Smoothing::kFloor ? 0.1 : 1.0; }

// sacreBLEU's my_log: log, with log(0) floored to -9999999999.
double floored_log(double x) { return x == 0.0 ? -9999999999.0 : std::log(x); }

// sacreBLEU's _get_closest_ref_len: closest to the hypothesis length, ties to the shorter.
std::int64_t closest_ref_len(std::int64_t hyp_len, const std::vector<std::int64_t>& ref_lens) {
  std::int64_t closest_diff = -1;
  std::int64_t closest_len = -1;
  for (std::int64_t len : ref_lens) {
    const std::int64_t diff = std::llabs(hyp_len - len);
    if (closest_diff == -1 || diff < closest_diff) {
      closest_diff = diff;
      closest_len = len;
    } else if (diff == closest_diff && len < closest_len) {
      closest_len = len;
    }
  }
  return closest_len;
}

}  // namespace

Smoothing parse_smoothing(std::string_view name) {
  if (name == "exp") return Smoothing::kExp;
  if (name == "floor") return Smoothing::kFloor;
  if (name == "add-k") return Smoothing::kAddK;
  if (name == "none") return Smoothing::kNone;
  throw Error("unknown smoothing method '" + std::string(name) + "' (expected one of exp, floor, add-k, none)");
}

const char* smoothing_name(Smoothing smoothing) {
  switch (smoothing) {
    case Smoothing::kExp: return "exp";
    case Smoothing::kFloor: return "floor";
    case Smoothing::kAddK: return "add-k";
    case Smoothing::kNone: return "none";
  }
  return "?";
}

BleuScore compute_bleu(const std::vector<std::int64_t>& correct_in, const std::vector<std::int64_t>& total_in,
                       std::int64_t sys_len, std::int64_t ref_len, const BleuOptions& options) {
  const auto max_order = static_cast<std::size_t>(options.max_order);
  const double smooth_value = options.smooth_value.value_or(default_smooth_value(options.smoothing));
  BleuScore s;
  s.counts.assign(correct_in.begin(), correct_in.end());
  s.totals.assign(total_in.begin(), total_in.end());
  s.precisions.assign(max_order, 0.0);
  s.sys_len = sys_len;
  s.ref_len = ref_len;
  if (sys_len < ref_len) {
    s.bp = sys_len > 0 ? std::exp(1.0 - static_cast<double>(ref_len) / static_cast<double>(sys_len)) : 0.0;
  }

  bool any_correct = false;
  for (std::int64_t c : correct_in) any_correct = any_correct || c != 0;
  if (!any_correct) return s;  // sacreBLEU #141: no matches, score 0

  double smooth_mteval = 1.0;
  std::size_t eff_order = max_order;
  for (std::size_t n = 1; n <= max_order; ++n) {
    double& correct = s.counts[n - 1];
    double& total = s.totals[n - 1];
    if (options.smoothing == Smoothing::kAddK && n > 1) {
      correct += smooth_value;
      total += smooth_value;
    }
    if (total == 0.0) break;
    if (options.effective_order) eff_order = n;
    if (correct == 0.0) {
      if (options.smoothing == Smoothing::kExp) {
        smooth_mteval *= 2;
        s.precisions[n - 1] = 100.0 / (smooth_mteval * total);
      } else if (options.smoothing == Smoothing::kFloor) {
        s.precisions[n - 1] = 100.0 * smooth_value / total;
      }
    } else {
      s.precisions[n - 1] = 100.0 * correct / total;
    }
  }

  double log_sum = 0.0;
  for (std::size_t n = 0; n < eff_order; ++n) log_sum += floored_log(s.precisions[n]);
  s.score = s.bp * std::exp(log_sum / static_cast<double>(eff_order));
  return s;
}

Bleu::Bleu(BleuOptions options) : options_(options) {
  if (options_.max_order < 1) throw Error("BLEU: the maximum n-gram order must be at least 1");
  if (options_.smooth_value && options_.smoothing != Smoothing::kFloor && options_.smoothing != Smoothing::kAddK) {
    // sacreBLEU ignores the value for exp and none; so do we, and the signature does not show it.
    options_.smooth_value.reset();
  }
}

std::u32string Bleu::preprocess(std::string_view line) const {
  const std::u32string text = utf8::decode(line);
  std::u32string_view view = text::unicode::rstrip(text);  // the command line's rstrip
  std::u32string lowered;
  if (options_.lowercase) {
    lowered = text::unicode::to_lower(view);
    view = text::unicode::rstrip(lowered);  // _preprocess_segment: tokenizer(sent.rstrip())
  }
  return tokenize(options_.tokenizer, view);
}

void Bleu::segment_stats(std::string_view hyp, const std::vector<std::string_view>& refs, std::int64_t* out) const {
  const auto max_order = static_cast<std::size_t>(options_.max_order);
  // Tokenized text of the hypothesis (index 0) and each reference; tokens are views into it.
  std::vector<std::u32string> text;
  text.reserve(refs.size() + 1);
  text.push_back(preprocess(hyp));
  for (std::string_view ref : refs) text.push_back(preprocess(ref));
  std::vector<std::vector<std::u32string_view>> tokens(text.size());
  for (std::size_t s = 0; s < text.size(); ++s) {
    text::unicode::split(text[s], [&](std::u32string_view token) { tokens[s].push_back(token); });
  }
  const std::vector<std::u32string> ids = intern_tokens(tokens);

  const auto hyp_len = static_cast<std::int64_t>(ids[0].size());
  std::vector<std::int64_t> ref_lens;
  for (std::size_t r = 1; r < ids.size(); ++r) ref_lens.push_back(static_cast<std::int64_t>(ids[r].size()));

  out[0] = hyp_len;
  out[1] = closest_ref_len(hyp_len, ref_lens);
  const std::vector<std::u32string_view> sequences(ids.begin(), ids.end());
  for (std::size_t n = 1; n <= max_order; ++n) {
    std::vector<std::vector<NgramKey>> keys = ngram_keys(sequences, n, kTokenIdBits);
    NgramCounts ref_counts;
    for (std::size_t r = 1; r < keys.size(); ++r) ref_counts = max_merge(ref_counts, count_keys(std::move(keys[r])));
    const NgramCounts hyp_counts = count_keys(std::move(keys[0]));
    out[2 + n - 1] = clipped_matches(hyp_counts, ref_counts);
    out[2 + max_order + n - 1] = total_count(hyp_counts);
  }
}

BleuScore Bleu::score(const std::int64_t* stats) const {
  const auto max_order = static_cast<std::size_t>(options_.max_order);
  const std::vector<std::int64_t> correct(stats + 2, stats + 2 + max_order);
  const std::vector<std::int64_t> total(stats + 2 + max_order, stats + 2 + 2 * max_order);
  return compute_bleu(correct, total, stats[0], stats[1], options_);
}

std::string Bleu::signature(std::size_t nrefs, bool short_form) const {
  std::string smooth = smoothing_name(options_.smoothing);
  if (options_.smoothing == Smoothing::kFloor || options_.smoothing == Smoothing::kAddK) {
    smooth += "[" + format_fixed(options_.smooth_value.value_or(default_smooth_value(options_.smoothing)), 2) + "]";
  }
  const auto field = [&](const char* full, const char* abbr, const std::string& value) {
    return std::string(short_form ? abbr : full) + ":" + value;
  };
  return field("nrefs", "#", std::to_string(nrefs)) + "|" + field("case", "c", options_.lowercase ? "lc" : "mixed") +
         "|" + field("eff", "e", options_.effective_order ? "yes" : "no") + "|" +
         field("tok", "tok", tokenizer_name(options_.tokenizer)) + "|" + field("smooth", "s", smooth) + "|" +
         field("version", "v", kSignatureVersion);
}

MetricResult Bleu::result(const std::int64_t* stats, std::size_t nrefs) const {
  const BleuScore s = score(stats);
  MetricResult r;
  r.name = "BLEU";
  r.score = s.score;
  r.signature = signature(nrefs, false);
  r.signature_short = signature(nrefs, true);
  std::string precisions;
  for (std::size_t n = 0; n < s.precisions.size(); ++n) {
    if (n > 0) precisions += "/";
    precisions += format_fixed(s.precisions[n], 1);
  }
  const double ratio = s.ref_len != 0 ? static_cast<double>(s.sys_len) / static_cast<double>(s.ref_len) : 0.0;
  r.verbose = precisions + " (BP = " + format_fixed(s.bp, 3) + " ratio = " + format_fixed(ratio, 3) +
              " hyp_len = " + std::to_string(s.sys_len) + " ref_len = " + std::to_string(s.ref_len) + ")";
  r.details["exact_score"] = s.score;
  r.details["counts"] = s.counts;
  r.details["totals"] = s.totals;
  r.details["precisions"] = s.precisions;
  r.details["bp"] = s.bp;
  r.details["ratio"] = ratio;
  r.details["hyp_len"] = s.sys_len;
  r.details["ref_len"] = s.ref_len;
  return r;
}

}  // namespace dragoman::eval
