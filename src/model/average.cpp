#include "model/average.h"

#include <algorithm>
#include <filesystem>

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
    ops::add_(sum.parameters().values(), model.parameters().values());
    newest_step = std::max(newest_step, info.step);
  }
  ops::scale_(sum.parameters().values(), 1.0 / static_cast<double>(paths.size()));

  AveragedModel out{Transformer(sum.config(), DType::kF32), {}};
  out.model.parameters().values().copy_from(sum.parameters().values().to(DType::kF32));
  out.info.step = newest_step;
  out.info.vocabulary = first_info.vocabulary;
  out.info.imported = first_info.imported;
  nlohmann::json names = nlohmann::json::array();
  for (const std::string& path : paths) names.push_back(std::filesystem::path(path).filename().string());
  out.info.metadata["averaged_from"] = names.dump();
  return out;
}

}  // namespace dragoman::model
