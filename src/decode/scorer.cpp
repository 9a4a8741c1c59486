// Force decoding (see scorer.h).
#include "decode/scorer.h"

#include <algorithm>

#include "base/error.h"
#include "decode/translator.h"
#include "ops/gather.h"

namespace dragoman::decode {
namespace {

// The values logits[r, tokens[r]] of log-probabilities [R, V] as doubles on the host: on a GPU only
// those R values are copied back (one gather of single elements).
std::vector<double> picked(const Tensor& logits, const std::vector<std::int32_t>& tokens) {
  const std::int64_t rows = logits.dim(0), vocab = logits.dim(1);
  std::vector<std::int32_t> at(static_cast<std::size_t>(rows));
  for (std::int64_t r = 0; r < rows; ++r) {
    at[static_cast<std::size_t>(r)] = static_cast<std::int32_t>(r * vocab + tokens[static_cast<std::size_t>(r)]);
  }
  Tensor values = logits;
  if (!logits.device().is_cpu()) {
    const auto element = static_cast<std::int64_t>(dtype_size(logits.dtype()));
    Tensor out = Tensor::empty({rows}, logits.dtype(), logits.device());
    ops::gather_row_prefixes(logits, element, out, element, at, element);
    values = out.to(Device::cpu());
    for (std::int64_t r = 0; r < rows; ++r) at[static_cast<std::size_t>(r)] = static_cast<std::int32_t>(r);
  }
  std::vector<double> out(static_cast<std::size_t>(rows));
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::int64_t i = at[static_cast<std::size_t>(r)];
    switch (values.dtype()) {
      case DType::kF32: out[static_cast<std::size_t>(r)] = static_cast<double>(values.data<float>()[i]); break;
      case DType::kF64: out[static_cast<std::size_t>(r)] = values.data<double>()[i]; break;
      default: throw Error("score: log-probabilities must be f32 or f64, got " + values.describe());
    }
  }
  return out;
}

}  // namespace

void check_forced_pair(const std::vector<std::int32_t>& source, const std::vector<std::int32_t>& target,
                       std::int64_t max_positions, const std::string& source_name, const std::string& target_name) {
  if (source.empty()) throw Error(source_name + ": an empty source line (nothing to translate from)");
  if (static_cast<std::int64_t>(source.size()) > max_positions) {
    throw Error(source_name + ": " + std::to_string(source.size()) + " pieces, more than the model's " +
                std::to_string(max_positions) + " positions");
  }
  if (static_cast<std::int64_t>(target.size()) >= max_positions) {
    throw Error(target_name + ": " + std::to_string(target.size()) + " pieces and EOS, more than the model's " +
                std::to_string(max_positions) + " positions");
  }
}

std::vector<ForcedScore> force_decode(const DecodingModel& model, const std::vector<std::vector<std::int32_t>>& sources,
                                      const std::vector<std::vector<std::int32_t>>& targets, std::int64_t batch_tokens,
                                      std::int64_t batch_sentences,
                                      const std::function<void(std::int64_t done)>& progress) {
  if (sources.size() != targets.size()) throw Error("score: one target per source");
  const model::ModelConfig& c = model.config();
  std::vector<std::int64_t> lengths;
  for (std::size_t i = 0; i < sources.size(); ++i) {
    if (sources[i].empty()) throw Error("score: source " + std::to_string(i + 1) + " is empty");
    if (static_cast<std::int64_t>(sources[i].size()) > c.max_positions ||
        static_cast<std::int64_t>(targets[i].size()) >= c.max_positions) {
      throw Error("score: sentence pair " + std::to_string(i + 1) + " is longer than the model's " +
                  std::to_string(c.max_positions) + " positions");
    }
    lengths.push_back(static_cast<std::int64_t>(sources[i].size()));
  }
  std::vector<ForcedScore> scores(sources.size());
  const Device device = model.device();
  std::int64_t done = 0;
  for (const std::vector<std::int64_t>& group : length_sorted_batches(lengths, batch_tokens, batch_sentences)) {
    std::vector<std::vector<std::int32_t>> batch_sources, empty_targets(group.size());
    std::int64_t capacity = 1;
    for (const std::int64_t i : group) {
      batch_sources.push_back(sources[static_cast<std::size_t>(i)]);
      capacity = std::max(capacity, static_cast<std::int64_t>(targets[static_cast<std::size_t>(i)].size()) + 1);
    }
    model::Batch batch = model::Batch::from_sentences(batch_sources, empty_targets, c);
    if (!device.is_cpu()) batch = batch.to(device, c);
    DecodingState state = model.start(batch, capacity, 1, nullptr);
    std::vector<std::int64_t> active(group.begin(), group.end());  // the sentence of each row
    std::vector<std::int32_t> feed(active.size(), c.bos_id);
    for (std::size_t t = 0; !active.empty(); ++t) {
      const Tensor logits =
          model.step(state, Tensor::from_vector(feed, {static_cast<std::int64_t>(feed.size())}).to(device));
      std::vector<std::int32_t> next(active.size());
      for (std::size_t r = 0; r < active.size(); ++r) {
        const std::vector<std::int32_t>& target = targets[static_cast<std::size_t>(active[r])];
        next[r] = t < target.size() ? target[t] : c.eos_id;
      }
      const std::vector<double> values = picked(logits, next);
      std::vector<std::int64_t> kept_rows, kept_active;
      std::vector<std::int32_t> kept_feed;
      for (std::size_t r = 0; r < active.size(); ++r) {
        ForcedScore& s = scores[static_cast<std::size_t>(active[r])];
        s.log_prob += values[r];
        s.token_log_probs.push_back(values[r]);
        if (t < targets[static_cast<std::size_t>(active[r])].size()) {
          kept_rows.push_back(static_cast<std::int64_t>(r));
          kept_active.push_back(active[r]);
          kept_feed.push_back(next[r]);
        }
      }
      if (!kept_active.empty() && kept_active.size() != active.size()) model.select_rows(state, kept_rows, false);
      active = std::move(kept_active);
      feed = std::move(kept_feed);
    }
    done += static_cast<std::int64_t>(group.size());
    if (progress) progress(done);
  }
  return scores;
}

}  // namespace dragoman::decode
