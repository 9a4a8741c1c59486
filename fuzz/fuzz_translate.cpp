// translate's input lines through encoding and search, on a tiny random model with the seeds'
// vocabulary: the bytes are read as `dragoman translate` reads its input file (UTF-8 lines),
// then translated (beam 2, two hypotheses) and each hypothesis detokenized. Checks besides the
// error contract: one result a line, and every output valid UTF-8 within the length limit.
// Seeds: fuzz/seeds/fuzz_translate (lines of the demo corpus and the BLEU fixtures, empty lines,
// long lines, mixed scripts).
#include "base/error.h"
#include "base/utf8.h"
#include "decode/translator.h"
#include "fuzz_common.h"
#include "io/text_lines.h"

using namespace dragoman;

namespace {

struct Setup {
  text::Vocabulary vocab = text::Vocabulary::load(DRAGOMAN_FUZZ_SEEDS "/fuzz_vocab/bpe-100.model");
  model::Transformer model = make_model(vocab.size());
  decode::TranslatorOptions options = make_options();

  static model::Transformer make_model(std::int64_t vocab_size) {
    model::ModelConfig c;
    c.encoder_layers = c.decoder_layers = 1;
    c.d_model = 16;
    c.d_ff = 32;
    c.heads = 2;
    c.max_positions = 32;  // long lines are cut here (and reported as truncated)
    c.src_vocab_size = c.tgt_vocab_size = vocab_size;
    model::Transformer m(c, DType::kF32);
    m.initialize(7);
    return m;
  }
  static decode::TranslatorOptions make_options() {
    decode::TranslatorOptions o;
    o.search.beam = 2;
    o.search.nbest = 2;
    o.search.max_length_b = 8;
    o.batch_tokens = 64;
    return o;
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::quiet();
  static const Setup setup;
  try {
    const io::TextLines input = io::text_lines_from_bytes("input.txt", std::string(fuzz::as_text(data, size)));
    const std::vector<std::string> lines(input.lines.begin(), input.lines.end());
    const decode::Translator translator(setup.model, setup.vocab, setup.options);
    const std::vector<decode::Translation> out = translator.translate(lines);
    if (out.size() != lines.size()) fuzz::fail("one result a line");
    for (const decode::Translation& t : out) {
      if (t.nbest.empty()) fuzz::fail("no hypothesis");
      for (const decode::TranslatedHypothesis& h : t.nbest) {
        if (utf8::find_invalid(h.text) != std::string_view::npos) fuzz::fail("invalid UTF-8 out");
        const auto limit = static_cast<std::size_t>(t.source_tokens) + 8;
        if (h.tokens.size() > limit) fuzz::fail("longer than the length limit");
      }
    }
  } catch (const Error&) {
  }
  return 0;
}
