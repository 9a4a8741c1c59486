// dragoman.Translator and dragoman.Scorer's C++ side: the models loaded once (decode/model_files.h),
// then translate's library calls (decode/translator.h, decode/translation_stream.h) and score's
// (decode/scorer.h) for each call, with the GIL released while they run. A Translator runs one call
// at a time: calls from several Python threads wait for each other (its models' state is not
// shared between searches, but the CPU's threads are: two searches at once would only halve each
// other's). Results are the fields of translate's JSON output (docs/DECODING.md), as Python dicts.
#pragma once

#include <pybind11/pybind11.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "decode/model_files.h"
#include "device/device.h"

namespace dragoman::python {

// One model file or an ensemble's, loaded for decoding on a device, in a precision, with threads.
class LoadedModels {
 public:
  LoadedModels(const std::vector<std::string>& files, const std::string& device, const std::string& precision,
               int threads, const std::string& shortlist);

  const decode::DecodingModels& models() const { return models_; }
  const Device& device() const { return device_; }
  const std::string& precision() const { return precision_; }
  int threads() const { return threads_; }
  // The model file's settings, as Python objects: config, step, metadata, decoding defaults, vocabulary sizes.
  pybind11::dict info() const;
  // Runs `work` with the calling thread's CPU threads set, one call at a time, without the GIL.
  template <typename Work>
  auto run(Work&& work) const {
    pybind11::gil_scoped_release released;
    const std::lock_guard<std::mutex> lock(mutex_);
    use_threads();
    return work();
  }

 private:
  void use_threads() const;

  decode::DecodingModels models_;
  Device device_;
  std::string precision_;
  int threads_;
  mutable std::mutex mutex_;
};

class Translator {
 public:
  // deterministic: batch-invariant products (translate --deterministic) for the whole process from
  // here on, as sampling on the CPU turns them on (its samples must not depend on the batch).
  Translator(const std::vector<std::string>& files, const std::string& device, const std::string& precision,
             int threads, const std::string& shortlist, bool deterministic);

  // One dict a sentence: translation, log_prob, score, and the n-best list, word scores and
  // alignment when asked (translate --output-format json's objects).
  pybind11::list translate_batch(const std::vector<std::string>& sentences, const pybind11::dict& options) const;
  // translate's pipeline from a file to a file (written atomically; "-": standard input/output),
  // in text or JSON; returns the totals (lines, tokens, truncated and replaced lines).
  pybind11::dict translate_file(const std::string& input, const std::string& output,
                                const pybind11::dict& options) const;
  pybind11::dict info() const { return models_.info(); }

 private:
  LoadedModels models_;
};

class Scorer {
 public:
  Scorer(const std::vector<std::string>& files, const std::string& device, const std::string& precision, int threads)
      : models_(files, device, precision, threads, "") {}

  // Force decoding, as `dragoman score`: one dict a pair, log_prob (normalised by the target's
  // tokens and EOS with `normalize`) and token_log_probs (each target piece's, then EOS's).
  pybind11::list score(const std::vector<std::string>& sources, const std::vector<std::string>& targets, bool normalize,
                       std::int64_t batch_tokens, std::int64_t batch_sentences) const;
  pybind11::dict info() const { return models_.info(); }

 private:
  LoadedModels models_;
};

}  // namespace dragoman::python
