// The data-parallel workers of a run (see trainer_impl.h): replicas, the batches of an update, the
// gradients summed over all workers, the agreement on stopping.
#include "train/trainer_impl.h"

#include <spdlog/spdlog.h>

#include "base/error.h"
#include "base/parallel.h"
#include "data/batching.h"
#include "device/cpu/threads.h"
#include "train/accumulation.h"
#include "train/update.h"

namespace dragoman::train::detail {

model::Batch Trainer::on_device(model::Batch batch, Device device) const {
  return device.is_cpu() ? batch : batch.to(device, config_.model);
}

// A barrier of the processes: the others wait here until process 0 has prepared the run directory
// (vocabulary, corpus caches, damaged checkpoints set aside), then read what it wrote.
void Trainer::wait_for_writer() { comm_->all_reduce_host({0.0}, ReduceOp::kMax); }

// The run's batches per update are world size x update_freq, derived from tokens_per_update (or as
// given) at every start: a checkpoint made with 8 workers and update_freq 1 resumes on 1 worker with
// update_freq 8 (and back), never with another total. Settles config_.training.update_freq for the
// loop and logs the batch.
void Trainer::settle_batches_per_update() {
  const std::int64_t world = comm_->world_size();
  const Accumulation a = resolve_accumulation(config_.training, world);
  if (state_.batches_per_update > 0 && state_.batches_per_update != a.batches) {
    const bool divides = state_.batches_per_update % world == 0;
    const std::string fix =
        !divides    ? fmt::format("it cannot continue on {} workers (use a number of workers that divides {})", world,
                                  state_.batches_per_update)
        : a.derived ? fmt::format("set training.tokens_per_update to the run's {}",
                                  state_.batches_per_update * config_.training.max_tokens)
                    : fmt::format("set training.update_freq to {} / {} workers", state_.batches_per_update, world);
    throw Error(fmt::format(
        "run directory {} trains with {} batches per update (workers x update_freq), this command with {} ({} "
        "workers x update_freq {}): {}, or use --overwrite to start afresh",
        run_, state_.batches_per_update, a.batches, world, a.update_freq, fix));
  }
  state_.batches_per_update = a.batches;
  config_.training.update_freq = a.update_freq;
  spdlog::info("train: {}", describe(a, config_.training, world));
}

// The workers of this process: worker 0 is model_ (state_'s moments), worker w > 0 replicas_[w - 1].
model::Transformer& Trainer::worker_model(std::size_t w) { return w == 0 ? *model_ : *replicas_[w - 1].model; }
Tensor& Trainer::worker_adam_m(std::size_t w) { return w == 0 ? state_.adam_m : replicas_[w - 1].adam_m; }
Tensor& Trainer::worker_adam_v(std::size_t w) { return w == 0 ? state_.adam_v : replicas_[w - 1].adam_v; }

// Runs fn(w) for every local worker at once, each in its own thread (worker 0 in this one), with
// the compute threads split between CPU workers. The first exception is rethrown after all ended.
void Trainer::for_each_worker(const std::function<void(std::size_t)>& fn) {
  const std::size_t n = devices_.size();
  parallel_for(n, static_cast<int>(n), [&](std::size_t begin, std::size_t end) {
    if (begin != 0) cpu::use_compute_threads_here(worker_threads_);
    for (std::size_t w = begin; w < end; ++w) fn(w);
  });
}

// The communicator and the replicas of worker 0's model and moments on the other local devices.
void Trainer::start_workers() {
  const model::ParameterSet& params = model_->parameters();
  for (std::size_t w = 1; w < devices_.size(); ++w) {
    Replica r;
    r.model = std::make_unique<model::Transformer>(config_.model, precision_, devices_[w]);
    r.model->parameters().values().copy_from(params.values());
    r.model->refresh_compute_weights();
    r.adam_m = Tensor::empty({state_.adam_m.numel()}, DType::kF32, devices_[w]);  // own copies: to() of
    r.adam_v = Tensor::empty({state_.adam_v.numel()}, DType::kF32, devices_[w]);  // the same device shares
    r.adam_m.copy_from(state_.adam_m);
    r.adam_v.copy_from(state_.adam_v);
    replicas_.push_back(std::move(r));
  }
  const int world = comm_->world_size();
  if (world > 1) {
    const int cpu_workers = device_.is_cpu() ? static_cast<int>(devices_.size()) : 0;
    spdlog::info("train: {} data-parallel workers ({} process{} x {}: {}){}", world, comm_->processes(),
                 comm_->processes() == 1 ? "" : "es", devices_.size(), config_.training.devices,
                 cpu_workers > 1 ? fmt::format(", {} compute threads each", worker_threads_) : std::string());
  }
}

// The batches of an epoch, in the order they are used (the curriculum's in the first).
std::vector<std::vector<std::int64_t>> Trainer::epoch_plan(std::int64_t epoch) const {
  const TrainingConfig& t = config_.training;
  const data::Curriculum curriculum{config_.data.curriculum, config_.data.curriculum_start};
  return data::make_token_batches(train_, t.max_tokens, t.seed, epoch, curriculum);
}

// The global batches of the next update: world_size() x update_freq of them from the plan, crossing
// into the next epoch (and rebuilding `plan`) when this one ends; fewer at the end of the last epoch.
std::vector<std::vector<std::int64_t>> Trainer::next_update(std::vector<std::vector<std::int64_t>>& plan) {
  const TrainingConfig& t = config_.training;
  const std::int64_t wanted = t.update_freq * comm_->world_size();
  std::vector<std::vector<std::int64_t>> update;
  while (static_cast<std::int64_t>(update.size()) < wanted) {
    if (state_.batch_index >= static_cast<std::int64_t>(plan.size())) {
      ++state_.epoch;
      state_.batch_index = 0;
      if (t.max_epochs > 0 && state_.epoch >= t.max_epochs) break;
      plan = epoch_plan(state_.epoch);
      if (writer_) spdlog::info("train: epoch {}", state_.epoch + 1);
    }
    update.push_back(plan[static_cast<std::size_t>(state_.batch_index++)]);
  }
  return update;
}

// One update's gradients on every local worker, then summed over all workers: worker g (global rank)
// takes the update's batches g*k .. g*k + k - 1 (k = update_freq) with dropout streams
// (step * world + g) * k + j, and normalises by the whole update's target tokens, so the summed
// gradient is the one-worker gradient of all world x k batches. Loss sums go to `sums` (per worker).
std::int64_t Trainer::compute_gradients(const std::vector<std::vector<std::int64_t>>& update, double loss_scale,
                                        const std::vector<Tensor>& sums) {
  const TrainingConfig& t = config_.training;
  std::int64_t tokens = 0;
  for (const auto& pairs : update) {
    for (const std::int64_t pair : pairs) tokens += train_.tgt_length(pair) + 1;  // the target with its EOS
  }
  const auto world = static_cast<std::uint64_t>(comm_->world_size());
  // The gradients are summed range by range while the last backward pass goes on (where the
  // communicator can), or all at once after it.
  std::vector<Tensor> grads;
  for (std::size_t w = 0; w < devices_.size(); ++w) grads.push_back(worker_model(w).parameters().grads());
  const bool overlap = comm_->overlaps_backward();
  if (overlap) comm_->begin_ranges(grads);
  try {
    for_each_worker([&](std::size_t w) {
      const std::int64_t rank = comm_->first_rank() + static_cast<std::int64_t>(w);
      std::vector<model::Batch> batches;
      for (std::int64_t j = 0; j < t.update_freq; ++j) {
        const std::int64_t index = rank * t.update_freq + j;
        if (index >= static_cast<std::int64_t>(update.size())) break;  // the last update of the last epoch
        batches.push_back(
            on_device(data::make_batch(train_, update[static_cast<std::size_t>(index)], config_.model), devices_[w]));
      }
      const std::uint64_t stream =
          (static_cast<std::uint64_t>(state_.step) * world + static_cast<std::uint64_t>(rank)) *
          static_cast<std::uint64_t>(t.update_freq);
      Tensor worker_sums = sums[w];
      try {
        if (options_.fail_worker_at.first == rank && options_.fail_worker_at.second == state_.step + 1) {
          throw Error("the failure TrainOptions::fail_worker_at asked for (tests)");
        }
        model::GradientReady ready;
        if (overlap)
          ready = [&, w](const model::GradientRange& range) { comm_->range_ready(w, range.first, range.second); };
        accumulate_gradients(worker_model(w), batches, true, t.seed, stream, loss_scale, &worker_sums, tokens, ready);
      } catch (const OutOfMemory& e) {
        fail_out_of_memory(e, "update " + std::to_string(state_.step + 1) +
                                  (comm_->world_size() > 1 ? " (worker " + std::to_string(rank) + ")" : ""));
      } catch (const Error& e) {
        if (comm_->world_size() == 1) throw;
        throw Error(fmt::format("train: worker {} of {} ({}) failed at update {}: {}", rank, comm_->world_size(),
                                devices_[w].str(), state_.step + 1, e.what()));
      }
    });
  } catch (const std::exception& e) {
    // Sums the other workers started wait for this one's ranges forever: NCCL's abort ends them.
    if (overlap) comm_->abort(e.what());
    throw;
  }
  if (overlap) {
    comm_->finish_ranges();
  } else {
    comm_->all_reduce_sum(grads);
  }
  return tokens;
}

// What only one process can know, made common to all at the start of each update: a signal that
// reached any process (its number), and the writer's early stop, spent time budget and the count
// it fixed for the budget (trainer_budget.cpp). One process: nothing to exchange.
void Trainer::agree_on_stop(TrainResult& result) {
  double signal = stop_requested() ? options_.stop_signal->load() : 0;
  double early = result.early_stopped ? 1 : 0;
  double spent = writer_ && budget_spent() ? 1 : 0;
  if (comm_->processes() > 1) {
    // (the budget's values are the writer's, the others send 0: a count fixed again can be smaller)
    const double w = writer_ ? 1.0 : 0.0;
    const std::vector<double> agreed =
        comm_->all_reduce_host({signal, early, spent, w * static_cast<double>(state_.budget_updates),
                                w * static_cast<double>(state_.budget_fixed_at), w * state_.budget_minutes,
                                w * static_cast<double>(state_.budget_refined_at)},
                               ReduceOp::kMax);
    signal = agreed[0];
    early = agreed[1];
    spent = agreed[2];
    state_.budget_updates = static_cast<std::int64_t>(agreed[3]);
    state_.budget_fixed_at = static_cast<std::int64_t>(agreed[4]);
    state_.budget_minutes = agreed[5];
    state_.budget_refined_at = static_cast<std::int64_t>(agreed[6]);
  }
  result.stop_signal = static_cast<int>(signal);
  result.interrupted = signal > 0;
  result.early_stopped = early > 0;
  result.budget_spent = spent > 0 && !result.interrupted;
}

}  // namespace dragoman::train::detail
