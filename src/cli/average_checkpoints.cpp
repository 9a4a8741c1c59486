// `dragoman average-checkpoints`: the element-wise mean of model files (model/average.h), given by
// name or as the last N checkpoints of a training run, written as one model file.
#include <spdlog/spdlog.h>

#include "base/error.h"
#include "cli/commands.h"
#include "cli/validators.h"
#include "io/atomic_file.h"
#include "model/average.h"
#include "train/trainer.h"

namespace dragoman::cli {
namespace {

struct AverageOptions {
  std::vector<std::string> inputs;
  std::string run;
  int last = 0;
  std::string output;
};

// The last `n` numbered checkpoints of a run directory (checkpoint-last/-best excluded).
std::vector<std::string> last_checkpoints(const std::string& run, int n) {
  const std::vector<std::int64_t> steps = train::checkpoint_steps(run);
  if (static_cast<int>(steps.size()) < n) {
    throw Error("average-checkpoints: " + run + " has " + std::to_string(steps.size()) +
                " complete checkpoints, fewer than --last " + std::to_string(n) +
                " (a run keeps its last checkpoint.keep_last checkpoints: raise it in the config to average more)");
  }
  std::vector<std::string> paths;
  for (std::size_t i = steps.size() - static_cast<std::size_t>(n); i < steps.size(); ++i) {
    paths.push_back(train::checkpoint_model_path(run, steps[i]));
  }
  return paths;
}

}  // namespace

Subcommand add_average_checkpoints(CLI::App& app) {
  auto o = std::make_shared<AverageOptions>();
  CLI::App* sub = app.add_subcommand(
      "average-checkpoints",
      "Average model files element-wise (float64 accumulation) into one model file, e.g. the last 5 (base) or 20 "
      "(big) checkpoints of a run, as the paper does");
  CLI::Option* inputs =
      sub->add_option("--inputs,-i", o->inputs, "Model files to average")->expected(1, -1)->check(CLI::ExistingFile);
  CLI::Option* run = sub->add_option("--run", o->run, "A training run directory (with --last)")
                         ->check(CLI::ExistingDirectory)
                         ->excludes(inputs);
  sub->add_option("--last", o->last, "Average the last N checkpoints of --run")->check(integer_at_least(1))->needs(run);
  sub->add_option("--output,-o", o->output, "The averaged model file (written atomically)")->required();
  return {sub, [o] {
            if (o->inputs.empty() && o->run.empty()) throw CLI::ValidationError("give --inputs, or --run and --last");
            if (!o->run.empty() && o->last == 0) throw CLI::ValidationError("--run needs --last N");
            const std::vector<std::string> paths = o->inputs.empty() ? last_checkpoints(o->run, o->last) : o->inputs;
            io::check_writable(o->output);  // before reading all the models
            for (const std::string& path : paths) spdlog::info("average-checkpoints: {}", path);
            const model::AveragedModel averaged = model::average_model_files(paths);
            model::save_model(o->output, averaged.model, averaged.info);
            spdlog::info("average-checkpoints: wrote {} ({} files, step {})", o->output, paths.size(),
                         averaged.info.step);
            return 0;
          }};
}

}  // namespace dragoman::cli
