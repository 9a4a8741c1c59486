// dragoman.Translator and dragoman.Scorer (see translator.h).
#include "translator.h"

#include <pybind11/stl.h>

#include <algorithm>
#include <atomic>
#include <optional>
#include <utility>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "decode/guide_input.h"
#include "decode/scorer.h"
#include "decode/translation_output.h"
#include "decode/translation_stream.h"
#include "decode/translator.h"
#include "device/cpu/threads.h"
#include "io/line_reader.h"
#include "io/status_line.h"
#include "ops/build_info.h"
#include "ops/linear.h"
#include "options.h"

namespace py = pybind11;

namespace dragoman::python {
namespace {

// A JSON value as Python objects (json.loads of its text: the same numbers as translate's JSON
// output, which writes them the same way).
py::object to_python(const nlohmann::ordered_json& value) {
  return py::module_::import("json").attr("loads")(value.dump());
}

// translate's search options for a call: the model file's recommendations for those not given,
// the samples a sentence, the n-best list and the attention the output needs.
decode::TranslatorOptions translator_options(const CallOptions& o, const decode::DecodingModels& m,
                                             const Device& device) {
  // Samples are a function of the seed and the line (translate's rule): on the CPU the
  // log-probabilities they are drawn from must not depend on the batch.
  if (o.decoding.sampling.enabled && device.is_cpu()) ops::set_row_invariant_products(true);
  decode::DecodingOptions effective = o.decoding;
  apply_model_defaults(decode::decoding_defaults(m.infos.front(), m.files.front()), effective);
  if (effective.sampling.enabled) effective.beam = std::max(o.nbest, 1);
  if (o.nbest > effective.beam) {
    throw py::value_error("nbest=" + std::to_string(o.nbest) + " is larger than the beam, " +
                          std::to_string(effective.beam) + " (give beam=" + std::to_string(o.nbest) + " or more)");
  }
  decode::TranslatorOptions options = effective.translator_options(device, decode::DecodingUse::kBatch);
  options.search = effective.search_options();
  options.search.nbest = std::max(o.nbest, 1);
  options.search.record_attention = o.needs_source_words();
  options.search.attention.layer = o.attention_layer - 1;
  options.search.attention.head = o.attention_head - 1;
  options.search.shortlist = m.shortlist.get();
  options.noise.enabled = o.noise;
  options.noise.seed = effective.sampling.seed;
  return options;
}

}  // namespace

LoadedModels::LoadedModels(const std::vector<std::string>& files, const std::string& device,
                           const std::string& precision, int threads, const std::string& shortlist)
    : device_(Device::parse(device)), precision_(precision) {
  if (files.empty()) throw py::value_error("model: give a model file, or a list of them for an ensemble");
  if (precision == "int8" && !device_.is_cpu()) {
    throw py::value_error("precision='int8' runs on the CPU (on a GPU use 'bf16' or 'fp16')");
  }
  if (!device_.is_cpu() && !ops::built_with_cuda()) {
    throw Error("device='" + device + "': this build of dragoman has no CUDA");
  }
  if (threads < 0 || threads > cpu::kMaxThreads) {
    throw py::value_error("threads must be an int in [0, " + std::to_string(cpu::kMaxThreads) + "] (0: all cores)");
  }
  threads_ = cpu::resolve_threads(threads, "dragoman.Translator: threads");
  cpu::set_compute_threads(threads_);  // OpenBLAS's, and this thread's OpenMP threads
  py::gil_scoped_release released;
  models_ = decode::load_decoding_models(files, precision, device_, shortlist);
}

void LoadedModels::use_threads() const { cpu::use_compute_threads_here(threads_); }

py::dict LoadedModels::info() const {
  const model::ModelFileInfo& first = models_.infos.front();
  py::dict out;
  out["files"] = models_.files;
  out["step"] = first.step;
  out["config"] = py::module_::import("json").attr("loads")(models_.models.front()->config().to_json().dump());
  out["metadata"] = first.metadata;
  const decode::DecodingDefaults d = decode::decoding_defaults(first, models_.files.front());
  py::dict defaults;
  if (d.beam) defaults["beam"] = *d.beam;
  if (d.normalization) defaults["length_normalization"] = *d.normalization;
  if (d.alpha) defaults["length_penalty"] = *d.alpha;
  out["decoding_defaults"] = defaults;
  out["source_vocabulary_size"] = models_.vocabulary->size();
  out["target_vocabulary_size"] = models_.vocabulary->target_size();
  out["device"] = device_.str();
  out["precision"] = precision_;
  out["threads"] = threads_;
  return out;
}

Translator::Translator(const std::vector<std::string>& files, const std::string& device, const std::string& precision,
                       int threads, const std::string& shortlist, bool deterministic)
    : models_(files, device, precision, threads, shortlist) {
  if (deterministic) ops::set_row_invariant_products(true);  // (the CPU's: checked in Python)
}

py::list Translator::translate_batch(const std::vector<std::string>& sentences, const py::dict& options) const {
  const CallOptions o = parse_options(options, CallKind::kTranslateBatch);
  const auto check_count = [&](std::size_t count, const char* what) {
    if (count != sentences.size()) {
      throw py::value_error(std::string(what) + ": " + std::to_string(count) + " entries for " +
                            std::to_string(sentences.size()) + " sentences (one a sentence)");
    }
  };
  if (o.target_prefix) check_count(o.target_prefix->size(), "target_prefix");
  if (o.constraints) check_count(o.constraints->size(), "constraints");
  const decode::DecodingModels& m = models_.models();
  const decode::TranslatorOptions options_for_call = translator_options(o, m, models_.device());
  const decode::OutputOptions output = o.output_options();
  const std::vector<nlohmann::ordered_json> results = models_.run([&] {
    const text::Vocabulary& vocabulary = *m.vocabulary;
    const decode::Translator translator(m.decoding(), vocabulary, options_for_call);
    std::vector<decode::TargetGuide> guides;
    if (o.target_prefix || o.constraints) {
      for (std::size_t i = 0; i < sentences.size(); ++i) {
        guides.push_back(decode::encode_guide(vocabulary, o.target_prefix ? (*o.target_prefix)[i] : "",
                                              o.constraints ? (*o.constraints)[i] : std::vector<std::string>{}));
      }
    }
    const std::vector<decode::Translation> done = translator.translate_ids_in_batches(
        translator.encode(sentences), [](const std::vector<decode::Translation>&, std::int64_t) {}, std::move(guides));
    std::vector<nlohmann::ordered_json> out;
    out.reserve(done.size());
    for (std::size_t i = 0; i < done.size(); ++i) {
      std::optional<decode::SourceWords> words;
      if (o.needs_source_words()) words = decode::source_words(sentences[i], vocabulary);
      out.push_back(decode::translation_json(done[i], output, vocabulary, words ? &*words : nullptr));
    }
    return out;
  });
  py::list list;
  for (const nlohmann::ordered_json& r : results) list.append(to_python(r));
  return list;
}

py::dict Translator::translate_file(const std::string& input, const std::string& output,
                                    const py::dict& options) const {
  const CallOptions o = parse_options(options, CallKind::kTranslateFile);
  const decode::DecodingModels& m = models_.models();
  const decode::TranslatorOptions options_for_call = translator_options(o, m, models_.device());
  const decode::TranslationTotals totals = models_.run([&] {
    io::LineReader reader(input);
    std::optional<io::LineReader> prefixes, constraints;
    if (!o.target_prefix_file.empty()) prefixes.emplace(o.target_prefix_file);
    if (!o.constraints_file.empty()) constraints.emplace(o.constraints_file);
    decode::TranslationSink sink(output);
    const decode::Translator translator(m.decoding(), *m.vocabulary, options_for_call);
    io::Progress progress("translate", "lines", -1, io::Progress::Options{false, false});
    decode::TranslationWriter writer(sink, o.output_options(), *m.vocabulary, reader.name(),
                                     m.decoding().config().max_positions);
    decode::GuideReader guides(*m.vocabulary, prefixes ? &*prefixes : nullptr, constraints ? &*constraints : nullptr);
    decode::translate_stream(translator, reader, o.chunks, o.needs_source_words(), writer, progress, nullptr,
                             guides.active() ? &guides : nullptr);
    sink.commit();
    return writer.totals();
  });
  py::dict out;
  out["lines"] = totals.lines;
  out["source_tokens"] = totals.source_tokens;
  out["target_tokens"] = totals.target_tokens;
  out["truncated_lines"] = totals.truncated;
  out["replaced_lines"] = totals.replaced_lines;
  return out;
}

py::list Scorer::score(const std::vector<std::string>& sources, const std::vector<std::string>& targets, bool normalize,
                       std::int64_t batch_tokens, std::int64_t batch_sentences) const {
  if (sources.size() != targets.size()) {
    throw py::value_error("score: " + std::to_string(sources.size()) + " sources but " +
                          std::to_string(targets.size()) + " targets: one translation a source");
  }
  if (batch_tokens < 0 || batch_sentences < 0)
    throw py::value_error("score: batch sizes must be >= 0 (0: the default)");
  const decode::DecodingModels& m = models_.models();
  const std::vector<decode::ForcedScore> scores = models_.run([&] {
    const text::Vocabulary& vocabulary = *m.vocabulary;
    const std::int64_t max_positions = m.decoding().config().max_positions;
    std::vector<std::vector<std::int32_t>> source_ids, target_ids;
    for (std::size_t i = 0; i < sources.size(); ++i) {
      source_ids.push_back(vocabulary.encode(sources[i]));
      target_ids.push_back(vocabulary.encode_target(targets[i]));
      const std::string at = "[" + std::to_string(i) + "]";
      decode::check_forced_pair(source_ids.back(), target_ids.back(), max_positions, "score: sources" + at,
                                "score: targets" + at);
    }
    decode::DecodingOptions d;
    d.batch_tokens = batch_tokens;
    d.batch_sentences = batch_sentences;
    const decode::TranslatorOptions limits = d.translator_options(models_.device(), decode::DecodingUse::kBatch);
    return decode::force_decode(m.decoding(), source_ids, target_ids, limits.batch_tokens, limits.batch_sentences);
  });
  py::list out;
  for (const decode::ForcedScore& s : scores) {
    py::dict one;
    const auto length = static_cast<double>(s.token_log_probs.size());
    one["log_prob"] = normalize ? s.log_prob / length : s.log_prob;
    one["token_log_probs"] = s.token_log_probs;
    out.append(one);
  }
  return out;
}

}  // namespace dragoman::python
