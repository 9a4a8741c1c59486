// The row kernels of vector_math.h for the baseline level (vector_math_kernels.h; compiled with that
// level's flags, src/CMakeLists.txt).
#define DRAGOMAN_VECTOR_WIDTH 4
#define DRAGOMAN_VECTOR_NAMESPACE baseline_kernels
#define DRAGOMAN_VECTOR_ISA CpuIsa::baseline
#define DRAGOMAN_VECTOR_TABLE kBaselineVectorKernels
#include "kernels/cpu/vector_math_kernels.h"
