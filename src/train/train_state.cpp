// Training state files (see train_state.h).
#include "train/train_state.h"

#include <cmath>
#include <cstring>
#include <map>

#include "base/error.h"
#include "io/safetensors.h"

namespace dragoman::train {
namespace {

constexpr const char* kFormat = "dragoman-train-state";

io::SafeTensor to_safetensor(const std::string& name, const Tensor& t) {
  const Tensor host = t.to(Device::cpu());
  io::SafeTensor s{name, host.dtype(), host.shape(), std::vector<unsigned char>(host.nbytes())};
  std::memcpy(s.data.data(), host.raw_data(), host.nbytes());
  return s;
}

Tensor from_safetensor(const io::SafeTensor& s) {
  Tensor t = Tensor::empty(s.shape, s.dtype);
  std::memcpy(t.raw_data(), s.data.data(), s.data.size());
  return t;
}

}  // namespace

void save_train_state(const std::string& path, const TrainState& state) {
  io::SafeTensorsFile file;
  file.metadata = {{"format", kFormat},
                   {"format_version", "1"},
                   {"step", std::to_string(state.step)},
                   {"epoch", std::to_string(state.epoch)},
                   {"batch_index", std::to_string(state.batch_index)},
                   {"tokens_seen", std::to_string(state.tokens_seen)},
                   {"elapsed_seconds", std::to_string(state.elapsed_seconds)},
                   {"best_valid_loss", std::to_string(state.best_valid_loss)},
                   {"validations", std::to_string(state.validations)},
                   {"bad_validations", std::to_string(state.bad_validations)},
                   {"best_step", std::to_string(state.best_step)},
                   {"loss_scale_good_steps", std::to_string(state.loss_scale_good_steps)},
                   {"skipped_steps", std::to_string(state.skipped_steps)},
                   {"batches_per_update", std::to_string(state.batches_per_update)},
                   {"budget_updates", std::to_string(state.budget_updates)},
                   {"budget_fixed_at", std::to_string(state.budget_fixed_at)},
                   {"budget_refined_at", std::to_string(state.budget_refined_at)}};
  // The best values must round-trip exactly (they decide "best"): store their bits too.
  for (const auto& [key, value] :
       {std::pair{"best_valid_loss_bits", state.best_valid_loss},
        std::pair{"best_valid_bleu_bits", state.best_valid_bleu}, std::pair{"loss_scale_bits", state.loss_scale},
        std::pair{"budget_minutes_bits", state.budget_minutes}}) {
    std::uint64_t bits = 0;
    std::memcpy(&bits, &value, sizeof bits);
    file.metadata[key] = std::to_string(bits);
  }
  file.tensors.push_back(to_safetensor("adam_m", state.adam_m));
  file.tensors.push_back(to_safetensor("adam_v", state.adam_v));
  if (state.ema.defined()) file.tensors.push_back(to_safetensor("ema", state.ema));
  io::write_safetensors(path, file);
}

TrainState load_train_state(const std::string& path) {
  const io::SafeTensorsFile file = io::read_safetensors(path);
  const auto meta = [&](const char* key) -> const std::string& {
    const auto it = file.metadata.find(key);
    if (it == file.metadata.end()) throw Error(path + ": not a Dragoman training state: no '" + key + "'");
    return it->second;
  };
  if (meta("format") != kFormat)
    throw Error(path + ": not a Dragoman training state (format '" + meta("format") + "')");
  if (meta("format_version") != "1")
    throw Error(path + ": training state version " + meta("format_version") + " is not supported");
  const auto integer = [&](const char* key) {
    try {
      std::size_t used = 0;
      const long long v = std::stoll(meta(key), &used);
      if (used == meta(key).size() && v >= 0) return static_cast<std::int64_t>(v);
    } catch (const std::exception&) {
    }
    throw Error(path + ": training state '" + key + "' is not a non-negative integer");
  };
  TrainState s;
  s.step = integer("step");
  s.epoch = integer("epoch");
  s.batch_index = integer("batch_index");
  s.tokens_seen = integer("tokens_seen");
  s.elapsed_seconds = std::stod(meta("elapsed_seconds"));
  s.validations = integer("validations");
  s.bad_validations = integer("bad_validations");
  s.best_step = integer("best_step");
  const auto real = [&](const char* key, double& value) {
    const std::uint64_t bits = std::stoull(meta(key));
    std::memcpy(&value, &bits, sizeof bits);
  };
  real("best_valid_loss_bits", s.best_valid_loss);
  if (file.metadata.count("best_valid_bleu_bits") != 0) real("best_valid_bleu_bits", s.best_valid_bleu);  // newer files
  if (file.metadata.count("loss_scale_bits") != 0) {  // newer files (older ones never trained in fp16)
    real("loss_scale_bits", s.loss_scale);
    s.loss_scale_good_steps = integer("loss_scale_good_steps");
    s.skipped_steps = integer("skipped_steps");
    if (!(s.loss_scale >= 0) || !std::isfinite(s.loss_scale)) {
      throw Error(path + ": training state 'loss_scale' is not a finite non-negative number");
    }
  }
  if (file.metadata.count("batches_per_update") != 0) s.batches_per_update = integer("batches_per_update");  // newer
  if (file.metadata.count("budget_updates") != 0) {                                                          // newer
    s.budget_updates = integer("budget_updates");
    s.budget_fixed_at = integer("budget_fixed_at");
    real("budget_minutes_bits", s.budget_minutes);
    if (!(s.budget_minutes >= 0) || !std::isfinite(s.budget_minutes)) {
      throw Error(path + ": training state 'budget_minutes' is not a finite non-negative number");
    }
  }
  if (file.metadata.count("budget_refined_at") != 0) s.budget_refined_at = integer("budget_refined_at");  // newer
  const io::SafeTensor* m = file.find("adam_m");
  const io::SafeTensor* v = file.find("adam_v");
  if (m == nullptr || v == nullptr || m->shape != v->shape || m->dtype != v->dtype) {
    throw Error(path + ": training state lacks matching adam_m and adam_v tensors");
  }
  const io::SafeTensor* ema = file.find("ema");
  if (ema != nullptr && (ema->shape != m->shape || ema->dtype != m->dtype)) {
    throw Error(path + ": training state tensor 'ema' does not match adam_m's shape and dtype");
  }
  for (const io::SafeTensor* t : {m, v, ema}) {
    if (t == nullptr) continue;
    if (const std::int64_t bad = t->first_non_finite(); bad >= 0) {
      throw Error(path + ": training state tensor '" + t->name + "' holds a non-finite value at element " +
                  std::to_string(bad) + " (the file is damaged)");
    }
  }
  s.adam_m = from_safetensor(*m);
  s.adam_v = from_safetensor(*v);
  if (ema != nullptr) s.ema = from_safetensor(*ema);
  return s;
}

}  // namespace dragoman::train
