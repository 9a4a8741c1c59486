// Build information (see build_info.h). The CUDA part comes from dragoman_cuda when the build has
// it; a CPU-only build says so.
#include "core/build_info.h"

#include <spdlog/version.h>

#ifdef DRAGOMAN_WITH_CUDA
#include "kernels/cuda/runtime_info.h"
#endif

namespace dragoman {

const char* version() { return DRAGOMAN_VERSION; }

bool built_with_cuda() {
#ifdef DRAGOMAN_WITH_CUDA
  return true;
#else
  return false;
#endif
}

std::string build_info() {
  std::string text = std::string("dragoman ") + version() + " (git " + git_revision() + ")\n";
#ifdef DRAGOMAN_WITH_CUDA
  text += cuda::runtime_info();
#else
  text += "CUDA: no (CPU-only build)\n";
#endif
  return text;
}

}  // namespace dragoman
