// sacreBLEU's output formats (see report.h).
#include "eval/report.h"

#include <algorithm>
#include <cstdio>

namespace dragoman::eval {

std::string format_fixed(double value, int decimals) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
  return buffer;
}

std::string format_text(const MetricResult& result, int width, bool score_only, bool short_signature) {
  const std::string score = format_fixed(result.score, width);
  if (score_only) return score;
  std::string line = result.name + "|" + (short_signature ? result.signature_short : result.signature) + " = " + score;
  if (!result.verbose.empty()) line += " " + result.verbose;
  return line;
}

nlohmann::ordered_json format_json(const MetricResult& result, int width) {
  nlohmann::ordered_json d;
  d["name"] = result.name;
  d["score"] = std::stod(format_fixed(result.score, width));  // float(f"{score:.{width}f}")
  d["signature"] = result.signature;
  if (!result.verbose.empty()) d["verbose_score"] = result.verbose;
  std::size_t start = 0;
  while (start <= result.signature.size()) {
    std::size_t end = result.signature.find('|', start);
    if (end == std::string::npos) end = result.signature.size();
    const std::string pair = result.signature.substr(start, end - start);
    const std::size_t colon = pair.find(':');
    d[pair.substr(0, colon)] = pair.substr(colon + 1);
    start = end + 1;
  }
  d["details"] = result.details;
  return d;
}

std::string format_results_text(const std::vector<MetricResult>& results, int width, bool score_only,
                                bool short_signature) {
  std::vector<std::string> lines;
  for (const auto& r : results) lines.push_back(format_text(r, width, score_only, short_signature));
  std::string out;
  if (score_only || lines.size() == 1) {
    for (const auto& line : lines) out += line + "\n";
    return out;
  }
  // print_single_results: right-align the part before " = " to the longest one.
  std::size_t w = 0;
  for (const auto& line : lines) w = std::max(w, line.find('=') - 1);
  for (const auto& line : lines) {
    const std::size_t left = line.find('=') - 1;
    out += std::string(w - left, ' ') + line + "\n";
  }
  return out;
}

std::string format_results_json(const std::vector<MetricResult>& results, int width) {
  if (results.size() == 1) return format_json(results[0], width).dump(1) + "\n";
  std::string out = "[\n";
  for (std::size_t i = 0; i < results.size(); ++i) {
    if (i > 0) out += ",\n";
    out += format_json(results[i], width).dump(1);
  }
  return out + "\n]\n";
}

}  // namespace dragoman::eval
