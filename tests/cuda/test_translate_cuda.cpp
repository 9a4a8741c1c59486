// Translating on a GPU against the CPU, on a model trained here (the reversal task):
// greedy translations identical in f32 (but for rare near-ties), beam 4 n-best lists the same with
// scores within 1e-4 (near-ties may swap), and
// bf16/fp16 translations scored against the f32 ones (BLEU >= 95). An ensemble of the model with
// itself on the GPU decodes as the model alone, and the cross-attention recorded there (alignments)
// is the CPU's within 1e-4. Sentences joining a running search on the GPU (serve's continuous
// batching: per-row positions, the caches scattered, states appended on the device) find what the
// GPU finds for them in one batch. Force decoding (dragoman score) on the GPU gives the CPU's scores
// within 1e-4, and each the beam search's log-probability of the translation it scores. Target
// prefixes and constraints hold on the GPU (the forced and owed tokens read from the host's copy
// of the log-probabilities) with the CPU's outputs but for near-ties, and sampling there is
// reproducible, its log-probabilities the model's, top-k 1 greedy decoding.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "decode/beam_search.h"
#include "decode/decoding_model.h"
#include "decode/scorer.h"
#include "decode/shortlist.h"
#include "decode/translator.h"
#include "eval/bleu.h"
#include "eval/corpus_score.h"
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
    train::TrainConfig config = task.config();
    config.training.max_steps = 400;
    train::train(config, task.options("run"));
    path = train::checkpoint_model_path(task.options("run").run_dir, 400);
  }
};

// Trained once for the test cases of this file.
const TrainedModel& trained_model() {
  static const TrainedModel trained;
  return trained;
}

// The trained model's dev sentences, encoded.
std::vector<std::vector<std::int32_t>> dev_sources() {
  const TrainedModel& trained = trained_model();
  const text::Vocabulary vocabulary = text::Vocabulary::load(trained.task.vocab);
  std::vector<std::vector<std::int32_t>> sources;
  for (const std::string& line : test::read_lines(trained.task.valid.source))
    sources.push_back(vocabulary.encode(line));
  return sources;
}

// The trained model in f32 on `device`.
model::Transformer trained_f32(Device device) {
  return model::load_model(trained_model().path, model::ParameterPrecision::decoding(DType::kF32), nullptr, device);
}

}  // namespace

TEST_CASE("translations on a GPU equal the CPU's (f32), and 16-bit ones score BLEU >= 95 against them",
          "[cuda][translate]") {
  const TrainedModel& trained = trained_model();
  const std::vector<std::string> sources = test::read_lines(trained.task.valid.source);
  const text::Vocabulary vocabulary = text::Vocabulary::load(trained.task.vocab);
  const auto run = [&](Device device, DType precision, int beam, int nbest) {
    const model::Transformer model =
        model::load_model(trained.path, model::ParameterPrecision::decoding(precision), nullptr, device);
    decode::TranslatorOptions o;
    o.search.beam = beam;
    o.search.nbest = nbest;
    return decode::Translator(model, vocabulary, o).translate(sources);
  };
  const Device gpu = Device::cuda(0);
  // Greedy: the same tokens. The GPU's log-probabilities differ from the CPU's in the last bits
  // (other summation orders), so a near-tie between two tokens may go the other way: at most one
  // line in 50 may differ.
  const std::vector<decode::Translation> cpu_greedy = run(Device::cpu(), DType::kF32, 1, 1);
  const std::vector<decode::Translation> gpu_greedy = run(gpu, DType::kF32, 1, 1);
  REQUIRE(gpu_greedy.size() == cpu_greedy.size());
  std::size_t greedy_differ = 0;
  for (std::size_t i = 0; i < cpu_greedy.size(); ++i) {
    if (gpu_greedy[i].nbest.front().tokens != cpu_greedy[i].nbest.front().tokens) {
      std::printf("greedy line %zu differs: GPU '%s', CPU '%s'\n", i, gpu_greedy[i].nbest.front().text.c_str(),
                  cpu_greedy[i].nbest.front().text.c_str());
      ++greedy_differ;
    }
  }
  CHECK(greedy_differ * 50 <= cpu_greedy.size());
  // Beam 4, 4-best: the j-th scores within 1e-4, and each CPU hypothesis in the GPU's list with its
  // score (in any order among near-ties), unless it sits at the cut: within 1e-4 of the GPU's last,
  // where a near-tie with a fifth hypothesis may have taken its place.
  constexpr double kScoreTolerance = 1e-4;
  const std::vector<decode::Translation> cpu_beam = run(Device::cpu(), DType::kF32, 4, 4);
  const std::vector<decode::Translation> gpu_beam = run(gpu, DType::kF32, 4, 4);
  std::size_t reordered = 0;
  for (std::size_t i = 0; i < cpu_beam.size(); ++i) {
    INFO("line " << i);
    const auto& cpu_list = cpu_beam[i].nbest;
    const auto& gpu_list = gpu_beam[i].nbest;
    REQUIRE(gpu_list.size() == cpu_list.size());
    for (std::size_t j = 0; j < cpu_list.size(); ++j) {
      INFO("hypothesis " << j << ": " << cpu_list[j].text);
      CHECK(gpu_list[j].score == Approx(cpu_list[j].score).margin(kScoreTolerance));
      reordered += gpu_list[j].tokens != cpu_list[j].tokens;
      const auto same =
          std::find_if(gpu_list.begin(), gpu_list.end(), [&](const auto& h) { return h.tokens == cpu_list[j].tokens; });
      if (same != gpu_list.end()) {
        CHECK(same->score == Approx(cpu_list[j].score).margin(kScoreTolerance));
      } else {
        CHECK(cpu_list[j].score == Approx(gpu_list.back().score).margin(kScoreTolerance));
      }
    }
  }
  std::printf("beam 4: %zu of the CPU's hypotheses at another rank on the GPU (near-ties)\n", reordered);
  // bf16 and fp16 on the GPU, scored against the f32 translations.
  eval::Corpus corpus;
  corpus.refs.emplace_back();
  for (const decode::Translation& t : cpu_beam) corpus.refs[0].emplace_back(t.nbest.front().text);
  for (const DType precision : {DType::kBF16, DType::kF16}) {
    INFO(dtype_name(precision));
    const std::vector<decode::Translation> low = run(gpu, precision, 4, 1);
    corpus.hyps.clear();
    for (const decode::Translation& t : low) corpus.hyps.emplace_back(t.nbest.front().text);
    CHECK(eval::corpus_score(eval::Bleu(eval::BleuOptions{}), corpus, 1).score >= 95);
  }
}

TEST_CASE("an ensemble and recorded cross-attention on a GPU", "[cuda][translate]") {
  const std::vector<std::vector<std::int32_t>> sources = dev_sources();
  const model::Transformer cpu_model = trained_f32(Device::cpu());
  const model::Transformer gpu_model = trained_f32(Device::cuda(0));
  decode::SearchOptions o;
  o.beam = 4;
  o.nbest = 2;
  o.record_attention = true;
  const auto alone = beam_search(gpu_model, sources, o);
  const auto twice = beam_search(decode::EnsembleDecoding({&gpu_model, &gpu_model}, {"a", "a"}), sources, o);
  const auto on_cpu = beam_search(cpu_model, sources, o);
  REQUIRE(alone.size() == sources.size());
  std::size_t compared = 0;
  for (std::size_t i = 0; i < sources.size(); ++i) {
    INFO("line " << i);
    REQUIRE(twice[i].size() == alone[i].size());
    for (std::size_t j = 0; j < alone[i].size(); ++j) {
      CHECK(twice[i][j].tokens == alone[i][j].tokens);
      CHECK(twice[i][j].log_prob == alone[i][j].log_prob);  // (x + x) * 0.5 == x on the device too
      CHECK(twice[i][j].attention == alone[i][j].attention);
    }
    const decode::Hypothesis& g = alone[i].front();
    const decode::Hypothesis& c = on_cpu[i].front();
    if (g.tokens != c.tokens) continue;  // a near-tie (the test above bounds them)
    ++compared;
    REQUIRE(g.attention.size() == c.attention.size());
    for (std::size_t t = 0; t < g.attention.size(); ++t) {
      REQUIRE(g.attention[t].size() == sources[i].size());
      for (std::size_t s = 0; s < g.attention[t].size(); ++s)
        CHECK(g.attention[t][s] == Approx(c.attention[t][s]).margin(1e-4));
    }
  }
  CHECK(compared * 50 >= sources.size() * 49);
}

TEST_CASE("a joining beam search on a GPU finds what one batch finds there", "[cuda][translate]") {
  const std::vector<std::vector<std::int32_t>> sources = dev_sources();
  const model::Transformer gpu_model = trained_f32(Device::cuda(0));
  const decode::TransformerDecoding decoding(gpu_model);
  decode::SearchOptions o;
  o.beam = 4;
  o.record_attention = true;
  const auto batched = beam_search(decoding, sources, o);
  // One sentence joins every step (a few at once every fifth), the rest when the search empties.
  decode::BeamSearch search(decoding, o);
  std::vector<std::vector<decode::Hypothesis>> joined(sources.size());
  std::size_t next = 0;
  while (next < sources.size() || !search.empty()) {
    const std::size_t count = next % 5 == 0 ? 3 : 1;
    std::vector<std::vector<std::int32_t>> add;
    std::vector<std::int64_t> ids;
    for (; next < sources.size() && add.size() < count; ++next) {
      add.push_back(sources[next]);
      ids.push_back(static_cast<std::int64_t>(next));
    }
    search.add(add, ids);
    for (auto& [id, hypotheses] : search.step()) joined[static_cast<std::size_t>(id)] = std::move(hypotheses);
  }
  std::size_t same = 0;
  for (std::size_t i = 0; i < sources.size(); ++i) {
    INFO("line " << i);
    REQUIRE(!joined[i].empty());
    if (joined[i].front().tokens != batched[i].front().tokens) continue;  // a near-tie (cuBLAS by batch size)
    ++same;
    CHECK(joined[i].front().log_prob == Approx(batched[i].front().log_prob).margin(1e-4));
    REQUIRE(joined[i].front().attention.size() == batched[i].front().attention.size());
    for (std::size_t t = 0; t < joined[i].front().attention.size(); ++t) {
      for (std::size_t s = 0; s < sources[i].size(); ++s)
        CHECK(joined[i].front().attention[t][s] == Approx(batched[i].front().attention[t][s]).margin(1e-4));
    }
  }
  CHECK(same * 50 >= sources.size() * 49);
}

TEST_CASE("force decoding on a GPU scores as the CPU, and as beam search scored its translations",
          "[cuda][translate]") {
  const std::vector<std::vector<std::int32_t>> sources = dev_sources();
  const model::Transformer cpu_model = trained_f32(Device::cpu());
  const model::Transformer gpu_model = trained_f32(Device::cuda(0));
  decode::SearchOptions o;
  o.beam = 4;
  const auto found = beam_search(gpu_model, sources, o);
  std::vector<std::vector<std::int32_t>> targets;
  for (const auto& hypotheses : found) targets.push_back(hypotheses.front().tokens);
  const auto on_gpu = force_decode(decode::TransformerDecoding(gpu_model), sources, targets, 2048, 64);
  const auto on_cpu = force_decode(decode::TransformerDecoding(cpu_model), sources, targets, 2048, 64);
  REQUIRE(on_gpu.size() == sources.size());
  for (std::size_t i = 0; i < sources.size(); ++i) {
    INFO("line " << i);
    CHECK(on_gpu[i].log_prob == Approx(on_cpu[i].log_prob).margin(1e-4));
    CHECK(on_gpu[i].log_prob == Approx(found[i].front().log_prob).margin(1e-4));
    REQUIRE(on_gpu[i].token_log_probs.size() == targets[i].size() + 1);
  }
}

TEST_CASE("target prefixes, constraints and sampling on a GPU", "[cuda][translate]") {
  const std::vector<std::vector<std::int32_t>> sources = dev_sources();
  const model::Transformer cpu_model = trained_f32(Device::cpu());
  const model::Transformer gpu_model = trained_f32(Device::cuda(0));
  // Each line: its own first token as the prefix, and its last token (then its last two) as
  // constraints, which a reversal puts at the output's start rather than where they are owed.
  std::vector<decode::TargetGuide> guides;
  for (const auto& source : sources) {
    decode::TargetGuide guide;
    guide.prefix = {source.front()};
    guide.constraints = {{source.back()}};
    if (source.size() >= 3) guide.constraints.push_back({source[source.size() - 3], source[source.size() - 2]});
    guides.push_back(guide);
  }
  decode::SearchOptions o;
  o.beam = o.nbest = 4;
  const auto on_gpu = beam_search(gpu_model, sources, o, &guides);
  const auto on_cpu = beam_search(cpu_model, sources, o, &guides);
  std::size_t same = 0;
  for (std::size_t i = 0; i < sources.size(); ++i) {
    INFO("line " << i);
    REQUIRE(!on_gpu[i].empty());
    for (const decode::Hypothesis& h : on_gpu[i]) {
      REQUIRE(!h.tokens.empty());
      CHECK(h.tokens.front() == guides[i].prefix.front());
      for (const auto& phrase : guides[i].constraints) {
        CHECK(std::search(h.tokens.begin(), h.tokens.end(), phrase.begin(), phrase.end()) != h.tokens.end());
      }
    }
    if (on_gpu[i].front().tokens != on_cpu[i].front().tokens) continue;  // a near-tie
    ++same;
    CHECK(on_gpu[i].front().log_prob == Approx(on_cpu[i].front().log_prob).margin(1e-4));
  }
  CHECK(same * 50 >= sources.size() * 49);

  decode::SearchOptions sampled;
  sampled.beam = sampled.nbest = 3;
  sampled.sampling.enabled = true;
  sampled.sampling.temperature = 1.5;
  sampled.sampling.seed = 7;
  const auto first = beam_search(gpu_model, sources, sampled);
  const auto again = beam_search(gpu_model, sources, sampled);
  std::vector<std::vector<std::int32_t>> sample_sources, samples;
  for (std::size_t i = 0; i < sources.size(); ++i) {
    REQUIRE(first[i].size() == again[i].size());
    for (std::size_t j = 0; j < first[i].size(); ++j) {
      CHECK(first[i][j].tokens == again[i][j].tokens);  // the same batch on the same GPU
      sample_sources.push_back(sources[i]);
      samples.push_back(first[i][j].tokens);
    }
  }
  const auto scored = force_decode(decode::TransformerDecoding(gpu_model), sample_sources, samples, 2048, 64);
  std::size_t k = 0;
  for (std::size_t i = 0; i < sources.size(); ++i) {
    for (const decode::Hypothesis& h : first[i]) CHECK(h.log_prob == Approx(scored[k++].log_prob).margin(1e-4));
  }
  decode::SearchOptions top1 = sampled;
  top1.beam = top1.nbest = 1;
  top1.sampling.top_k = 1;
  decode::SearchOptions greedy;
  greedy.beam = 1;
  const auto sampled_top1 = beam_search(gpu_model, sources, top1);
  const auto greedy_gpu = beam_search(gpu_model, sources, greedy);
  for (std::size_t i = 0; i < sources.size(); ++i) CHECK(sampled_top1[i][0].tokens == greedy_gpu[i][0].tokens);
}

TEST_CASE("vocabulary shortlists on a GPU", "[cuda][translate]") {
  const std::vector<std::vector<std::int32_t>> sources = dev_sources();
  const model::Transformer cpu_model = trained_f32(Device::cpu());
  const model::Transformer gpu_model = trained_f32(Device::cuda(0));
  const std::int64_t vocab = gpu_model.config().tgt_vocab_size;
  // Every piece: the GPU's search without a shortlist, but for near-ties (a gathered output layer
  // may take another cuBLAS algorithm: the last bits of its logits may differ).
  std::vector<std::int32_t> all(static_cast<std::size_t>(vocab));
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<std::int32_t>(i);
  const decode::Shortlist every(vocab, all, {});
  decode::SearchOptions o;
  o.beam = 4;
  const auto plain = beam_search(gpu_model, sources, o);
  o.shortlist = &every;
  const auto listed = beam_search(gpu_model, sources, o);
  std::size_t same = 0;
  for (std::size_t i = 0; i < sources.size(); ++i) {
    if (listed[i][0].tokens != plain[i][0].tokens) continue;
    ++same;
    CHECK(listed[i][0].log_prob == Approx(plain[i][0].log_prob).margin(1e-4));
  }
  CHECK(same * 50 >= sources.size() * 49);
  // Each source piece listing itself (the reversal task writes each letter as itself), nothing
  // kept for every batch: outputs hold only their batch's source pieces, and greedy decoding finds
  // the CPU's outputs with the same shortlist.
  std::vector<std::vector<std::int32_t>> lists(static_cast<std::size_t>(vocab));
  for (std::size_t i = 0; i < lists.size(); ++i) lists[i] = {static_cast<std::int32_t>(i)};
  const decode::Shortlist itself(vocab, {}, lists);
  decode::SearchOptions greedy;
  greedy.beam = 1;
  greedy.shortlist = &itself;
  const auto gpu = beam_search(gpu_model, sources, greedy);
  const auto cpu = beam_search(cpu_model, sources, greedy);
  std::set<std::int32_t> source_pieces;
  for (const auto& source : sources) source_pieces.insert(source.begin(), source.end());
  same = 0;
  for (std::size_t i = 0; i < sources.size(); ++i) {
    for (const std::int32_t token : gpu[i][0].tokens) CHECK(source_pieces.count(token) == 1);
    same += gpu[i][0].tokens == cpu[i][0].tokens ? 1 : 0;
  }
  CHECK(same * 50 >= sources.size() * 49);
}

}  // namespace dragoman
