// The sinusoid position table's layouts (ops::sinusoid_positions, ModelConfig::sinusoid_layout):
// an op's argument that the model config also stores, so it lives here, below both.
#pragma once

namespace dragoman::ops {

// The paper's interleaved sin/cos pairs; the sines then the cosines at the same frequencies
// (Hugging Face's MarianMT); the sines then the cosines at tensor2tensor's frequencies
// 10000^(-i / (D/2 - 1)) (Marian, fairseq). docs/MODEL.md shows each.
enum class SinusoidLayout { kInterleaved, kConcatenated, kTensor2Tensor };

}  // namespace dragoman::ops
