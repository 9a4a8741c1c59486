// The parsers of `dragoman convert` (docs/MODELS.md): the first byte of the input chooses one, the
// rest is its input. 0: an .npz archive (ZIP, stored or deflated, ZIP64; .npy headers); 1: a
// PyTorch state dict (torch.save's ZIP format through the restricted pickle machine); 2: Marian's
// model.yml; 3: MarianMT's config.json; 4: a piece table (the JSON a converted model keeps).
// Checks besides the error contract: every tensor's bytes are its shape's size, and a piece
// table that loads writes itself back the same.
// Seeds: fuzz/seeds/fuzz_import (the fixtures of tests/fixtures/marian, a small torch.save file).
#include "base/error.h"
#include "convert/hf_marian.h"
#include "convert/marian_npz.h"
#include "fuzz_common.h"
#include "io/npz.h"
#include "io/torch_pickle.h"
#include "text/vocabulary.h"

using namespace dragoman;

namespace {

void check_tensors(const std::vector<io::SafeTensor>& tensors) {
  for (const io::SafeTensor& t : tensors) {
    if (t.data.size() != static_cast<std::size_t>(t.numel()) * dtype_size(t.dtype)) {
      fuzz::fail("a tensor whose bytes are not its shape's size");
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::quiet();
  if (size == 0) return 0;
  const std::string_view input = fuzz::as_text(data + 1, size - 1);
  try {
    switch (data[0] % 5) {
      case 0: check_tensors(io::decode_npz("fuzz.npz", input)); break;
      case 1: check_tensors(io::decode_torch_state_dict("fuzz.bin", input)); break;
      case 2:
        (void)convert::marian_model_config(std::string(input), "fuzz.yml", ops::SinusoidLayout::kTensor2Tensor);
        break;
      case 3: (void)convert::hf_marian_config(std::string(input), "config.json"); break;
      default: {
        const text::PieceTable t = text::PieceTable::from_json(std::string(input), "fuzz.pieces");
        if (text::PieceTable::from_json(t.to_json(), "again").to_json() != t.to_json()) {
          fuzz::fail("a piece table that does not write itself back the same");
        }
      }
    }
  } catch (const Error&) {
  }
  return 0;
}
