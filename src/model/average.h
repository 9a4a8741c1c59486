// Checkpoint averaging (Vaswani et al. 2017, section 6.1: the last 5 checkpoints for base models,
// the last 20 for big ones): the element-wise mean of the weights of model files with the same
// model config and vocabulary, accumulated in float64 and rounded to float32 once.
#pragma once

#include <string>
#include <vector>

#include "model/checkpoint.h"
#include "model/transformer.h"

namespace dragoman::model {

struct AveragedModel {
  Transformer model;  // f32
  ModelFileInfo info;  // the newest input's step, the shared vocabulary, "averaged_from" metadata, and the
                       // decoding.*, converted_from and init_from metadata that every input has alike
};

// Throws dragoman::Error naming the file and what differs when the inputs' model configs or
// vocabularies differ, and for an empty list or an unreadable file.
AveragedModel average_model_files(const std::vector<std::string>& paths);

}  // namespace dragoman::model
