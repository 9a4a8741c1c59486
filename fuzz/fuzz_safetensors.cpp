// The safetensors reader and what loads on top of it. One input is a whole file:
//   - decode_safetensors on the bytes in memory, then each tensor's finiteness scan, then the
//     model built from it (model_from_safetensors: format, config, parameter names and shapes);
//   - the same bytes as a file: SafeTensorsReader (header, then every tensor read into a buffer of
//     the size the header promises), load_model (the translate/serve path) and load_train_state
//     (resume);
//   - a file that decodes must encode back to bytes that decode to the same tensors.
// Seeds: fuzz/seeds/fuzz_safetensors (a tiny model and its training state, written by
// `dragoman train`) and tests/fixtures/{safetensors,model}.
#include <cstring>

#include "base/error.h"
#include "fuzz_common.h"
#include "io/safetensors.h"
#include "model/checkpoint.h"
#include "train/train_state.h"

using namespace dragoman;

namespace {

bool same(const io::SafeTensorsFile& a, const io::SafeTensorsFile& b) {
  if (a.metadata != b.metadata || a.tensors.size() != b.tensors.size()) return false;
  for (std::size_t i = 0; i < a.tensors.size(); ++i) {
    const io::SafeTensor &x = a.tensors[i], &y = b.tensors[i];
    if (x.name != y.name || x.dtype != y.dtype || x.shape != y.shape || x.data != y.data) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::quiet();
  const std::string_view bytes = fuzz::as_text(data, size);
  try {
    const io::SafeTensorsFile file = io::decode_safetensors("fuzz.safetensors", bytes);
    for (const io::SafeTensor& t : file.tensors) {
      if (static_cast<std::size_t>(t.numel()) * dtype_size(t.dtype) != t.data.size()) fuzz::fail("numel x size");
      (void)t.first_non_finite();
    }
    if (!same(io::decode_safetensors("re-encoded", io::encode_safetensors(file)), file)) fuzz::fail("round trip");
    try {
      (void)model::model_from_safetensors(file, "fuzz.safetensors", DType::kF32);
    } catch (const Error&) {
    }
  } catch (const Error&) {
  }

  const std::string path = fuzz::write_temp("input.safetensors", bytes);
  try {
    const io::SafeTensorsReader reader(path);
    std::vector<unsigned char> buffer;
    for (std::size_t i = 0; i < reader.header().tensors.size(); ++i) {
      const io::SafeTensor& t = reader.header().tensors[i];
      buffer.assign(static_cast<std::size_t>(t.numel()) * dtype_size(t.dtype), 0);
      reader.read(i, buffer.data());
    }
  } catch (const Error&) {
  }
  try {
    (void)model::load_model(path);
  } catch (const Error&) {
  }
  try {
    (void)train::load_train_state(path);
  } catch (const Error&) {
  }
  return 0;
}
