// PyTorch state-dict files read without Python (io/torch_pickle.h): hf-tiny/pytorch_model.bin
// (torch.save of the model's state dict) gives exactly the tensors of its model.safetensors, tied
// tables included; a pickle that would call anything else (os.system) is refused, naming it,
// without running it; damaged files are errors, never crashes.
#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>
#include <map>

#include "base/error.h"
#include "io/read_file.h"
#include "io/safetensors.h"
#include "io/torch_pickle.h"

namespace dragoman::io {
namespace {
const std::filesystem::path kDir = std::filesystem::path(DRAGOMAN_TEST_FIXTURES) / "marian";
}  // namespace

TEST_CASE("torch state dict: pytorch_model.bin holds model.safetensors' tensors", "[io]") {
  const std::vector<SafeTensor> bin = read_torch_state_dict((kDir / "hf-tiny" / "pytorch_model.bin").string());
  const SafeTensorsFile st = read_safetensors((kDir / "hf-tiny" / "model.safetensors").string());
  std::map<std::string, const SafeTensor*> by_name;
  for (const SafeTensor& t : bin) by_name[t.name] = &t;
  REQUIRE(by_name.size() == bin.size());
  for (const SafeTensor& t : st.tensors) {
    INFO(t.name);
    REQUIRE(by_name.count(t.name) == 1);
    CHECK(by_name[t.name]->dtype == t.dtype);
    CHECK(by_name[t.name]->shape == t.shape);
    CHECK(by_name[t.name]->data == t.data);
  }
  // The tied copies that torch.save keeps (one storage) are the same table.
  REQUIRE(by_name.count("lm_head.weight") == 1);
  CHECK(by_name["lm_head.weight"]->data == by_name["model.shared.weight"]->data);
}

TEST_CASE("torch state dict: strided views are copied in their own order", "[io]") {
  // fuzz/seeds/fuzz_import/torch.bin after its selector byte: torch.load gives weight [[1, 2, 3],
  // [4, 5, 6]] and transposed [[1, 4], [2, 5], [3, 6]] (one storage, strides (1, 3)).
  const std::vector<char> b = read_file(std::string(DRAGOMAN_SOURCE_DIR) + "/fuzz/seeds/fuzz_import/torch.bin");
  const std::vector<SafeTensor> t = decode_torch_state_dict("torch.bin", std::string_view(b.data() + 1, b.size() - 1));
  REQUIRE(t.size() == 2);
  const auto floats = [](const SafeTensor& x) {
    std::vector<float> v(x.data.size() / 4);
    std::memcpy(v.data(), x.data.data(), x.data.size());
    return v;
  };
  CHECK(t[0].name == "weight");
  CHECK(t[0].shape == std::vector<std::int64_t>{2, 3});
  CHECK(floats(t[0]) == std::vector<float>{1, 2, 3, 4, 5, 6});
  CHECK(t[1].name == "transposed");
  CHECK(t[1].shape == std::vector<std::int64_t>{3, 2});
  CHECK(floats(t[1]) == std::vector<float>{1, 4, 2, 5, 3, 6});
}

TEST_CASE("torch state dict: a pickle that calls os.system is refused unrun", "[io]") {
  CHECK_THROWS_WITH(
      read_torch_state_dict((kDir / "calls-os-system.bin").string()),
      Catch::Contains("calls-os-system.bin") && (Catch::Contains("posix.system") || Catch::Contains("os.system")));
}

TEST_CASE("torch state dict: damaged files are errors naming the file", "[io]") {
  const std::vector<char> b = read_file((kDir / "hf-tiny" / "pytorch_model.bin").string());
  const std::string bytes(b.begin(), b.end());
  for (std::size_t n = 0; n < bytes.size(); n += bytes.size() / 97 + 1) {
    CHECK_THROWS_AS(decode_torch_state_dict("cut.bin", std::string_view(bytes.data(), n)), Error);
  }
  // Single-byte changes all over the pickle and the headers: an Error or a file that still reads.
  int errors = 0, reads = 0;
  for (std::size_t i = 0; i < bytes.size(); i += 61) {
    std::string changed = bytes;
    changed[i] = static_cast<char>(changed[i] ^ 0x21);
    std::string message;
    try {
      (void)decode_torch_state_dict("changed.bin", changed);
      ++reads;
    } catch (const Error& e) {
      message = e.what();
      ++errors;
    }
    if (!message.empty()) CHECK_THAT(message, Catch::Contains("changed.bin"));
  }
  CHECK(errors > reads);  // the data is covered by CRC-32
  CHECK_THROWS_WITH(decode_torch_state_dict("legacy.bin", std::string("\x80\x02\x8a\x0a", 4)),
                    Catch::Contains("legacy (pre-1.6)"));
}

}  // namespace dragoman::io
