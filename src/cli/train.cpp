// `dragoman train`: trains a Transformer from a YAML config (options -> train/trainer.h). Without
// --config, an existing run resumes from its own RUN/config.yaml. SIGINT and SIGTERM stop after the
// current update with a checkpoint (or at once while the vocabulary or corpus is prepared, with
// none); the exit code is then 128 + signal. A second signal ends the process at once (the last
// checkpoint stays).
#include <spdlog/spdlog.h>

#include <cstdio>
#include <filesystem>

#include "base/error.h"
#include "cli/commands.h"
#include "cli/stop_signal.h"
#include "cli/validators.h"
#include "train/communicator.h"
#include "train/fine_tuning.h"
#include "train/trainer.h"

namespace dragoman::cli {
namespace {

struct TrainCliOptions {
  std::string config;
  std::vector<std::string> overrides;
  std::string run = "runs/default";
  std::string init;         // empty: the config's training.init_from
  std::string devices;      // empty: the config's training.devices
  double max_minutes = -1;  // < 0: the config's training.max_minutes
  bool overwrite = false;
  bool no_progress = false;
  bool dump_config = false;
};

// The config of the command line: -c FILE, or the run's own config.yaml when resuming without one;
// --set on top of either.
train::TrainConfig resolve_config(const TrainCliOptions& o) {
  std::string path = o.config;
  if (path.empty()) {
    path = (std::filesystem::path(o.run) / "config.yaml").string();
    if (!std::filesystem::exists(path)) {
      throw Error("train: no --config given and " + path + " does not exist (a new run needs -c FILE)");
    }
    spdlog::info("train: no --config: using the run's {}", path);
  }
  train::TrainConfig config = train::TrainConfig::load(path, o.overrides);
  if (!o.init.empty()) config.training.init_from = o.init;  // (relative to the working directory)
  if (!o.devices.empty()) config.training.devices = o.devices;
  if (o.max_minutes >= 0) config.training.max_minutes = o.max_minutes;
  config.make_paths_absolute();
  return config;
}

}  // namespace

Subcommand add_train(CLI::App& app) {
  auto o = std::make_shared<TrainCliOptions>();
  CLI::App* sub = app.add_subcommand(
      "train",
      "Train a Transformer from parallel text: YAML config (defaults < file < --set), checkpoints in the run "
      "directory; running the same command again resumes");
  sub->add_option("--config,-c", o->config,
                  "YAML config with sections model, data, training, checkpoint (default: the run's config.yaml, "
                  "to resume)")
      ->check(CLI::ExistingFile);
  sub->add_option("--set", o->overrides, "Override a config key: section.key=value (repeatable)");
  sub->add_option("--init", o->init,
                  "Start from this Dragoman model file (ours, or made by dragoman convert): its weights, architecture "
                  "and vocabulary, with the config's data, schedule and regularisation; sets training.init_from. A run "
                  "with checkpoints resumes from them")
      ->check(CLI::ExistingFile);
  sub->add_option("--run", o->run, "Run directory (config, vocabulary, caches, checkpoints, metrics)")
      ->capture_default_str();
  sub->add_option("--max-minutes", o->max_minutes,
                  "A time budget for the training, in minutes (sets training.max_minutes; with a decaying "
                  "lr_decay the run fixes the updates that fit and anneals to zero at them)")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--devices,--device", o->devices,
                  "The workers of each process: cpu, cpu:N (N CPU workers), cuda:I, cuda:A-B, cuda:0,1,2,3 or all "
                  "(sets training.devices; default: the config's, cpu)")
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            try {
              train::parse_devices(text, 1);  // the syntax ("all" is resolved when training starts)
            } catch (const Error& e) {
              return e.what();
            }
            return {};
          },
          "DEVICE"));
  sub->add_flag("--overwrite", o->overwrite, "Start afresh in a run directory that holds another run");
  sub->add_flag("--no-progress", o->no_progress,
                "No status line on a terminal below the log (updates done and planned, epoch, loss, ETA; never "
                "shown off a terminal)");
  sub->add_flag("--dump-config", o->dump_config, "Print the resolved config (YAML, data paths absolute) and exit; checked as train checks it");
  return {sub, [o] {
            // Under mpirun/srun, process 0 speaks for the run; the others report only errors.
            if (train::ProcessGroup::from_environment().rank != 0) spdlog::set_level(spdlog::level::err);
            train::TrainConfig config = resolve_config(*o);
            if (o->dump_config) {  // what train would run, so checked as train checks it
              config.validate();
              config.check_files();
              // Starting from a model: its architecture, as train takes it (Trainer::load_init_model).
              if (!config.training.init_from.empty()) {
                train::apply_init_model(config, train::read_model_file_config(config.training.init_from),
                                        config.training.init_from);
              }
              std::fputs(train::to_yaml(config.to_json()).c_str(), stdout);
              return 0;
            }
            const StopSignals signals;
            train::TrainOptions options;
            options.run_dir = o->run;
            options.overwrite = o->overwrite;
            options.progress_bar = !o->no_progress;
            options.stop_signal = signals.flag();
            const train::TrainResult result = train::train(config, options);
            if (result.interrupted) {
              // The signal this process received, or (in a multi-process run) one another received.
              const int signal = result.stop_signal > 0 ? result.stop_signal : signals.received();
              if (result.last_checkpoint.empty()) {
                spdlog::warn("train: interrupted by signal {} at step {}; nothing new to save", signal, result.step);
              } else {
                spdlog::warn(
                    "train: interrupted by signal {} at step {}; checkpoint saved ({}); run the same "
                    "command to resume",
                    signal, result.step, result.last_checkpoint);
              }
              return 128 + signal;
            }
            if (result.already_finished) {
              spdlog::info("train: the run was already finished at step {}{}", result.step,
                           result.early_stopped ? " (early stopping)" : "");
              return 0;
            }
            spdlog::info("train: done at step {}{}", result.step,
                         result.early_stopped  ? " (early stopping)"
                         : result.budget_spent ? " (the time budget, training.max_minutes, is spent)"
                                               : "");
            return 0;
          }};
}

}  // namespace dragoman::cli
