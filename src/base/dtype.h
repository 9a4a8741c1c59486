// Element types of tensors and checkpoint entries, with their safetensors names and sizes.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace dragoman {

// f32 everywhere on CPU; f64 for gradient checks; i32 for token ids; bf16/f16 for CUDA compute;
// u8 for raw bytes in checkpoints (an embedded SentencePiece model, for example).
enum class DType { kF32, kF64, kI32, kBF16, kF16, kU8, kI8 };

std::size_t dtype_size(DType dtype);
// safetensors' names: "F32", "F64", "I32", "BF16", "F16", "U8".
const char* dtype_name(DType dtype);
// The DType of a safetensors name; false if Dragoman does not support it.
bool parse_dtype(std::string_view name, DType& dtype);

// The compute precisions users name (training.precision, translate --precision): "fp32", "bf16",
// "fp16" for f32, bf16, f16.
const char* precision_name(DType dtype);
bool parse_precision(std::string_view name, DType& dtype);

}  // namespace dragoman
