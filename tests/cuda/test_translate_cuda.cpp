// Translating on a GPU (issue #15) against the CPU, on a model trained here (the reversal task):
// greedy translations identical in f32, beam 4 n-best lists identical with scores within 1e-4, and
// bf16/fp16 translations scored against the f32 ones (BLEU >= 95).
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "decode/translator.h"
#include "eval/bleu.h"
#include "eval/corpus.h"
#include "model/checkpoint.h"
#include "text/vocabulary.h"
#include "train/run_dir.h"
#include "train/train_testing.h"
#include "train/trainer.h"

namespace dragoman {
namespace {

// A model that has learned the reversal task (on the CPU), and its dev sentences.
struct TrainedModel {
  test::ReversalTask task{"cuda-translate", 2000};
  std::string path;
  TrainedModel() {
    TrainConfig config = task.config();
    config.training.max_steps = 400;
    train(config, task.options("run"));
    path = checkpoint_model_path(task.options("run").run_dir, 400);
  }
};

}  // namespace

TEST_CASE("translations on a GPU equal the CPU's (f32), and 16-bit ones score BLEU >= 95 against them",
          "[cuda][translate]") {
  const TrainedModel trained;
  const std::vector<std::string> sources = test::read_lines(trained.task.valid.source);
  const Vocabulary vocabulary = Vocabulary::load(trained.task.vocab);
  const auto run = [&](Device device, DType precision, int beam, int nbest) {
    const Transformer model = load_model(trained.path, ParameterPrecision::decoding(precision), nullptr, device);
    TranslatorOptions o;
    o.search.beam = beam;
    o.search.nbest = nbest;
    return Translator(model, vocabulary, o).translate(sources);
  };
  const Device gpu = Device::cuda(0);
  // Greedy: the same tokens.
  const std::vector<Translation> cpu_greedy = run(Device::cpu(), DType::kF32, 1, 1);
  const std::vector<Translation> gpu_greedy = run(gpu, DType::kF32, 1, 1);
  REQUIRE(gpu_greedy.size() == cpu_greedy.size());
  for (std::size_t i = 0; i < cpu_greedy.size(); ++i) {
    INFO("line " << i);
    CHECK(gpu_greedy[i].nbest.front().tokens == cpu_greedy[i].nbest.front().tokens);
  }
  // Beam 4, 4-best: the same hypotheses in the same order, scores within 1e-4.
  const std::vector<Translation> cpu_beam = run(Device::cpu(), DType::kF32, 4, 4);
  const std::vector<Translation> gpu_beam = run(gpu, DType::kF32, 4, 4);
  for (std::size_t i = 0; i < cpu_beam.size(); ++i) {
    INFO("line " << i);
    REQUIRE(gpu_beam[i].nbest.size() == cpu_beam[i].nbest.size());
    for (std::size_t j = 0; j < cpu_beam[i].nbest.size(); ++j) {
      CHECK(gpu_beam[i].nbest[j].tokens == cpu_beam[i].nbest[j].tokens);
      CHECK(gpu_beam[i].nbest[j].score == Approx(cpu_beam[i].nbest[j].score).margin(1e-4));
    }
  }
  // bf16 and fp16 on the GPU, scored against the f32 translations.
  eval::Corpus corpus;
  corpus.refs.emplace_back();
  for (const Translation& t : cpu_beam) corpus.refs[0].emplace_back(t.nbest.front().text);
  for (const DType precision : {DType::kBF16, DType::kF16}) {
    INFO(dtype_name(precision));
    const std::vector<Translation> low = run(gpu, precision, 4, 1);
    corpus.hyps.clear();
    for (const Translation& t : low) corpus.hyps.emplace_back(t.nbest.front().text);
    CHECK(eval::corpus_score(eval::Bleu(eval::BleuOptions{}), corpus, 1).score >= 95);
  }
}

}  // namespace dragoman
