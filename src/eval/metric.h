// The interface shared by the corpus metrics (BLEU, chrF), shaped like sacreBLEU's Metric: each
// segment (one hypothesis, its references) gives a fixed-size vector of integer statistics; the
// corpus score is computed once from the statistics summed over all segments. Integer statistics
// make the sum exact and independent of the order (and so of the thread count).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace dragoman::eval {

// The version of sacreBLEU whose behaviour Dragoman reproduces, and the version field of the
// signature: sacreBLEU's own signature says "version:2.5.1", ours says it is our implementation.
inline constexpr const char* kSacrebleuVersion = "2.5.1";
inline constexpr const char* kSignatureVersion = "2.5.1+dragoman";

struct MetricResult {
  std::string name;       // sacreBLEU's score name: "BLEU", "chrF2", "chrF2++"
  double score = 0.0;     // full precision
  std::string signature;  // "nrefs:1|case:mixed|...|version:2.5.1+dragoman"
  std::string signature_short;
  std::string verbose;             // BLEU's "58.2/33.1/20.5/13.3 (BP = ...)", empty for chrF
  nlohmann::ordered_json details;  // full-precision statistics for --json
};

class Metric {
 public:
  virtual ~Metric() = default;
  // sacreBLEU's metric key ("BLEU", "CHRF"): several metrics are reported sorted by it.
  virtual std::string key() const = 0;
  virtual std::size_t stats_size() const = 0;
  // Writes stats_size() statistics for one segment to `out`. Lines are raw UTF-8 lines as read from
  // the files (trailing whitespace is stripped here, as sacreBLEU's command line does).
  virtual void segment_stats(std::string_view hyp, const std::vector<std::string_view>& refs,
                             std::int64_t* out) const = 0;
  // The score of summed statistics; `nrefs` only goes into the signature.
  virtual MetricResult result(const std::int64_t* stats, std::size_t nrefs) const = 0;
};

}  // namespace dragoman::eval
