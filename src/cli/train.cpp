// `dragoman train`: trains a Transformer from a YAML config (options -> train/trainer.h). SIGINT and
// SIGTERM stop after the current update with a checkpoint; the exit code is then 128 + signal. A
// second signal ends the process at once (the last checkpoint stays).
#include <spdlog/spdlog.h>

#include "cli/commands.h"
#include "cli/stop_signal.h"
#include "core/device.h"
#include "core/error.h"
#include "train/trainer.h"

namespace dragoman::cli {
namespace {

struct TrainCliOptions {
  std::string config;
  std::vector<std::string> overrides;
  std::string run = "runs/default";
  std::string device = "cpu";
  bool overwrite = false;
};

}  // namespace

Subcommand add_train(CLI::App& app) {
  auto o = std::make_shared<TrainCliOptions>();
  CLI::App* sub = app.add_subcommand(
      "train",
      "Train a Transformer from parallel text: YAML config (defaults < file < --set), checkpoints in the run "
      "directory; running the same command again resumes");
  sub->add_option("--config,-c", o->config, "YAML config with sections model, data, training, checkpoint")
      ->check(CLI::ExistingFile);
  sub->add_option("--set", o->overrides, "Override a config key: section.key=value (repeatable)");
  sub->add_option("--run", o->run, "Run directory (config, vocabulary, caches, checkpoints, metrics)")
      ->capture_default_str();
  sub->add_option("--device", o->device, "cpu (CUDA training is not in this version)")->capture_default_str();
  sub->add_flag("--overwrite", o->overwrite, "Start afresh in a run directory that holds another run");
  return {sub, [o] {
            if (!Device::parse(o->device).is_cpu()) {
              throw Error("train: --device " + o->device + ": this version trains on the CPU only");
            }
            const TrainConfig config = TrainConfig::load(o->config, o->overrides);
            const StopSignals signals;
            TrainOptions options;
            options.run_dir = o->run;
            options.overwrite = o->overwrite;
            options.stop_signal = signals.flag();
            const TrainResult result = train(config, options);
            if (result.interrupted) {
              spdlog::warn("train: interrupted by signal {} at step {}; checkpoint saved; run the same command to "
                           "resume",
                           signals.received(), result.step);
              return 128 + signals.received();
            }
            spdlog::info("train: done at step {}{}", result.step, result.early_stopped ? " (early stopping)" : "");
            return 0;
          }};
}

}  // namespace dragoman::cli
