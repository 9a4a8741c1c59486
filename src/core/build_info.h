// What this binary is: version, git revision, and the CUDA libraries it was built with.
#pragma once

#include <string>

namespace dragoman {

const char* version();
const char* git_revision();  // generated at build time by cmake/GitRevision.cmake
bool built_with_cuda();

// The lines of --version that say what the CPU work runs: Dragoman's row kernels' instruction-set
// level, oneDNN's (its effective ISA) and OpenBLAS's kernels, and int8's weight bits. Benchmarks
// print them above their tables: a number measured on one CPU path is a number for that path.
std::string cpu_kernels_info();

// The multi-line text of `dragoman --version`.
std::string build_info();

}  // namespace dragoman
