// serve's parts without HTTP: the request parsers (each bad input named), and the batching
// translator (concurrent requests answered with what one Translator gives each of them, batched
// together only with requests of the same search options, a bounded queue, draining).
#include <catch2/catch.hpp>

#include <atomic>
#include <thread>

#include "base/error.h"
#include "decode/decode_testing.h"
#include "kernels/gemm.h"
#include "model/model_testing.h"
#include "serve/api.h"
#include "serve/batching_translator.h"
#include "train/train_testing.h"

namespace dragoman {

using serve::ApiError;

namespace {

// The status and message of the ApiError that `f` throws.
template <typename F>
ApiError error_of(F&& f) {
  try {
    f();
  } catch (const ApiError& e) {
    return e;
  }
  return {0, "no error"};
}

// A random f32 model over the letters vocabulary of the reversal tests, and its decoder.
struct LettersModel {
  explicit LettersModel(const std::string& name)
      : vocabulary(text::Vocabulary::load(test::write_letters_vocabulary(test::scratch_dir(name)))),
        model(config(vocabulary), DType::kF32),
        decoding(model) {
    model.initialize(5);
  }
  static model::ModelConfig config(const text::Vocabulary& vocabulary) {
    model::ModelConfig c = test::fixture_config("pre_untied_learned");
    c.src_vocab_size = c.tgt_vocab_size = vocabulary.size();
    return c;
  }
  text::Vocabulary vocabulary;
  model::Transformer model;
  decode::TransformerDecoding decoding;
};

}  // namespace

TEST_CASE("serve's /v1/translate requests: fields, defaults and every bad input named", "[serve]") {
  decode::SearchOptions defaults;
  defaults.beam = 5;
  const serve::RequestLimits limits{3, 16};
  const serve::TranslateRequest r = serve::parse_translate_request(
      R"({"text": ["a b", "c"], "model": "m", "n_best": 2, "word_scores": true, "alignment": "soft", "length_penalty": 1.0})",
      defaults, limits);
  CHECK(r.texts == std::vector<std::string>{"a b", "c"});
  CHECK(r.model == "m");
  CHECK(r.search.beam == 5);
  CHECK(r.search.nbest == 2);
  CHECK(r.search.alpha == 1.0);
  CHECK(r.search.record_attention);
  CHECK(r.output.format == decode::OutputFormat::kJson);
  CHECK(r.output.word_scores);
  CHECK(r.output.alignment == decode::AlignmentKind::kSoft);
  const serve::TranslateRequest one =
      serve::parse_translate_request(R"({"text": "x", "alignment": true})", defaults, limits);
  CHECK(one.texts == std::vector<std::string>{"x"});
  CHECK(one.output.alignment == decode::AlignmentKind::kHard);
  CHECK(one.search.nbest == 1);

  // Sampling: n_best samples a sentence; its options are the search's, so requests that differ in
  // them never share a search.
  const serve::TranslateRequest sampled = serve::parse_translate_request(
      R"({"text": "x", "sampling": true, "n_best": 3, "temperature": 0.8, "top_k": 10, "top_p": 0.9, "seed": 7})",
      defaults, limits);
  CHECK(sampled.search.sampling.enabled);
  CHECK(sampled.search.beam == 3);
  CHECK(sampled.search.nbest == 3);
  CHECK(sampled.search.sampling.temperature == 0.8);
  CHECK(sampled.search.sampling.top_k == 10);
  CHECK(sampled.search.sampling.top_p == 0.9);
  CHECK(sampled.search.sampling.seed == 7);
  decode::SearchOptions other_seed = sampled.search;
  other_seed.sampling.seed = 8;
  CHECK(serve::same_search(sampled.search, sampled.search));
  CHECK_FALSE(serve::same_search(sampled.search, other_seed));
  CHECK_FALSE(serve::same_search(sampled.search, one.search));

  const std::vector<std::tuple<std::string, int, std::string>> bad = {
      {R"({"text": )", 400, "invalid JSON"},
      {"{\"text\": \"a\xff\"}", 400, "invalid JSON"},
      {R"([1])", 400, "expected a JSON object, got array"},
      {R"({"beam": 2})", 400, "text: missing"},
      {R"({"text": []})", 400, "text: no text to translate"},
      {R"({"text": [1]})", 400, "text: expected a string or a list of strings, got a list holding number"},
      {R"({"text": ["a", "b", "c", "d"]})", 413, "4 texts, more than this server's limit of 3"},
      {R"({"text": "a", "beam": 17})", 400, "beam: 17 is not in [1, 16]"},
      {R"({"text": "a", "beam": "4"})", 400, "beam: expected an integer, got string"},
      {R"({"text": "a", "n_best": 6})", 400, "n_best: 6 is larger than the beam 5"},
      {R"({"text": "a", "word_scores": 1})", 400, "word_scores: expected true or false, got number"},
      {R"({"text": "a", "alignment": "both"})", 400, "alignment: expected true, false, \"hard\" or \"soft\""},
      {R"({"text": "a", "length_penalty": -1})", 400, "length_penalty: expected a number in [0, 10]"},
      {R"({"text": "a", "model": 3})", 400, "model: expected a string, got number"},
      {R"({"text": "a", "Text": "b"})", 400, "unknown field \"Text\""},
      {R"({"text": ["a", "b\r\nc"]})", 400, "text[1]: a line break"},
      {R"({"text": "a", "beam": 1e999})", 400, "invalid JSON"},  // out_of_range, not parse_error (fuzzing)
      {R"({"text": "a", "top_k": 10})", 400, "shape sampling: give \"sampling\": true"},
      {R"({"text": "a", "sampling": true, "beam": 4})", 400, "beam: is for the beam search; with sampling"},
      {R"({"text": "a", "sampling": true, "top_p": 1.5})", 400, "top_p: expected a number in [1e-06, 1]"},
      {R"({"text": "a", "sampling": true, "temperature": 0})", 400, "temperature: expected a number in [0.01, 100]"},
      {R"({"text": "a", "sampling": "yes"})", 400, "sampling: expected true or false, got string"},
      {R"({"text": "a", "sampling": true, "n_best": 17})", 400, "n_best: 17 is not in [1, 16]"},
  };
  for (const auto& [body, status, message] : bad) {
    INFO(body);
    const std::string& text = body;  // (lambdas capture variables, not bindings)
    const ApiError e = error_of([&] { serve::parse_translate_request(text, defaults, limits); });
    CHECK(e.status == status);
    CHECK_THAT(e.message, Catch::Matchers::Contains(message));
  }
}

TEST_CASE("serve's LibreTranslate requests, as JSON and as form fields", "[serve]") {
  const serve::RequestLimits limits{3, 16};
  const serve::LibreRequest json = serve::parse_libre_json(R"({"q": "a\nb", "target": "de", "api_key": "k"})", limits);
  CHECK(json.q == std::vector<std::string>{"a\nb"});
  CHECK_FALSE(json.list);
  CHECK(json.source == "auto");
  CHECK(json.target == "de");
  const serve::LibreRequest form = serve::parse_libre_fields(
      {{"q", "x"}, {"q", "y"}, {"source", "en"}, {"target", "de"}, {"format", "text"}}, limits);
  CHECK(form.q == std::vector<std::string>{"x", "y"});
  CHECK(form.list);
  CHECK(form.source == "en");
  CHECK(error_of([&] { serve::parse_libre_json(R"({"q": "a"})", limits); }).message ==
        "target: missing (a language code)");
  CHECK_THAT(
      error_of([&] { serve::parse_libre_json(R"({"q": "a", "target": "de", "format": "html"})", limits); }).message,
      Catch::Matchers::Contains("format: only \"text\""));
  CHECK_THAT(error_of([&] {
               serve::parse_libre_fields({{"q", "a\xff"}, {"target", "de"}}, limits);
             }).message,
             Catch::Matchers::Contains("q: invalid UTF-8 at byte 2"));
  CHECK_THAT(error_of([&] {
               serve::parse_libre_fields({{"q", "a"}, {"target", "de"}, {"x", "1"}}, limits);
             }).message,
             Catch::Matchers::Contains("unknown field \"x\""));
  CHECK(serve::language_name("de") == "German");
  CHECK(serve::language_name("xx") == "xx");
  CHECK(serve::error_body("a \"b\"") == R"({"error":"a \"b\""})");
}

TEST_CASE("batching translator: concurrent requests get what a Translator gives each, batched by search options",
          "[serve]") {
  const LettersModel m("serve-batching");
  const text::Vocabulary& vocabulary = m.vocabulary;
  const decode::TransformerDecoding& decoding = m.decoding;
  const std::vector<std::string> lines = {"a b c", "d", "e f g h", "i j", "a a b", "c d e f g"};
  std::vector<std::vector<std::int32_t>> sources;
  for (const std::string& line : lines) sources.push_back(vocabulary.encode(line));
  decode::TranslatorOptions base;
  decode::SearchOptions beam2, beam3;
  beam2.beam = 2;
  beam2.max_length_b = 4;
  beam3 = beam2;
  beam3.beam = 3;
  const auto expected = [&](const decode::SearchOptions& search) {
    decode::TranslatorOptions o = base;
    o.search = search;
    return decode::Translator(decoding, vocabulary, o).translate_ids(sources);
  };
  const std::vector<decode::Translation> want2 = expected(beam2), want3 = expected(beam3);

  std::mutex mutex;
  std::vector<serve::StepReport> steps;
  serve::BatchingOptions options;
  options.max_wait = std::chrono::milliseconds(50);
  serve::BatchingTranslator batcher({{&decoding, &vocabulary}}, base, options, [&](const serve::StepReport& step) {
    const std::lock_guard<std::mutex> lock(mutex);
    steps.push_back(step);
  });
  std::atomic<bool> finished{false};
  std::thread runner([&] { batcher.run([&] { return finished.load(); }); });
  // 12 requests from 12 threads: each one sentence, beam 2 or 3 alternately.
  std::vector<std::vector<decode::Translation>> answers(12);
  std::vector<std::thread> clients;
  for (std::size_t i = 0; i < 12; ++i) {
    clients.emplace_back([&, i] {
      auto job = batcher.submit(0, {sources[i % sources.size()]}, i % 2 == 0 ? beam2 : beam3);
      answers[i] = job->result.get_future().get();
    });
  }
  for (std::thread& t : clients) t.join();
  finished = true;
  runner.join();
  for (std::size_t i = 0; i < 12; ++i) {
    INFO("request " << i);
    REQUIRE(answers[i].size() == 1);
    const decode::Translation& want = (i % 2 == 0 ? want2 : want3)[i % sources.size()];
    CHECK(answers[i][0].nbest.front().tokens == want.nbest.front().tokens);
    CHECK(answers[i][0].nbest.front().log_prob == want.nbest.front().log_prob);
  }
  // Requests shared decoding steps (some searched several sentences), never beyond their options
  // (6 of each beam: at most 6 in a step); every sentence finished once.
  std::int64_t most = 0, total = 0;
  for (const serve::StepReport& step : steps) {
    most = std::max(most, step.sentences);
    total += step.finished;
    CHECK(step.target_tokens >= 0);
  }
  CHECK(most > 1);
  CHECK(most <= 6);
  CHECK(total == 12);
  CHECK(batcher.queued_sentences() == 0);
}

TEST_CASE("batching translator: a bounded queue, and nothing taken once draining", "[serve]") {
  const LettersModel m("serve-queue");
  const text::Vocabulary& vocabulary = m.vocabulary;
  const decode::TransformerDecoding& decoding = m.decoding;
  serve::BatchingOptions options;
  options.max_wait = std::chrono::milliseconds(300);  // the first request waits: the queue holds it
  options.max_queue_sentences = 3;
  serve::BatchingTranslator batcher({{&decoding, &vocabulary}}, decode::TranslatorOptions{}, options);
  std::atomic<bool> finished{false};
  std::thread runner([&] { batcher.run([&] { return finished.load(); }); });
  const std::vector<std::int32_t> s = vocabulary.encode("a b");
  decode::SearchOptions search;
  search.max_length_b = 3;
  auto first = batcher.submit(0, {s, s}, search);
  auto second = batcher.submit(0, {s}, search);
  CHECK(batcher.queued_sentences() == 3);
  CHECK_THROWS_AS(batcher.submit(0, {s}, search), serve::QueueFull);
  CHECK_THROWS_AS(batcher.submit(1, {s}, search), Error);  // no such model
  CHECK(first->result.get_future().get().size() == 2);
  CHECK(second->result.get_future().get().size() == 1);
  batcher.drain();
  CHECK_THROWS_AS(batcher.submit(0, {s}, search), serve::QueueFull);
  finished = true;
  runner.join();
}

TEST_CASE("batching translator: a long request joins the search as it has room, an abandoned one leaves it",
          "[serve]") {
  const LettersModel m("serve-continuous");
  // serve's default: products that do not depend on the rows beside them (restored at the end).
  const bool row_invariant = cpu::row_invariant_products();
  cpu::set_row_invariant_products(true);
  const std::vector<std::string> lines = {"a b c", "d", "e f g h", "i j", "a a b", "c d e f g", "b"};
  std::vector<std::vector<std::int32_t>> sources;
  for (const std::string& line : lines) sources.push_back(m.vocabulary.encode(line));
  decode::TranslatorOptions limits;
  limits.batch_sentences = 2;
  limits.search.max_length_b = 6;
  const std::vector<decode::Translation> want =
      decode::Translator(m.decoding, m.vocabulary, limits).translate_ids(sources);
  std::mutex mutex;
  std::int64_t most = 0, finished = 0;
  serve::BatchingOptions options;
  options.join_sentences = 1;
  serve::BatchingTranslator batcher({{&m.decoding, &m.vocabulary}}, limits, options,
                                    [&](const serve::StepReport& step) {
                                      const std::lock_guard<std::mutex> lock(mutex);
                                      most = std::max(most, step.sentences);
                                      finished += step.finished;
                                    });
  // Queued before the translating thread starts: the abandoned request never answers, the other
  // one is answered in its order, each sentence as a Translator translates it.
  auto gone = batcher.submit(0, sources, limits.search);
  auto job = batcher.submit(0, sources, limits.search);
  gone->abandoned = true;
  std::atomic<bool> done{false};
  std::thread runner([&] { batcher.run([&] { return done.load(); }); });
  const std::vector<decode::Translation> got = job->result.get_future().get();
  CHECK_THROWS_AS(gone->result.get_future().get(), Error);
  done = true;
  runner.join();
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    INFO("line " << i);
    CHECK(got[i].nbest.front().tokens == want[i].nbest.front().tokens);
    CHECK(got[i].nbest.front().log_prob == want[i].nbest.front().log_prob);
  }
  CHECK(most == 2);  // never more than batch_sentences in a step
  CHECK(finished == static_cast<std::int64_t>(sources.size()));
  CHECK(batcher.queued_sentences() == 0);
  cpu::set_row_invariant_products(row_invariant);
}

}  // namespace dragoman
