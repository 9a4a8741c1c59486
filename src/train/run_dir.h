// The files of a training run directory that are not the model itself (see trainer.h for the whole
// layout): checkpoint names and listings, the lock that keeps two trainers out of one directory,
// atomic links, and metrics.jsonl truncation on resume.
//
// Two kinds of checkpoint:
//   regular      checkpoints/checkpoint-STEP.safetensors (+ .state.safetensors): written on the
//                checkpoint schedule, at early stopping and at the end of training. They are the
//                ones `average-checkpoints --run --last N` averages, and checkpoint.keep_last of
//                them are kept.
//   interrupted  checkpoints/interrupted-STEP.safetensors (+ .state.safetensors): written when
//                SIGINT/SIGTERM stops a run between scheduled checkpoints. They are resumed from
//                but never averaged, and never count against keep_last; a newer checkpoint of
//                either kind replaces them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dragoman::train {

enum class CheckpointKind { kRegular, kInterrupted };

// The run directory's checkpoint files for `step`.
std::string checkpoint_model_path(const std::string& run_dir, std::int64_t step,
                                  CheckpointKind kind = CheckpointKind::kRegular);
std::string checkpoint_state_path(const std::string& run_dir, std::int64_t step,
                                  CheckpointKind kind = CheckpointKind::kRegular);
// The moving average's model file beside a checkpoint's model file (training.ema_decay):
// checkpoint-00001000.safetensors -> checkpoint-00001000.ema.safetensors.
std::string ema_model_path(const std::string& model_path);

// The steps of the run directory's complete regular checkpoints (model and state file), ascending.
std::vector<std::int64_t> checkpoint_steps(const std::string& run_dir);

struct CheckpointRef {
  std::int64_t step = 0;
  CheckpointKind kind = CheckpointKind::kRegular;
};

// Every checkpoint of either kind whose model and state files both exist, newest first (at equal
// steps the regular one first): the candidates for resuming.
std::vector<CheckpointRef> resumable_checkpoints(const std::string& run_dir);

// Renames a checkpoint's files to NAME.damaged so that neither resuming nor averaging picks them
// again (they are kept for inspection).
void set_aside_damaged_checkpoint(const std::string& run_dir, const CheckpointRef& checkpoint);

// Points `link` at `target` atomically (a hard link under a temporary name, renamed over).
void link_atomically(const std::string& target, const std::string& link);

// Keeps the metrics.jsonl lines with "step" <= `step` (a resumed run rewrites what came after its
// checkpoint); a torn last line is dropped.
void truncate_metrics(const std::string& path, std::int64_t step);

// An exclusive lock on RUN_DIR/train.lock (flock, released when the process ends, even by a
// crash). The file records who holds it; a second trainer gets an Error that says so.
class RunLock {
 public:
  explicit RunLock(const std::string& run_dir);
  ~RunLock();
  RunLock(const RunLock&) = delete;
  RunLock& operator=(const RunLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace dragoman::train
