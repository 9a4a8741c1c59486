// The row kernels of vector_math.h for the avx512 level (vector_math_kernels.h; compiled with that
// level's flags, src/CMakeLists.txt).
#define DRAGOMAN_VECTOR_WIDTH 16
#define DRAGOMAN_VECTOR_NAMESPACE avx512_kernels
#define DRAGOMAN_VECTOR_ISA CpuIsa::avx512
#define DRAGOMAN_VECTOR_TABLE kAvx512VectorKernels
#include "kernels/cpu/vector_math_kernels.h"
