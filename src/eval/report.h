// sacreBLEU's output formats: the text line "NAME|SIGNATURE = SCORE VERBOSE" (several metrics
// aligned on '='), the score alone, and the JSON object of `sacrebleu -f json`, to which Dragoman
// adds full-precision statistics under "details".
#pragma once

#include <string>
#include <vector>

#include "eval/metric.h"

namespace dragoman::eval {

// f"{value:.{width}f}": Python's fixed-point formatting (exact decimal rounding, as printf).
std::string format_fixed(double value, int decimals);

// sacreBLEU's Score.format for text: "BLEU|nrefs:1|...|version:... = 27.31 58.2/... (BP = ...)",
// or just the score when score_only.
std::string format_text(const MetricResult& result, int width, bool score_only, bool short_signature);

// sacreBLEU's Score.format for JSON (always the long signature), plus "details".
nlohmann::ordered_json format_json(const MetricResult& result, int width);

// What `sacrebleu -f text` prints for one system and several metrics (sorted by the caller):
// lines aligned on '=' (score-only lines unaligned). Ends with a newline.
std::string format_results_text(const std::vector<MetricResult>& results, int width, bool score_only,
                                bool short_signature);

// What `sacrebleu -f json` prints: one object, or a list for several metrics. Ends with a newline.
std::string format_results_json(const std::vector<MetricResult>& results, int width);

}  // namespace dragoman::eval
