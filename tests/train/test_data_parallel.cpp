// Data-parallel training on CPU workers: N workers x update_freq k compute the update of
// one worker with update_freq N*k (the gradients in float64 to 1e-12; whole runs in f32 within
// reassociation tolerance, metrics included), a run resumes on another number of workers with the
// same batches per update, a worker whose share of the last update is empty contributes nothing,
// and a failing worker ends the run at once with a message naming it.
#include <catch2/catch.hpp>

#include <chrono>
#include <cmath>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "data/batching.h"
#include "data/corpus.h"
#include "model/checkpoint.h"
#include "model/transformer.h"
#include "text/vocabulary.h"
#include "train/communicator.h"
#include "train/run_dir.h"
#include "train/train_testing.h"
#include "train/trainer.h"
#include "train/update.h"

namespace dragoman::train {
namespace {

using Catch::Matchers::Contains;

double relative_difference(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  double diff = 0, norm = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    diff += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
    norm += static_cast<double>(b[i]) * b[i];
  }
  return std::sqrt(diff / norm);
}

// The training losses of a run's metrics (validation lines left out), step by step.
std::vector<double> losses(const std::string& run_dir) {
  std::vector<double> values;
  for (const nlohmann::json& line : test::read_metrics(run_dir)) {
    if (line.contains("loss") && !line.contains("valid_nll")) values.push_back(line["loss"].get<double>());
  }
  return values;
}

// A config where the workers have the most to get right: dropout (streams per global batch),
// label smoothing, clipping (the norm of the summed gradient), epochs crossed (resume_config's,
// with one batch per worker and the dev loss deciding).
TrainConfig parallel_config(const test::ReversalTask& task) {
  TrainConfig c = test::resume_config(task);
  c.training.update_freq = 1;
  c.training.max_tokens = 200;
  c.training.max_steps = 20;
  c.training.log_every = 5;
  c.training.valid_every = 10;
  c.training.valid_bleu = false;
  c.training.best_metric = "nll";
  c.checkpoint.every_steps = 10;
  return c;
}

}  // namespace

TEST_CASE("data parallel: N workers' summed gradients are the one-worker gradient of all N*k batches (f64)",
          "[train]") {
  const test::ReversalTask task("dp-gradients", 120);
  const text::Vocabulary vocab = text::Vocabulary::load(task.vocab);
  TrainConfig config = task.config();
  config.model.dropout = 0.1;
  config.model.label_smoothing = 0.1;
  model::ModelConfig& mc = config.model;
  mc.src_vocab_size = mc.tgt_vocab_size = vocab.size();
  data::CorpusOptions o;
  o.source = task.train.source;
  o.target = task.train.target;
  o.max_length = 12;
  const data::EncodedCorpus corpus = data::load_parallel_corpus(o, vocab, "", 1);
  const auto plan = data::make_token_batches(corpus, 60, 1, 0);
  REQUIRE(plan.size() >= 13);
  const std::uint64_t seed = 5, step = 3;
  for (const int workers : {2, 4, 8}) {
    for (const std::int64_t k : {1, 2}) {
      // At most 13 batches: with 8 workers x 2 the last worker's share is empty.
      const std::int64_t count = std::min<std::int64_t>(workers * k, 13);
      INFO(workers << " workers x update_freq " << k << " (" << count << " batches)");
      std::vector<model::Batch> all;
      std::int64_t tokens = 0;
      for (std::int64_t b = 0; b < count; ++b) {
        all.push_back(data::make_batch(corpus, plan[static_cast<std::size_t>(b)], mc));
        tokens += all.back().target_tokens();
      }
      model::Transformer one(mc, DType::kF64);
      one.initialize(2);
      accumulate_gradients(one, all, true, seed, step * static_cast<std::uint64_t>(workers * k));

      const std::unique_ptr<Communicator> comm =
          make_communicator(std::vector<Device>(static_cast<std::size_t>(workers), Device::cpu()), ProcessGroup{});
      REQUIRE(comm->world_size() == workers);
      REQUIRE(comm->overlaps_backward());
      // Summed all at once after the backward passes, and range by range during them.
      for (const bool overlap : {false, true}) {
        INFO((overlap ? "summed during the backward passes" : "summed after them"));
        std::vector<model::Transformer> replicas;
        std::vector<Tensor> grads;
        for (int r = 0; r < workers; ++r) {
          replicas.emplace_back(mc, DType::kF64);
          replicas.back().initialize(2);
          grads.push_back(replicas.back().parameters().grads());
        }
        if (overlap) comm->begin_ranges(grads);
        for (int r = 0; r < workers; ++r) {
          std::vector<model::Batch> share;
          for (std::int64_t j = 0; j < k && r * k + j < count; ++j)
            share.push_back(all[static_cast<std::size_t>(r * k + j)]);
          const std::uint64_t stream = (step * static_cast<std::uint64_t>(workers) + static_cast<std::uint64_t>(r)) *
                                       static_cast<std::uint64_t>(k);
          model::GradientReady ready;
          if (overlap) {
            ready = [&, r](const model::GradientRange& range) {
              comm->range_ready(static_cast<std::size_t>(r), range.first, range.second);
            };
          }
          accumulate_gradients(replicas[static_cast<std::size_t>(r)], share, true, seed, stream, 1.0, nullptr, tokens,
                               ready);
        }
        if (overlap) {
          comm->finish_ranges();
        } else {
          comm->all_reduce_sum(grads);
        }
        const std::vector<double> expected = one.parameters().grads().to_vector<double>();
        for (int r = 0; r < workers; ++r) {
          const std::vector<double> got =
              replicas[static_cast<std::size_t>(r)].parameters().grads().to_vector<double>();
          double worst = 0, scale = 0;
          for (std::size_t i = 0; i < got.size(); ++i) {
            worst = std::max(worst, std::abs(got[i] - expected[i]));
            scale = std::max(scale, std::abs(expected[i]));
          }
          CHECK(worst <= 1e-12 * scale);
          if (r > 0) CHECK(got == replicas[0].parameters().grads().to_vector<double>());  // every worker alike
        }
      }
    }
  }
}

TEST_CASE("data parallel: 1, 2, 4 and 8 CPU workers train like one worker with update_freq N (20 updates)", "[train]") {
  const test::ReversalTask task("dp-train", 300);
  const TrainConfig base = parallel_config(task);
  for (const int workers : {2, 4, 8}) {
    INFO(workers << " workers");
    TrainConfig single = base;
    single.training.update_freq = workers;
    const std::string one = "one-" + std::to_string(workers);
    train(single, task.options(one));
    TrainConfig parallel = base;
    parallel.training.devices = "cpu:" + std::to_string(workers);
    const std::string many = "workers-" + std::to_string(workers);
    const TrainResult result = train(parallel, task.options(many));
    CHECK(result.step == 20);
    const std::vector<double> expected = losses(task.options(one).run_dir), got = losses(task.options(many).run_dir);
    REQUIRE(got.size() == expected.size());
    REQUIRE(got.size() == 4);
    for (std::size_t i = 0; i < got.size(); ++i) CHECK(got[i] == Approx(expected[i]).epsilon(1e-5));
    CHECK(relative_difference(test::weights(checkpoint_model_path(task.options(many).run_dir, 20)),
                              test::weights(checkpoint_model_path(task.options(one).run_dir, 20))) < 1e-3);
  }
  // One worker is the plain run: cpu:1 equals cpu.
  TrainConfig cpu1 = base;
  cpu1.training.devices = "cpu:1";
  train(cpu1, task.options("cpu1"));
  train(base, task.options("cpu"));
  CHECK(test::weights(checkpoint_model_path(task.options("cpu1").run_dir, 20)) ==
        test::weights(checkpoint_model_path(task.options("cpu").run_dir, 20)));
}

TEST_CASE("data parallel: 2 CPU workers under Muon train like one worker with update_freq 2", "[train]") {
  // Every worker applies Muon to the same summed gradients: the replicas stay alike, so the losses
  // (computed by both workers' replicas) follow the one-worker run.
  const test::ReversalTask task("dp-muon", 300);
  TrainConfig single = parallel_config(task);
  single.training.optimizer = "muon";
  single.training.update_freq = 2;
  train(single, task.options("one"));
  TrainConfig parallel = parallel_config(task);
  parallel.training.optimizer = "muon";
  parallel.training.devices = "cpu:2";
  CHECK(train(parallel, task.options("two")).step == 20);
  const std::vector<double> expected = losses(task.options("one").run_dir), got = losses(task.options("two").run_dir);
  REQUIRE(got.size() == 4);
  REQUIRE(got.size() == expected.size());
  for (std::size_t i = 0; i < got.size(); ++i) CHECK(got[i] == Approx(expected[i]).epsilon(1e-5));
  CHECK(relative_difference(test::weights(checkpoint_model_path(task.options("two").run_dir, 20)),
                            test::weights(checkpoint_model_path(task.options("one").run_dir, 20))) < 1e-3);
}

TEST_CASE("data parallel: a run resumes on another number of workers with the same batches per update", "[train]") {
  const test::ReversalTask task("dp-resume", 300);
  TrainConfig straight = parallel_config(task);
  straight.training.update_freq = 4;
  train(straight, task.options("straight"));

  TrainConfig four = parallel_config(task);
  four.training.devices = "cpu:4";
  four.training.max_steps = 10;
  CHECK(train(four, task.options("moved")).step == 10);
  // Another total of batches per update is refused, naming both.
  TrainConfig wrong = parallel_config(task);
  CHECK_THROWS_WITH(train(wrong, task.options("moved")),
                    Contains("trains with 4 batches per update") && Contains("(1 workers x update_freq 1)"));
  const TrainResult resumed = train(straight, task.options("moved"));
  CHECK(resumed.resumed_from == 10);
  CHECK(resumed.step == 20);
  CHECK(relative_difference(test::weights(checkpoint_model_path(task.options("moved").run_dir, 20)),
                            test::weights(checkpoint_model_path(task.options("straight").run_dir, 20))) < 1e-3);
  const std::vector<double> expected = losses(task.options("straight").run_dir),
                            got = losses(task.options("moved").run_dir);
  REQUIRE(got.size() == expected.size());
  for (std::size_t i = 0; i < got.size(); ++i) CHECK(got[i] == Approx(expected[i]).epsilon(1e-5));
}

TEST_CASE("data parallel: workers with an empty share of the last update contribute nothing", "[train]") {
  const test::ReversalTask task("dp-empty-share", 300);
  TrainConfig config = parallel_config(task);
  config.training.max_steps = 0;
  config.training.max_epochs = 1;  // the epoch's last update has fewer batches than workers
  const std::int64_t batches =
      static_cast<std::int64_t>(data::make_token_batches(data::load_parallel_corpus(
                                                             [&] {
                                                               data::CorpusOptions o;
                                                               o.source = task.train.source;
                                                               o.target = task.train.target;
                                                               o.max_length = config.data.max_length;
                                                               o.max_ratio = config.data.max_ratio;
                                                               return o;
                                                             }(),
                                                             text::Vocabulary::load(task.vocab), "", 1),
                                                         config.training.max_tokens, config.training.seed, 0)
                                    .size());
  REQUIRE(batches % 8 != 0);
  config.training.devices = "cpu:8";
  const TrainResult result = train(config, task.options("eight"));
  CHECK(result.step == (batches + 7) / 8);
  TrainConfig single = config;
  single.training.devices = "cpu";
  single.training.update_freq = 8;
  train(single, task.options("one"));
  CHECK(relative_difference(test::weights(checkpoint_model_path(task.options("eight").run_dir, result.step)),
                            test::weights(checkpoint_model_path(task.options("one").run_dir, result.step))) < 1e-5);
}

TEST_CASE("data parallel: a worker that fails ends the run at once, naming it, and the last checkpoint stays",
          "[train]") {
  const test::ReversalTask task("dp-failure", 300);
  TrainConfig config = parallel_config(task);
  config.training.devices = "cpu:4";
  config.checkpoint.every_steps = 2;
  TrainOptions options = task.options("run");
  options.fail_worker_at = {2, 5};
  const auto start = std::chrono::steady_clock::now();
  CHECK_THROWS_WITH(train(config, options),
                    Contains("worker 2 of 4 (cpu) failed at update 5") && Contains("TrainOptions::fail_worker_at"));
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(60));
  CHECK(checkpoint_steps(options.run_dir) == std::vector<std::int64_t>{2, 4});
  options.fail_worker_at = {-1, -1};
  CHECK(train(config, options).resumed_from == 4);
}

}  // namespace dragoman::train
