// Build information (see build_info.h). The CUDA part comes from dragoman_cuda when the build has
// it; a CPU-only build says so.
#include "ops/build_info.h"

#include <cblas.h>
#include <spdlog/version.h>

#include <cstdlib>
#include <string>

#include "device/cpu/cpu_isa.h"
#include "device/cuda/runtime_info.h"
#include "device/device.h"
#include "kernels/cpu/quantize.h"

#ifdef DRAGOMAN_WITH_ONEDNN
#include <oneapi/dnnl/dnnl.h>
#endif

namespace dragoman::ops {

const char* version() { return DRAGOMAN_VERSION; }

bool built_with_cuda() { return kWithCuda; }

namespace {

// " (NAME=value)" when the environment sets NAME, else "".
std::string setting(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? std::string(" (") + name + "=" + value + ")" : std::string();
}

}  // namespace

std::string openblas_core_hint(const std::string& core, bool coretype_set, bool avx2, bool avx512) {
  const bool sse_era = core == "Prescott" || core == "Core2" || core == "Penryn" || core == "Dunnington" ||
                       core == "Nehalem" || core == "Barcelona" || core == "Opteron" || core == "Opteron_SSE3";
  if (!sse_era || coretype_set || !avx2) return std::string();
  return std::string(": it does not know this CPU; OPENBLAS_CORETYPE=") + (avx512 ? "SkylakeX" : "Haswell") +
         " gives it faster ones";
}

std::string cpu_kernels_info() {
  std::string text = "CPU row kernels: " + cpu::cpu_isa_summary() + "\n";
  // Which kernels OpenBLAS runs on this CPU: Debian's 0.3.21 knows no CPU newer than its release
  // (an AVX-512 CPU may get its Haswell kernels), and OPENBLAS_CORETYPE can force older ones.
  // A CPU newer than Debian's OpenBLAS gets its SSE-era kernels (seen: "Prescott" on an H200
  // machine's host CPU): the hint says how to give it the ones it can run.
  const std::string core = openblas_get_corename();
  const std::string openblas =
      "OpenBLAS with its " + core + " kernels" + setting("OPENBLAS_CORETYPE") +
      openblas_core_hint(core, std::getenv("OPENBLAS_CORETYPE") != nullptr, cpu::cpu_supports(cpu::CpuIsa::avx2),
                         cpu::cpu_supports(cpu::CpuIsa::avx512));
#ifdef DRAGOMAN_WITH_ONEDNN
  const dnnl_version_t* dnnl = dnnl_version();
  text += "CPU GEMM: oneDNN " + std::to_string(dnnl->major) + "." + std::to_string(dnnl->minor) + "." +
          std::to_string(dnnl->patch) + " running " + cpu::onednn_isa_name() + setting("ONEDNN_MAX_CPU_ISA") +
          " (f32, int8), " + openblas + " (f64)\n";
#else
  text += "CPU GEMM: " + openblas + "\n";
#endif
  text += "int8 decoding: " + cpu::int8_summary() + "\n";
  return text;
}

std::string build_info() {
  std::string text = std::string("dragoman ") + version() + " (git " + git_revision() + ")\n";
  text += cpu_kernels_info();
  if constexpr (kWithCuda) {
    text += cuda::runtime_info();
  } else {
    text += "CUDA: no (CPU-only build)\n";
  }
  return text;
}

}  // namespace dragoman::ops
