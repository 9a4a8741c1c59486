// DType sizes and names (see dtype.h).
#include "base/dtype.h"

namespace dragoman {

std::size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::kF32: return 4;
    case DType::kF64: return 8;
    case DType::kI32: return 4;
    case DType::kBF16: return 2;
    case DType::kF16: return 2;
    case DType::kU8: return 1;
    case DType::kI8: return 1;
  }
  return 0;
}

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kF32: return "F32";
    case DType::kF64: return "F64";
    case DType::kI32: return "I32";
    case DType::kBF16: return "BF16";
    case DType::kF16: return "F16";
    case DType::kU8: return "U8";
    case DType::kI8: return "I8";
  }
  return "?";
}

bool parse_dtype(std::string_view name, DType& dtype) {
  for (DType d : {DType::kF32, DType::kF64, DType::kI32, DType::kBF16, DType::kF16, DType::kU8, DType::kI8}) {
    if (name == dtype_name(d)) {
      dtype = d;
      return true;
    }
  }
  return false;
}

const char* precision_name(DType dtype) {
  switch (dtype) {
    case DType::kF32: return "fp32";
    case DType::kBF16: return "bf16";
    case DType::kF16: return "fp16";
    default: return dtype_name(dtype);
  }
}

bool parse_precision(std::string_view name, DType& dtype) {
  for (DType d : {DType::kF32, DType::kBF16, DType::kF16}) {
    if (name == precision_name(d)) {
      dtype = d;
      return true;
    }
  }
  return false;
}

}  // namespace dragoman
