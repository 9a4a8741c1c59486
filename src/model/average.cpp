#include "model/average.h"

#include <algorithm>
#include <filesystem>
#include <iterator>
#include <map>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/json_diff.h"
#include "ops/elementwise.h"

namespace dragoman::model {

AveragedModel average_model_files(const std::vector<std::string>& paths) {
  if (paths.empty()) throw Error("average-checkpoints: no input model files");
  ModelFileInfo first_info;
  Transformer sum = load_model(paths[0], DType::kF64, &first_info);  // f32 -> f64 is exact
  std::int64_t newest_step = first_info.step;
  // The metadata the files share that describes the model rather than one file: its recommended
  // decoding settings (decoding.*), where it came from (converted_from, init_from), kept when every
  // file has the same value.
  const auto carried = [](const std::string& key) {
    return key.rfind("decoding.", 0) == 0 || key == "converted_from" || key == "init_from";
  };
  std::map<std::string, std::string> shared;
  for (const auto& [key, value] : first_info.metadata) {
    if (carried(key)) shared[key] = value;
  }
  for (std::size_t i = 1; i < paths.size(); ++i) {
    ModelFileInfo info;
    const Transformer model = load_model(paths[i], DType::kF64, &info);
    if (model.config() != sum.config()) {
      throw Error("average-checkpoints: " + paths[i] + " has another model config than " + paths[0] + " (" +
                  first_json_difference(sum.config().to_json(), model.config().to_json()) + ")");
    }
    if (info.vocabulary != first_info.vocabulary || info.imported != first_info.imported) {
      throw Error("average-checkpoints: " + paths[i] + " has another vocabulary than " + paths[0]);
    }
    for (auto it = shared.begin(); it != shared.end();) {
      const auto same = info.metadata.find(it->first);
      it = same != info.metadata.end() && same->second == it->second ? std::next(it) : shared.erase(it);
    }
    ops::add_(sum.parameters().values(), model.parameters().values());
    newest_step = std::max(newest_step, info.step);
  }
  ops::scale_(sum.parameters().values(), 1.0 / static_cast<double>(paths.size()));

  AveragedModel out{Transformer(sum.config(), DType::kF32), {}};
  out.model.parameters().values().copy_from(sum.parameters().values().to(DType::kF32));
  out.info.step = newest_step;
  out.info.vocabulary = first_info.vocabulary;
  out.info.imported = first_info.imported;
  out.info.metadata = shared;
  nlohmann::json names = nlohmann::json::array();
  for (const std::string& path : paths) names.push_back(std::filesystem::path(path).filename().string());
  out.info.metadata["averaged_from"] = names.dump();
  return out;
}

}  // namespace dragoman::model
