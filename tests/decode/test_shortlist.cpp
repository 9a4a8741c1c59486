// Vocabulary shortlists: a shortlist of every piece decodes exactly as none (beam search, greedy,
// sampling; f64, and f32 and int8 with packed weights), outputs hold only their batch's pieces
// with the model's log-probabilities renormalised over those pieces, greedy decoding keeps its
// output when the shortlist holds it, guides' pieces stay outputs, IBM model 1 finds a dictionary,
// and shortlist files are read against a vocabulary with bad ones refused by file and line.
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <map>
#include <numeric>
#include <set>

#include "base/error.h"
#include "data/lexical_table.h"
#include "decode/beam_search.h"
#include "decode/decode_testing.h"
#include "decode/shortlist.h"
#include "model/model_testing.h"
#include "train/train_testing.h"

namespace dragoman::decode {
namespace {

const std::vector<std::vector<std::int32_t>> kSources = {{5, 6, 7}, {8}, {9, 10, 11, 12, 13}, {6, 6}};

// A shortlist that keeps every piece of a `vocab`-piece target vocabulary.
Shortlist every_piece(std::int64_t vocab) {
  std::vector<std::int32_t> all(static_cast<std::size_t>(vocab));
  std::iota(all.begin(), all.end(), 0);
  return Shortlist(vocab, all, {});
}

void check_same(const std::vector<std::vector<Hypothesis>>& a, const std::vector<std::vector<Hypothesis>>& b) {
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    REQUIRE(a[i].size() == b[i].size());
    for (std::size_t j = 0; j < a[i].size(); ++j) {
      CHECK(a[i][j].tokens == b[i][j].tokens);
      CHECK(a[i][j].log_prob == b[i][j].log_prob);  // bit for bit
      CHECK(a[i][j].token_log_probs == b[i][j].token_log_probs);
    }
  }
}

// log p(token | ...) renormalised over `pieces` (ascending), for each token and then EOS, by feeding
// the tokens one at a time to the whole model.
std::vector<double> restricted_log_probs(const model::Transformer& model, const std::vector<std::int32_t>& source,
                                         const std::vector<std::int32_t>& tokens,
                                         const std::vector<std::int32_t>& pieces) {
  const model::ModelConfig& c = model.config();
  const model::Batch batch = model::Batch::from_sentences({source}, {{}}, c);
  model::DecoderState state = model.start_decoding(model.encode(batch.src, batch.src_lengths), batch.src_lengths,
                                                   static_cast<std::int64_t>(tokens.size()) + 1);
  std::vector<double> out;
  std::int32_t previous = c.bos_id;
  for (std::size_t i = 0; i <= tokens.size(); ++i) {
    const std::vector<double> logp =
        model.decode_step(state, Tensor::from_vector(std::vector<std::int32_t>{previous}, {1})).to_vector<double>();
    double total = 0;
    for (const std::int32_t p : pieces) total += std::exp(logp[static_cast<std::size_t>(p)]);
    const std::int32_t next = i < tokens.size() ? tokens[i] : c.eos_id;
    out.push_back(logp[static_cast<std::size_t>(next)] - std::log(total));
    previous = next;
  }
  return out;
}

}  // namespace

TEST_CASE("shortlist: one of every piece decodes as none, bit for bit", "[decode]") {
  const model::ModelConfig c = test::fixture_config("pre_untied_learned");
  const model::Transformer f64 = test::random_model(c, 9);
  const auto decoding = [&c](bool int8) {
    auto m = std::make_unique<model::Transformer>(c, model::ParameterPrecision::decoding(DType::kF32));
    m->initialize(9);
    m->refresh_compute_weights();
    m->keep_output_rows();
    if (int8) m->quantize_int8();
    m->pack_weights();
    m->discard_unread_weights();
    return m;
  };
  const auto f32 = decoding(false), int8 = decoding(true);
  const Shortlist all = every_piece(c.tgt_vocab_size);
  for (const model::Transformer* model : std::vector<const model::Transformer*>{&f64, f32.get(), int8.get()}) {
    for (const int beam : {1, 4}) {
      for (const bool sampling : {false, true}) {
        INFO((model == &f64        ? "f64"
              : model == f32.get() ? "f32 packed"
                                   : "int8 packed")
             << ", beam " << beam << (sampling ? ", sampling" : ""));
        SearchOptions o;
        o.beam = o.nbest = beam;
        o.max_length_b = 4;
        o.sampling.enabled = sampling;
        const auto plain = beam_search(*model, kSources, o);
        o.shortlist = &all;
        check_same(beam_search(*model, kSources, o), plain);
      }
    }
  }
}

TEST_CASE("shortlist: outputs hold only their batch's pieces, with log-probabilities renormalised over them",
          "[decode]") {
  const model::ModelConfig c = test::fixture_config("pre_untied_learned");
  const model::Transformer model = test::random_model(c, 3);
  // Source 6's list {7, 8}, source 9's {10}, {5} kept for every batch; pad, bos and EOS always.
  std::vector<std::vector<std::int32_t>> lists(16);
  lists[6] = {8, 7};
  lists[9] = {10};
  const Shortlist shortlist(c.tgt_vocab_size, {5}, lists);
  // (Both sources hold piece 6: their pieces are the same, and no finished one narrows the output.)
  const std::vector<std::vector<std::int32_t>> sources = {{6, 6}, {11, 6, 12}};
  const std::vector<std::int32_t> pieces = {c.pad_id, c.bos_id, c.eos_id, 5, 7, 8};
  CHECK(shortlist.pieces(sources, {c.pad_id, c.bos_id, c.eos_id}) == pieces);
  for (const bool sampling : {false, true}) {
    SearchOptions o;
    o.beam = o.nbest = 3;
    o.max_length_b = 4;
    o.sampling.enabled = sampling;
    o.shortlist = &shortlist;
    INFO((sampling ? "sampling" : "beam search"));
    const auto out = beam_search(model, sources, o);
    for (std::size_t i = 0; i < sources.size(); ++i) {
      REQUIRE(out[i].size() == 3);
      for (const Hypothesis& h : out[i]) {
        for (const std::int32_t token : h.tokens) CHECK((token == 5 || token == 7 || token == 8));
        const std::vector<double> expected = restricted_log_probs(model, sources[i], h.tokens, pieces);
        REQUIRE(h.token_log_probs.size() == expected.size());
        for (std::size_t t = 0; t < expected.size(); ++t)
          CHECK(h.token_log_probs[t] == Approx(expected[t]).epsilon(1e-12));
      }
    }
  }
}

TEST_CASE("shortlist: greedy decoding keeps its output when the shortlist holds it, and guides' pieces stay outputs",
          "[decode]") {
  const model::ModelConfig c = test::fixture_config("pre_untied_learned");
  const model::Transformer model = test::random_model(c, 4);
  SearchOptions greedy;
  greedy.beam = 1;
  greedy.max_length_b = 6;
  const auto free_run = beam_search(model, kSources, greedy);
  std::vector<std::int32_t> written;
  for (const auto& n : free_run) written.insert(written.end(), n[0].tokens.begin(), n[0].tokens.end());
  const Shortlist holding(c.tgt_vocab_size, written, {});
  greedy.shortlist = &holding;
  const auto restricted = beam_search(model, kSources, greedy);
  for (std::size_t i = 0; i < kSources.size(); ++i) CHECK(restricted[i][0].tokens == free_run[i][0].tokens);
  // A prefix and a constraint of pieces no list holds: the output holds them all the same.
  const Shortlist tiny(c.tgt_vocab_size, {5}, {});
  SearchOptions beam;
  beam.beam = 4;
  beam.max_length_b = 4;
  beam.shortlist = &tiny;
  const std::vector<TargetGuide> guides(kSources.size(), TargetGuide{{9, 10}, {{11}}});
  for (const auto& n : beam_search(model, kSources, beam, &guides)) {
    const std::vector<std::int32_t>& tokens = n.at(0).tokens;
    REQUIRE(tokens.size() >= 3);
    CHECK(tokens[0] == 9);
    CHECK(tokens[1] == 10);
    CHECK(std::count(tokens.begin(), tokens.end(), 11) >= 1);
    for (const std::int32_t token : tokens) CHECK((token == 5 || token == 9 || token == 10 || token == 11));
  }
  // A shortlist for another vocabulary is refused.
  const Shortlist other(c.tgt_vocab_size + 1, {5}, {});
  beam.shortlist = &other;
  CHECK_THROWS_WITH(beam_search(model, kSources, beam), Catch::Contains("shortlist of"));
}

TEST_CASE("shortlist: sentences that join a running search widen its output", "[decode]") {
  const model::ModelConfig c = test::fixture_config("pre_untied_learned");
  const model::Transformer model = test::random_model(c, 6);
  std::vector<std::vector<std::int32_t>> lists(16);
  lists[6] = {7};
  lists[9] = {10, 11};
  const Shortlist shortlist(c.tgt_vocab_size, {5}, lists);
  SearchOptions o;
  o.beam = 3;
  o.max_length_b = 6;
  o.shortlist = &shortlist;
  const TransformerDecoding decoding(model);
  BeamSearch search(decoding, o);
  std::map<std::int64_t, std::vector<Hypothesis>> done;
  search.add({{6, 6, 6}}, {0});
  for (int step = 0; step < 2; ++step) {
    for (auto& [id, n] : search.step()) done[id] = std::move(n);
  }
  search.add({{9, 9}}, {1});  // joins: 10 and 11 become outputs of both
  while (!search.empty()) {
    for (auto& [id, n] : search.step()) done[id] = std::move(n);
  }
  REQUIRE(done.size() == 2);
  std::set<std::int32_t> written;
  for (const auto& [id, n] : done) {
    for (const Hypothesis& h : n) written.insert(h.tokens.begin(), h.tokens.end());
  }
  for (const std::int32_t token : written) CHECK((token == 5 || token == 7 || token == 10 || token == 11));
}

TEST_CASE("shortlist: sentences that finish narrow the output of those left", "[decode]") {
  const model::ModelConfig c = test::fixture_config("pre_untied_learned");
  const model::Transformer model = test::random_model(c, 8);
  std::vector<std::vector<std::int32_t>> lists(16);
  lists[6] = {7};
  lists[9] = {10, 11};
  const Shortlist shortlist(c.tgt_vocab_size, {5}, lists);
  SearchOptions greedy;
  greedy.beam = 1;
  greedy.max_length_a = 1;  // the first sentence: one token, then EOS at the second step
  greedy.max_length_b = 0;
  greedy.shortlist = &shortlist;
  const std::vector<std::vector<std::int32_t>> sources = {{9}, {6, 6, 6, 6, 6, 6}};
  const auto out = beam_search(model, sources, greedy);
  REQUIRE(out[0][0].token_log_probs.size() == 2);
  // The second sentence's first two steps were over both sentences' 7 pieces, the rest over its
  // own 5 (fewer than three quarters of 7: the output narrowed once the first finished).
  const Hypothesis& h = out[1][0];
  REQUIRE(h.token_log_probs.size() > 3);
  const std::vector<std::int32_t> both = {c.pad_id, c.bos_id, c.eos_id, 5, 7, 10, 11};
  const std::vector<std::int32_t> own = {c.pad_id, c.bos_id, c.eos_id, 5, 7};
  const std::vector<double> over_both = restricted_log_probs(model, sources[1], h.tokens, both);
  const std::vector<double> over_own = restricted_log_probs(model, sources[1], h.tokens, own);
  for (std::size_t t = 0; t < h.token_log_probs.size(); ++t) {
    INFO("step " << t);
    CHECK(h.token_log_probs[t] == Approx(t < 2 ? over_both[t] : over_own[t]).epsilon(1e-12));
  }
}

TEST_CASE("lexical table: IBM model 1 finds each source piece's translation", "[decode]") {
  // Sentences of source pieces 4..11 in random order and number; the target translates piece s
  // to piece s + 10 and writes the words reversed, with piece 30 ("the") in every sentence.
  data::EncodedCorpus corpus;
  std::uint64_t state = 12345;
  const auto next = [&state](std::uint64_t n) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (state >> 33) % n;
  };
  for (int i = 0; i < 400; ++i) {
    std::vector<std::int32_t> source;
    const std::uint64_t length = 2 + next(5);
    for (std::uint64_t j = 0; j < length; ++j) source.push_back(static_cast<std::int32_t>(4 + next(8)));
    for (const std::int32_t s : source) corpus.src_tokens.push_back(s);
    corpus.tgt_tokens.push_back(30);
    for (auto it = source.rbegin(); it != source.rend(); ++it) corpus.tgt_tokens.push_back(*it + 10);
    corpus.src_offsets.push_back(static_cast<std::int64_t>(corpus.src_tokens.size()));
    corpus.tgt_offsets.push_back(static_cast<std::int64_t>(corpus.tgt_tokens.size()));
    corpus.line_numbers.push_back(i + 1);
  }
  for (const int threads : {1, 2}) {
    data::LexicalTableOptions o;
    o.threads = threads;
    int iterations = 0;
    const data::LexicalTable table = data::train_ibm_model1(corpus, 12, 40, o, [&](int) { ++iterations; });
    CHECK(iterations == 5);
    CHECK(table.pairs == 400);
    CHECK(table.target_counts[30] == 400);
    for (std::int32_t s = 4; s < 12; ++s) {
      INFO("source piece " << s << ", " << threads << " thread(s)");
      REQUIRE(!table.by_source[static_cast<std::size_t>(s)].empty());
      CHECK(table.by_source[static_cast<std::size_t>(s)].front().first == s + 10);
      CHECK(table.by_source[static_cast<std::size_t>(s)].front().second > 0.5F);
    }
  }
  CHECK_THROWS_WITH(data::train_ibm_model1(corpus, 8, 40, {}), Catch::Contains("outside the vocabulary"));
}

TEST_CASE("shortlist files: read against the vocabulary, and bad ones refused by file and line", "[decode]") {
  const std::string dir = test::scratch_dir("shortlist-files");
  const text::Vocabulary vocab = text::Vocabulary::load(test::write_letters_vocabulary(dir));
  const auto id = [&vocab](const char* piece) { return vocab.piece_id(piece); };
  REQUIRE(id("▁a") > 3);
  REQUIRE(id("b") > 3);
  CHECK(id("no such piece") == -1);
  const auto write = [&dir](const std::string& text) {
    const std::string path = dir + "/shortlist.txt";
    std::ofstream(path) << text;
    return path;
  };
  const Shortlist s = Shortlist::load(write("# a comment\n\t▁a\n\nb\tc d\nb\t▁a\nc\tb\n"), vocab);
  CHECK(s.always_size() == 1);
  CHECK(s.source_pieces() == 2);  // b and c
  const std::vector<std::int32_t> pieces = s.pieces({{id("b")}}, {});
  std::vector<std::int32_t> expected = {id("▁a"), id("c"), id("d")};
  std::sort(expected.begin(), expected.end());
  CHECK(pieces == expected);
  CHECK(s.pieces({{id("c")}}, {3}) ==
        std::vector<std::int32_t>{3, std::min(id("▁a"), id("b")), std::max(id("▁a"), id("b"))});
  CHECK_THROWS_WITH(Shortlist::load(write("\t▁a\nb c d\n"), vocab),
                    Catch::Contains("shortlist.txt:2: expected SOURCE_PIECE<TAB>"));
  CHECK_THROWS_WITH(Shortlist::load(write("b\tc zzz\n"), vocab),
                    Catch::Contains("shortlist.txt:1: the target piece \"zzz\" is not in the model's vocabulary"));
  CHECK_THROWS_WITH(Shortlist::load(write("\tc\nzzz\tc\n"), vocab),
                    Catch::Contains("shortlist.txt:2: the source piece \"zzz\""));
  // (a line with a tab is a list, whatever it starts with)
  CHECK_THROWS_WITH(Shortlist::load(write("#\tb\n"), vocab), Catch::Contains("the source piece \"#\""));
  CHECK_THROWS_WITH(Shortlist::load(write("b c\td\n"), vocab), Catch::Contains("holds several pieces"));
  CHECK_THROWS_WITH(Shortlist::load(write("b\tc\td\n"), vocab), Catch::Contains("shortlist.txt:1: more than one tab"));
  CHECK_THROWS_WITH(Shortlist::load(write("# nothing\n"), vocab), Catch::Contains("holds no lists"));
  CHECK_THROWS_WITH(Shortlist(30, {30}, {}), Catch::Contains("not in [0, 30)"));
}

}  // namespace dragoman::decode
