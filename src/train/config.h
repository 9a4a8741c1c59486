// The training configuration: YAML with sections model / data / training / checkpoint, precedence
// defaults < YAML (a file may name a `base:` file it extends) < --set section.key=value. An unknown
// section or key, or a value of the wrong type, is an error naming the key and where it came from
// (file or --set). The resolved config is what the trainer logs and saves in the run directory.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "device/device.h"
#include "model/config.h"

namespace dragoman::train {

struct DataConfig {
  std::string train_source, train_target;             // line-aligned text files ...
  std::string train_tsv;                              // ... or one "source<TAB>target" file
  std::string valid_source, valid_target, valid_tsv;  // optional dev set
  std::string vocabulary;                             // a SentencePiece .model; empty: built into the run directory
  std::string vocab_type = "bpe";
  std::int64_t vocab_size = 8000;
  double character_coverage = 1.0;
  std::int64_t vocab_sample = 2000000;  // sentences sampled to build the vocabulary (0: all)
  std::int64_t max_length = 250;        // tokens per side; longer training pairs are dropped
  double max_ratio = 3.0;               // length ratio filter (0: off)
  // A curriculum for the first epoch (data/batching.h): its batches go from short to long sentences
  // over this share of it (0: off, the batches shuffled as in every epoch), starting with the
  // shortest curriculum_start of them open.
  double curriculum = 0.0;
  double curriculum_start = 0.3;
};

struct TrainingConfig {
  std::uint64_t seed = 1;
  // A model file to start from (train/fine_tuning.h): its weights, architecture and vocabulary; the
  // optimizer and the schedule start afresh. Read when the run starts; a run with checkpoints
  // resumes from them. Empty: random weights.
  std::string init_from;
  // Parameters kept as they are: a comma-separated list of embeddings (token and learned position
  // embeddings; with a tied output, its projection too), encoder, decoder, output_bias. Empty: none.
  std::string freeze;
  // The last matrix of every residual branch (attention's out_proj, the feed-forward's fc2) starts
  // at zero instead of Xavier-uniform: every branch starts by adding nothing (pre-norm: every
  // layer is the identity; torchvision's zero_init_residual). A fresh run's initialisation only.
  bool zero_init_residual = false;
  std::int64_t max_tokens = 4096;  // per batch, source and target each, padding counted
  // The tokens of an update (source and target each, padding counted; 0: not set): the batches each
  // worker accumulates are derived from it, max_tokens and the number of workers at every start, so
  // the batch is the same on 1 or 8 GPUs (train/accumulation.h). Give this or update_freq.
  std::int64_t tokens_per_update = 0;
  // Batches accumulated per update on each worker (an update is workers x update_freq batches);
  // 0: derived from tokens_per_update, or 1 without it.
  std::int64_t update_freq = 0;
  std::int64_t max_steps = 100000;  // updates (0: no limit)
  std::int64_t max_epochs = 0;      // 0: no limit
  // A wall-clock budget for the training loop, in minutes (0: none; train/budget.h): with a
  // decaying lr_decay the run measures its pace, fixes the number of updates that fits and anneals
  // to zero at it; with inverse_sqrt the budget only stops the run.
  double max_minutes = 0.0;
  double lr_factor = 1.0;  // lr = factor * d_model^-0.5 * min(step^-0.5, step * warmup^-1.5)
  double lr = 0.0;         // > 0: the peak instead: lr * min(step / warmup, sqrt(warmup / step))
  std::int64_t warmup_steps = 4000;
  // After the warmup: inverse_sqrt (the paper), constant (the peak held), or linear / cosine decay
  // to 0 at max_steps, or at the updates that fit max_minutes (train/schedule.h).
  std::string lr_decay = "inverse_sqrt";
  double lr_hold = 0.0;  // linear / cosine: the fraction of the updates after the warmup held at the peak
  double adam_beta1 = 0.9, adam_beta2 = 0.98, adam_eps = 1e-9, weight_decay = 0.0;
  // adam (every parameter), or muon: Muon over the encoder's and decoder's weight matrices, Adam
  // over the rest (train/optimizer.h). Muon's learning rate is lr(step) * muon_lr_scale, its update
  // scaled to Adam's root-mean-square; muon_momentum (Nesterov) and muon_ns_steps (Newton-Schulz
  // iterations) as torch.optim.Muon's. weight_decay applies to both (decoupled).
  std::string optimizer = "adam";
  double muon_lr_scale = 2.5, muon_momentum = 0.95;
  std::int64_t muon_ns_steps = 5;
  // An exponential moving average of the weights (Marian's exponential smoothing, fairseq's EMA):
  // ema = decay * ema + (1 - decay) * weights after every update, kept in fp32 beside the master
  // weights, in the checkpoints, written as its own model file and used by validation (0: off).
  double ema_decay = 0.0;
  double clip_norm = 0.0;  // 0: no clipping
  std::int64_t log_every = 100;
  std::int64_t valid_every = 1000;  // 0: no validation
  bool valid_bleu = false;          // validation also translates the dev set and scores BLEU
  std::int64_t valid_beam = 4;      // beam for that (1: greedy, faster)
  std::string best_metric = "nll";  // nll or bleu: decides checkpoint-best and patience
  std::int64_t patience = 0;        // stop after this many validations without improvement (0: never)
  std::int64_t threads = 0;         // 0: all cores (the CPU's compute threads; data work on a GPU run)
  // The data-parallel workers of each process (parse_devices): "cpu", "cpu:4", "cuda:0",
  // "cuda:0-7", "all". Under mpirun/srun every process runs these workers.
  std::string devices = "cpu";
  // Compute precision (docs/MODEL.md, "Precision"): fp32, bf16 or fp16, from fp32 master weights.
  std::string precision = "fp32";
  // fp16's dynamic loss scaling: the first scale, updates without overflow before it doubles, and
  // the smallest scale (reached: the run stops). A step whose gradients overflow is skipped and
  // halves the scale.
  double loss_scale = 65536.0;
  std::int64_t loss_scale_window = 2000;
  double min_loss_scale = 1.0 / 16384;
};

struct CheckpointConfig {
  std::int64_t every_steps = 0;  // 0: off
  double every_minutes = 10.0;   // 0: off
  std::int64_t keep_last = 5;
};

struct TrainConfig {
  model::ModelConfig model;
  DataConfig data;
  TrainingConfig training;
  CheckpointConfig checkpoint;

  // The model section's keys the config gave (over the defaults): with training.init_from, the
  // architecture keys among them must agree with the model file's, the others come from it.
  std::vector<std::string> model_keys_given;

  nlohmann::json to_json() const;
  // Parses a {model, data, training, checkpoint} object over the defaults; unknown keys and wrong
  // types are errors naming `source`. Data paths are used as given; load() makes those of a config
  // file absolute against its directory, make_paths_absolute() the rest against the working one.
  static TrainConfig from_json(const nlohmann::json& json, const std::string& source);
  // defaults < the YAML file (and the `base:` files it names) < overrides "section.key=value".
  // An override with an empty value ("data.valid_source=") puts the key back to its default.
  // A relative data path in a file is relative to that file's directory (a `base:` file's to its
  // own); one given by an override stays as given (the working directory's).
  static TrainConfig load(const std::string& path, const std::vector<std::string>& overrides);
  // Throws unless the config can train: data given, budgets positive, ...
  void validate() const;
  // Throws, naming the config key, unless every data path given names a readable file.
  void check_files() const;
  // The data file paths (and data.vocabulary, training.init_from) made absolute against the working
  // directory.
  void make_paths_absolute();
};

// The workers of training.devices: "cpu" (one), "cpu:N" (N CPU workers), "cuda" (cuda:0), "cuda:I",
// "cuda:A-B", comma lists of those (a bare index or range continues a CUDA list: "cuda:0,1,2,3"), or
// "all" (the `visible_gpus` GPUs; an Error when there are none). CPU workers are the same device N
// times; a GPU is given at most once; CPU and GPUs are not mixed. An Error names what is wrong.
std::vector<Device> parse_devices(const std::string& text, int visible_gpus);

// The YAML text of a JSON value (the resolved config written into the run directory).
std::string to_yaml(const nlohmann::json& json);

}  // namespace dragoman::train
