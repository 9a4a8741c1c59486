// What this binary is: version, git revision, and the CUDA libraries it was built with.
#pragma once

#include <string>

namespace dragoman::ops {

const char* version();
const char* git_revision();  // generated at build time by cmake/GitRevision.cmake
bool built_with_cuda();

// The lines of --version that say what the CPU work runs: Dragoman's row kernels' instruction-set
// level, oneDNN's (its effective ISA) and OpenBLAS's kernels, and int8's weight bits. Benchmarks
// print them above their tables: a number measured on one CPU path is a number for that path.
std::string cpu_kernels_info();

// What to tell a user whose OpenBLAS runs its SSE-era kernels (`core`: openblas_get_corename())
// on a CPU with AVX2 (a CPU newer than Debian's OpenBLAS, which it does not recognise), unless
// OPENBLAS_CORETYPE is already set: ": it does not know this CPU; OPENBLAS_CORETYPE=Haswell gives
// it faster ones" (SkylakeX with AVX-512). Empty otherwise.
std::string openblas_core_hint(const std::string& core, bool coretype_set, bool avx2, bool avx512);

// The multi-line text of `dragoman --version`.
std::string build_info();

}  // namespace dragoman::ops
