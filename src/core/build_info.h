// What this binary is: version, git revision, and the CUDA libraries it was built with.
#pragma once

#include <string>

namespace dragoman {

const char* version();
const char* git_revision();  // generated at build time by cmake/GitRevision.cmake
bool built_with_cuda();

// The multi-line text of `dragoman --version`.
std::string build_info();

}  // namespace dragoman
