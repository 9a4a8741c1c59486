// The SentencePiece vocabulary loader with our special-id checks (pad 0, unk 1, bos 2, eos 3), as
// a model file's vocabulary or a .model file is read, then what translation does with it: encode
// sentences (with and without their byte spans), every piece and score, decode. Checks besides
// the error contract: encoded ids lie in the vocabulary, and spans lie inside the text.
// Seeds: fuzz/seeds/fuzz_vocab (BPE and unigram models from `dragoman build-vocab` on the fixtures).
#include "base/error.h"
#include "fuzz_common.h"
#include "text/vocabulary.h"

using namespace dragoman;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::quiet();
  try {
    const text::Vocabulary vocab = text::Vocabulary::from_bytes(std::string(fuzz::as_text(data, size)), "fuzz.model");
    const auto n = static_cast<std::int32_t>(vocab.size());
    for (std::int32_t id = 0; id < n && id < 4096; ++id) {
      (void)vocab.piece(id);
      (void)vocab.score(id);
    }
    for (const std::string_view text : {"Hello, world! 123", "Grüße aus Köln – „Anführung“ 💬", "", "  a  b  ",
                                        "\xe4\xb8\xad\xe6\x96\x87\xe3\x81\xa7\xe3\x81\x99", "\t\r"}) {
      const std::vector<std::int32_t> ids = vocab.encode(text);
      for (const std::int32_t id : ids) {
        if (id < 0 || id >= n) fuzz::fail("an encoded id outside the vocabulary");
      }
      (void)vocab.decode(ids);
      const text::Vocabulary::Spans spans = vocab.encode_with_spans(text);
      for (const auto& [begin, end] : spans.spans) {
        if (begin > end || end > text.size()) fuzz::fail("a span outside the text");
      }
      std::vector<std::pair<std::size_t, std::size_t>> out_spans;
      const std::string decoded = vocab.decode_with_spans(spans.ids, out_spans);
      for (const auto& [begin, end] : out_spans) {
        if (begin > end || end > decoded.size()) fuzz::fail("a span outside the decoded text");
      }
    }
  } catch (const Error&) {
  }
  return 0;
}
