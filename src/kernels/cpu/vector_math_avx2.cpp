// The row kernels of vector_math.h for the avx2 level (vector_math_kernels.h; compiled with that
// level's flags, src/CMakeLists.txt).
#define DRAGOMAN_VECTOR_WIDTH 8
#define DRAGOMAN_VECTOR_NAMESPACE avx2_kernels
#define DRAGOMAN_VECTOR_ISA CpuIsa::avx2
#define DRAGOMAN_VECTOR_TABLE kAvx2VectorKernels
#include "kernels/cpu/vector_math_kernels.h"
