// Starting a run from a model file (training.init_from, `train --init`): the model's architecture
// and vocabulary with the config's data, schedule, optimizer and regularisation; and freezing
// parameters (training.freeze). docs/TRAINING.md, "Fine-tuning a model".
#pragma once

#include <string>
#include <vector>

#include "model/config.h"

namespace dragoman::train {

struct TrainConfig;

// The model section's keys that are the config's to choose when starting from a model: the
// regularisation. Every other key is the architecture, which comes from the model file.
bool is_regularisation_key(const std::string& model_key);

// The ModelConfig in a Dragoman model file's header (no weights read). Errors name the file and,
// for a file that is not a Dragoman model, say how to convert one.
model::ModelConfig read_model_file_config(const std::string& path);

// config.model with the architecture of `from` (read from `path`, named in messages): a key the
// config gave (model_keys_given) must agree with the model's, or an error names both values; the
// regularisation keys stay the config's.
void apply_init_model(TrainConfig& config, const model::ModelConfig& from, const std::string& path);

// The groups of training.freeze ("embeddings,encoder": {"embeddings", "encoder"}); an unknown
// group or an empty item is an error naming the known ones.
std::vector<std::string> freeze_groups(const std::string& text);

// Whether parameter `name` (docs/MODEL.md's names) belongs to one of `groups`: embeddings (the token
// embeddings, shared or not, and learned positions), encoder ("encoder.*"), decoder ("decoder.*" and
// an untied output projection and its bias, "output.*"), output_bias ("output.bias": transformers
// keeps MarianMT's final_logits_bias fixed). A shared embedding is in neither side.
bool is_frozen(const std::string& name, const std::vector<std::string>& groups);

}  // namespace dragoman::train
