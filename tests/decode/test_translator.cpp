// The batch translator: lines come back in input order with the translation beam search gives each
// line alone, whatever the batch size or thread count; empty lines give empty translations; long
// lines are truncated and flagged; batches are sorted by length and respect the token budget.
// (That a trained model translates correctly is tested with the trainer: test_trainer.cpp.)
#include <catch2/catch.hpp>

#include <set>

#include "base/error.h"
#include "decode/decode_testing.h"
#include "decode/translator.h"
#include "device/cpu/threads.h"
#include "train/train_testing.h"

namespace dragoman::decode {
namespace {

const std::vector<std::string> kLines = {
    "a b c",
    "",
    "j i h g f e d c b a a b c d e f g h i j",  // 20 tokens: cut to 12
    "d",
    "   ",  // no tokens
    "e f g h",
    "a a a a a a a",
    "b",
    "c d e f g h i j",
};

TranslatorOptions options(int beam, int nbest, std::int64_t batch_tokens, std::int64_t batch_sentences = 64) {
  TranslatorOptions o;
  o.batch_sentences = batch_sentences;
  o.search.beam = beam;
  o.search.nbest = nbest;
  o.search.max_length_a = 1.0;
  o.search.max_length_b = 3;
  o.batch_tokens = batch_tokens;
  return o;
}

void require_same(const std::vector<Translation>& a, const std::vector<Translation>& b) {
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    INFO("line " << i);
    REQUIRE(a[i].nbest.size() == b[i].nbest.size());
    CHECK(a[i].source_tokens == b[i].source_tokens);
    CHECK(a[i].truncated == b[i].truncated);
    for (std::size_t k = 0; k < a[i].nbest.size(); ++k) {
      CHECK(a[i].nbest[k].text == b[i].nbest[k].text);
      CHECK(a[i].nbest[k].tokens == b[i].nbest[k].tokens);
      CHECK(a[i].nbest[k].score == Approx(b[i].nbest[k].score).epsilon(1e-12));
    }
  }
}

}  // namespace

TEST_CASE("length_sorted_batches: longest first, within the token budget, every sentence once", "[decode]") {
  const std::vector<std::int64_t> lengths = {3, 0, 9, 1, 4, 4, 0, 2, 9, 5};
  const auto batches = length_sorted_batches(lengths, 10);
  std::vector<std::int64_t> seen;
  std::int64_t previous = 1 << 30;
  for (const auto& batch : batches) {
    REQUIRE(!batch.empty());
    CHECK(static_cast<std::int64_t>(batch.size()) * lengths[batch.front()] <= 10);
    for (const std::int64_t i : batch) {
      CHECK(lengths[i] <= previous);
      CHECK(lengths[i] > 0);
      previous = lengths[i];
      seen.push_back(i);
    }
  }
  std::sort(seen.begin(), seen.end());
  CHECK(seen == std::vector<std::int64_t>{0, 2, 3, 4, 5, 7, 8, 9});
  // Filled greedily in length order: {9}, {9}, {5, 4}, {4, 3}, {2, 1} (by length).
  REQUIRE(batches.size() == 5);
  CHECK(batches[0] == std::vector<std::int64_t>{2});
  CHECK(batches[1] == std::vector<std::int64_t>{8});
  CHECK(batches[2] == std::vector<std::int64_t>{9, 4});
  CHECK(batches[3] == std::vector<std::int64_t>{5, 0});
  CHECK(batches[4] == std::vector<std::int64_t>{7, 3});
  // At most 2 sentences a batch: {9}, {9}, {5, 4}, {4, 3}, {2, 1} still; at most 1: eight batches.
  CHECK(length_sorted_batches(lengths, 10, 2) == batches);
  CHECK(length_sorted_batches(lengths, 1000, 1).size() == 8);
  CHECK(length_sorted_batches(lengths, 1000, 3).size() == 3);
  // A sentence longer than the budget still gets a batch of its own.
  CHECK(length_sorted_batches({7, 7}, 3).size() == 2);
  CHECK_THROWS_AS(length_sorted_batches({1}, 0), Error);
  CHECK_THROWS_AS(length_sorted_batches({1}, 1, 0), Error);
}

TEST_CASE("translator: lines come back in input order, each as beam search translates it alone", "[decode]") {
  const std::string dir = test::scratch_dir("translator-order");
  const text::Vocabulary vocab = text::Vocabulary::load(test::write_letters_vocabulary(dir));
  const model::Transformer model = test::letters_model(12);
  const TranslatorOptions o = options(3, 2, 1 << 20);
  const std::vector<Translation> all = Translator(model, vocab, o).translate(kLines);
  REQUIRE(all.size() == kLines.size());
  for (std::size_t i = 0; i < kLines.size(); ++i) {
    INFO("line " << i << ": '" << kLines[i] << "'");
    std::vector<std::int32_t> ids = vocab.encode(kLines[i]);
    const bool too_long = ids.size() > 12;
    if (too_long) ids.resize(12);
    CHECK(all[i].truncated == too_long);
    CHECK(all[i].source_tokens == static_cast<std::int64_t>(ids.size()));
    if (ids.empty()) {  // empty and blank lines: one empty translation, no search
      REQUIRE(all[i].nbest.size() == 1);
      CHECK(all[i].nbest[0].text.empty());
      CHECK(all[i].nbest[0].tokens.empty());
      continue;
    }
    const std::vector<Hypothesis> alone = beam_search(model, {ids}, o.search)[0];
    REQUIRE(all[i].nbest.size() == alone.size());
    REQUIRE(alone.size() == 2);
    std::set<std::vector<std::int32_t>> distinct;
    for (std::size_t k = 0; k < alone.size(); ++k) {
      CHECK(all[i].nbest[k].tokens == alone[k].tokens);
      CHECK(all[i].nbest[k].text == vocab.decode(alone[k].tokens));
      CHECK(all[i].nbest[k].score == Approx(alone[k].score).epsilon(1e-12));
      CHECK(all[i].nbest[k].log_prob == Approx(alone[k].log_prob).epsilon(1e-12));
      if (k > 0) CHECK(all[i].nbest[k - 1].score >= all[i].nbest[k].score);
      distinct.insert(all[i].nbest[k].tokens);
    }
    CHECK(distinct.size() == alone.size());
  }
  CHECK(all[2].truncated);
  CHECK(all[2].source_tokens == 12);
}

TEST_CASE("translator: batch size and thread count do not change the output", "[decode]") {
  const std::string dir = test::scratch_dir("translator-invariance");
  const text::Vocabulary vocab = text::Vocabulary::load(test::write_letters_vocabulary(dir));
  const model::Transformer model = test::letters_model(12);
  std::vector<std::string> lines;
  for (int repeat = 0; repeat < 4; ++repeat) lines.insert(lines.end(), kLines.begin(), kLines.end());
  const std::vector<Translation> reference = Translator(model, vocab, options(4, 1, 1 << 20)).translate(lines);
  for (const std::int64_t batch_tokens : {1, 5, 13, 40}) {
    INFO("batch tokens " << batch_tokens);
    require_same(Translator(model, vocab, options(4, 1, batch_tokens)).translate(lines), reference);
  }
  for (const std::int64_t batch_sentences : {1, 3}) {
    INFO("batch sentences " << batch_sentences);
    require_same(Translator(model, vocab, options(4, 1, 1 << 20, batch_sentences)).translate(lines), reference);
  }
  cpu::set_compute_threads(2);
  const std::vector<Translation> two_threads = Translator(model, vocab, options(4, 1, 40)).translate(lines);
  cpu::set_compute_threads(1);
  require_same(two_threads, reference);
}

TEST_CASE("translator: progress is reported per batch and can stop the translation", "[decode]") {
  const std::string dir = test::scratch_dir("translator-progress");
  const text::Vocabulary vocab = text::Vocabulary::load(test::write_letters_vocabulary(dir));
  const model::Transformer model = test::letters_model(12);
  const Translator translator(model, vocab, options(2, 1, 1));
  std::vector<std::int64_t> reports;
  translator.translate(kLines, [&](std::int64_t done) { reports.push_back(done); });
  // Two lines have no tokens (counted at once); the other seven come one batch each.
  CHECK(reports == std::vector<std::int64_t>{3, 4, 5, 6, 7, 8, 9});
  reports.clear();
  translator.translate({"", " "}, [&](std::int64_t done) { reports.push_back(done); });
  CHECK(reports == std::vector<std::int64_t>{2});
  CHECK_THROWS_WITH(translator.translate(kLines, [](std::int64_t) { throw Error("stop"); }), "stop");
}

TEST_CASE("translator: each batch hands over the results so far, the untranslated lines empty", "[decode]") {
  const std::string dir = test::scratch_dir("translator-batches");
  const text::Vocabulary vocab = text::Vocabulary::load(test::write_letters_vocabulary(dir));
  const model::Transformer model = test::letters_model(12);
  const Translator translator(model, vocab, options(2, 2, 1));  // one sentence a batch
  const std::vector<Translation> reference = translator.translate(kLines);
  std::vector<std::size_t> finished;
  const std::vector<Translation> results =
      translator.translate_in_batches(kLines, [&](const std::vector<Translation>& so_far, std::int64_t done) {
        REQUIRE(so_far.size() == kLines.size());
        std::size_t translated = 0;
        for (std::size_t i = 0; i < so_far.size(); ++i) {
          if (so_far[i].nbest.empty()) continue;  // not translated yet
          ++translated;
          REQUIRE(so_far[i].nbest.size() == reference[i].nbest.size());
          CHECK(so_far[i].nbest.front().tokens == reference[i].nbest.front().tokens);
        }
        CHECK(static_cast<std::int64_t>(translated) == done);
        finished.push_back(translated);
      });
  require_same(results, reference);
  // Two lines without tokens are there from the start; then one line per batch.
  CHECK(finished == std::vector<std::size_t>{3, 4, 5, 6, 7, 8, 9});
}

TEST_CASE("translator: options and vocabulary are checked", "[decode]") {
  const std::string dir = test::scratch_dir("translator-checks");
  const text::Vocabulary vocab = text::Vocabulary::load(test::write_letters_vocabulary(dir));
  const model::Transformer model = test::letters_model(12);
  CHECK_THROWS_WITH(Translator(model, vocab, options(2, 3, 100)), Catch::Matchers::Contains("n-best 3"));
  CHECK_THROWS_WITH(Translator(model, vocab, options(2, 1, 0)), Catch::Matchers::Contains("batch size"));
  model::ModelConfig other = model.config();
  other.src_vocab_size = other.tgt_vocab_size = 30;
  const model::Transformer bigger(other, DType::kF64);
  CHECK_THROWS_WITH(Translator(bigger, vocab, options(2, 1, 100)),
                    Catch::Matchers::Contains("25 (source) and 25 (target) pieces"));
}

}  // namespace dragoman::decode
