// See model_format.h.
#include "convert/model_format.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <vector>

#include "base/error.h"

namespace dragoman::convert {
namespace {

namespace fs = std::filesystem;

bool has_extension(const fs::path& p, std::initializer_list<const char*> extensions) {
  for (const char* e : extensions) {
    if (p.extension() == e) return true;
  }
  return false;
}

// The .npz files directly in `dir`, sorted.
std::vector<fs::path> npz_files(const fs::path& dir) {
  std::vector<fs::path> found;
  for (const fs::directory_entry& e : fs::directory_iterator(dir)) {
    if (e.is_regular_file() && e.path().extension() == ".npz") found.push_back(e.path());
  }
  std::sort(found.begin(), found.end());
  return found;
}

// Whether the file starts as a zip archive does (an .npz under another name).
bool starts_as_zip(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  char magic[4] = {};
  return in.read(magic, 4) && magic[0] == 'P' && magic[1] == 'K' && magic[2] == 3 && magic[3] == 4;
}

}  // namespace

const char* model_format_name(ModelFormat format) { return format == ModelFormat::kHfMarian ? "hf" : "marian"; }

DetectedModel detect_model_format(const std::string& input) {
  const fs::path p = input;
  if (fs::is_directory(p)) {
    if (fs::is_regular_file(p / "config.json")) {
      return {ModelFormat::kHfMarian, input, "a directory with config.json (a Hugging Face MarianMT model)"};
    }
    if (fs::is_regular_file(p / "decoder.yml")) {
      return {ModelFormat::kMarian, (p / "decoder.yml").string(),
              "a directory with decoder.yml (a Marian or OPUS-MT model)"};
    }
    const std::vector<fs::path> npz = npz_files(p);
    if (npz.size() == 1) return {ModelFormat::kMarian, npz.front().string(), "a directory with one .npz (Marian)"};
    throw Error(input + ": cannot tell the model's format: a directory with neither config.json (a Hugging Face "
                        "MarianMT model) nor decoder.yml" +
                (npz.empty() ? std::string(" or a .npz (a Marian model)")
                             : " and " + std::to_string(npz.size()) + " .npz files (name the model's .npz)"));
  }
  if (has_extension(p, {".npz"}) || starts_as_zip(p)) return {ModelFormat::kMarian, input, "a .npz archive (Marian)"};
  if (has_extension(p, {".yml", ".yaml"})) return {ModelFormat::kMarian, input, "a decoder.yml (Marian)"};
  throw Error(input + ": cannot tell the model's format: expected a Hugging Face MarianMT directory (with "
                      "config.json), a Marian model.npz or its decoder.yml (or say which with --from)");
}

DetectedModel model_format_as(const std::string& input, ModelFormat given) {
  DetectedModel detected;
  try {
    detected = detect_model_format(input);
  } catch (const Error&) {
    // Not recognised: the importer asked for reads it and says what is wrong.
    return {given, input, std::string("given as --from ") + model_format_name(given)};
  }
  if (detected.format == given) {
    // A directory stands for its decoder.yml or .npz only when the format was detected; with --from
    // marian a directory is read through what it holds, the same way.
    return detected;
  }
  throw Error(input + " is " + detected.reason + ", not --from " + model_format_name(given) + ": use --from " +
              model_format_name(detected.format) + ", or leave --from out (convert tells them apart)");
}

}  // namespace dragoman::convert
