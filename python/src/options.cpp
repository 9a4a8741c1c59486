// Keyword arguments -> CallOptions (see options.h).
#include "options.h"

#include <pybind11/stl.h>

#include <set>
#include <string>

#include "base/error.h"

namespace py = pybind11;

namespace dragoman::python {
namespace {

// The keys every translation call takes, then those of one kind.
const std::set<std::string> kSearchKeys = {"beam",
                                           "length_penalty",
                                           "length_normalization",
                                           "word_reward",
                                           "max_length_a",
                                           "max_length_b",
                                           "nbest",
                                           "sampling",
                                           "temperature",
                                           "top_k",
                                           "top_p",
                                           "seed",
                                           "noise",
                                           "word_scores",
                                           "alignment",
                                           "attention_layer",
                                           "attention_head",
                                           "batch_tokens",
                                           "batch_sentences",
                                           "target_prefix",
                                           "constraints"};
const std::set<std::string> kFileKeys = {"scores", "output_format", "chunk_lines", "replace_invalid"};

[[noreturn]] void bad_value(const std::string& key, const std::string& expected, const py::handle& value) {
  throw py::value_error(key + " must be " + expected + ", got " + py::str(py::repr(value)).cast<std::string>());
}

template <typename T>
T number(const std::string& key, const py::handle& value, T low, T high, const std::string& range) {
  T x;
  try {
    if (py::isinstance<py::bool_>(value)) throw py::cast_error();  // True is not a beam
    x = value.cast<T>();
  } catch (const py::cast_error&) {
    bad_value(key, range, value);
  }
  if (!(x >= low && x <= high)) bad_value(key, range, value);
  return x;
}

bool flag(const std::string& key, const py::handle& value) {
  if (!py::isinstance<py::bool_>(value)) bad_value(key, "True or False", value);
  return value.cast<bool>();
}

std::string text(const std::string& key, const py::handle& value) {
  if (!py::isinstance<py::str>(value)) bad_value(key, "a str", value);
  return value.cast<std::string>();
}

void fail(const std::string& message) { throw py::value_error(message); }

}  // namespace

decode::OutputOptions CallOptions::output_options() const {
  decode::OutputOptions out;
  out.format = output_format == "json" ? decode::OutputFormat::kJson : decode::OutputFormat::kText;
  out.nbest = nbest;
  out.scores = scores;
  out.word_scores = word_scores;
  out.alignment = alignment == "hard"   ? decode::AlignmentKind::kHard
                  : alignment == "soft" ? decode::AlignmentKind::kSoft
                                        : decode::AlignmentKind::kNone;
  return out;
}

CallOptions parse_options(const py::dict& given, CallKind kind) {
  CallOptions o;
  decode::DecodingOptions& d = o.decoding;
  decode::SamplingOptions& s = d.sampling;
  for (const auto& [k, value] : given) {
    const std::string key = py::str(k).cast<std::string>();
    const bool known = kSearchKeys.count(key) > 0 || (kind == CallKind::kTranslateFile && kFileKeys.count(key) > 0);
    if (!known) throw py::type_error("unexpected keyword argument '" + key + "'");
    if (value.is_none()) continue;  // None: the default
    if (key == "beam") {
      d.beam = number<int>(key, value, 1, decode::kMaxBeam, "an int in [1, " + std::to_string(decode::kMaxBeam) + "]");
      d.given.beam = true;
    } else if (key == "length_penalty") {
      d.length_penalty = number<double>(key, value, 0.0, decode::kMaxLengthPenalty,
                                        "a number in [0, " + std::to_string(decode::kMaxLengthPenalty) + "]");
      d.given.alpha = true;
    } else if (key == "length_normalization") {
      d.length_normalization = text(key, value);
      try {
        decode::length_penalty_named(d.length_normalization);
      } catch (const Error&) {
        bad_value(key, "'gnmt', 'power' or 'none'", value);
      }
      d.given.normalization = true;
    } else if (key == "word_reward") {
      d.word_reward = number<double>(key, value, -1e6, 1e6, "a number in [-1e6, 1e6]");
    } else if (key == "max_length_a") {
      d.max_length_a = number<double>(key, value, 0.0, decode::kMaxLengthA, "a number in [0, 1000]");
    } else if (key == "max_length_b") {
      d.max_length_b = number<std::int64_t>(key, value, 0, decode::kMaxLengthB, "an int in [0, 1048576]");
    } else if (key == "nbest") {
      o.nbest = number<int>(key, value, 0, decode::kMaxBeam, "an int in [0, " + std::to_string(decode::kMaxBeam) + "]");
    } else if (key == "sampling") {
      s.enabled = flag(key, value);
    } else if (key == "temperature") {
      s.temperature = number<double>(key, value, 0.01, 100.0, "a number in [0.01, 100]");
    } else if (key == "top_k") {
      s.top_k = number<int>(key, value, 0, 1 << 24, "an int in [0, 16777216]");
    } else if (key == "top_p") {
      s.top_p = number<double>(key, value, 0.000001, 1.0, "a number in [0.000001, 1]");
    } else if (key == "seed") {
      s.seed = number<std::uint64_t>(key, value, 0, UINT64_MAX, "an int >= 0");
    } else if (key == "noise") {
      o.noise = flag(key, value);
    } else if (key == "word_scores") {
      o.word_scores = flag(key, value);
    } else if (key == "alignment") {
      if (py::isinstance<py::bool_>(value)) {
        o.alignment = value.cast<bool>() ? "hard" : "";  // True: hard, as the command line's bare --alignment
      } else {
        o.alignment = text(key, value);
        if (o.alignment != "hard" && o.alignment != "soft") bad_value(key, "'hard', 'soft', True or False", value);
      }
    } else if (key == "attention_layer" || key == "attention_head") {
      (key == "attention_layer" ? o.attention_layer : o.attention_head) =
          number<int>(key, value, 1, 1024, "an int in [1, 1024] (1-based)");
    } else if (key == "batch_tokens") {
      d.batch_tokens = number<std::int64_t>(key, value, 1, std::int64_t{1} << 30, "an int in [1, 2^30]");
    } else if (key == "batch_sentences") {
      d.batch_sentences = number<std::int64_t>(key, value, 1, std::int64_t{1} << 30, "an int in [1, 2^30]");
    } else if (key == "target_prefix" || key == "constraints") {
      if (kind == CallKind::kTranslateFile) {
        (key == "target_prefix" ? o.target_prefix_file : o.constraints_file) = text(key, value);
      } else {
        try {
          if (key == "target_prefix") {
            o.target_prefix = value.cast<std::vector<std::string>>();
          } else {
            o.constraints = value.cast<std::vector<std::vector<std::string>>>();
          }
        } catch (const py::cast_error&) {
          bad_value(
              key,
              key == "target_prefix" ? "a list of str, one a sentence" : "a list of lists of str, one list a sentence",
              value);
        }
      }
    } else if (key == "scores") {
      o.scores = flag(key, value);
    } else if (key == "output_format") {
      o.output_format = text(key, value);
      if (o.output_format != "text" && o.output_format != "json") bad_value(key, "'text' or 'json'", value);
    } else if (key == "chunk_lines") {
      o.chunks.chunk_lines = number<std::int64_t>(key, value, 1, std::int64_t{1} << 30, "an int in [1, 2^30]");
    } else if (key == "replace_invalid") {
      o.chunks.replace_invalid = flag(key, value);
    }
  }
  // The command line's rules (cli/translate.cpp), in the keywords' names.
  const decode::SamplingOptions unset;  // values other than these shape sampling (the command line's rule)
  if (!s.enabled && (s.temperature != unset.temperature || s.top_k != unset.top_k || s.top_p != unset.top_p ||
                     (s.seed != unset.seed && !o.noise))) {
    fail("temperature, top_k, top_p and seed shape sampling: give sampling=True too");
  }
  if (o.noise && (o.output_format != "text" || o.scores || o.nbest > 0 || o.word_scores || !o.alignment.empty())) {
    fail("noise=True changes the text only: not with nbest, scores, word_scores, alignment or JSON output");
  }
  if (s.enabled && d.given.beam) fail("beam is for the beam search; with sampling=True, nbest=N gives N samples");
  if (s.enabled && (o.constraints || !o.constraints_file.empty())) {
    fail("constraints need the beam search: not with sampling=True (target_prefix works with both)");
  }
  if (d.given.beam && o.nbest > d.beam) {
    fail("nbest=" + std::to_string(o.nbest) + " is larger than the beam, " + std::to_string(d.beam) +
         " (give beam=" + std::to_string(o.nbest) + " or more)");
  }
  if (o.nbest > 0 && o.scores) fail("scores=True is for 1-best output; n-best lines have scores");
  if (o.output_format == "json" && o.scores) fail("scores=True is for text output; each JSON object has its scores");
  if ((o.attention_layer > 0 || o.attention_head > 0) && o.alignment.empty()) {
    fail("attention_layer and attention_head choose the attention of alignment: give alignment too");
  }
  return o;
}

py::dict default_options() {
  const CallOptions o;
  const decode::DecodingOptions& d = o.decoding;
  py::dict out;
  out["beam"] = d.beam;
  out["length_penalty"] = d.length_penalty;
  out["length_normalization"] = d.length_normalization;
  out["word_reward"] = d.word_reward;
  out["max_length_a"] = d.max_length_a;
  out["max_length_b"] = d.max_length_b;
  out["nbest"] = o.nbest;
  out["sampling"] = d.sampling.enabled;
  out["temperature"] = d.sampling.temperature;
  out["top_k"] = d.sampling.top_k;
  out["top_p"] = d.sampling.top_p;
  out["seed"] = d.sampling.seed;
  out["noise"] = o.noise;
  out["word_scores"] = o.word_scores;
  out["alignment"] = false;
  out["cpu_batch_tokens"] = decode::kCpuBatchTokens;
  out["cpu_batch_sentences"] = decode::kCpuBatchSentences;
  out["gpu_batch_tokens"] = decode::kGpuBatchTokens;
  out["gpu_batch_sentences"] = decode::kGpuBatchSentences;
  out["chunk_lines"] = o.chunks.chunk_lines;
  out["device"] = d.device;
  out["precision"] = d.precision;
  out["threads"] = d.threads;
  return out;
}

}  // namespace dragoman::python
