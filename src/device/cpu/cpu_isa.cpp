// The CPU's instruction-set level and DRAGOMAN_CPU_ISA (see cpu_isa.h).
#include "device/cpu/cpu_isa.h"

#include <cctype>
#include <cstdlib>
#include <exception>
#include <string>

#include "base/error.h"

namespace dragoman::cpu {
namespace {

constexpr const char* kVariable = "DRAGOMAN_CPU_ISA";

bool cpu_has(CpuIsa isa) {
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  // libgcc sets a feature only when the OS saves its registers too (XGETBV), so a kernel that does
  // not enable AVX-512's state reports no AVX-512.
  switch (isa) {
    case CpuIsa::baseline: return true;
    case CpuIsa::avx2: return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case CpuIsa::avx512:
      return cpu_has(CpuIsa::avx2) && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  }
  return false;
#else
  return isa == CpuIsa::baseline;  // other CPU families: the portable kernels only
#endif
}

std::string lower(const char* value) {
  std::string s(value);
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

struct Decision {
  CpuIsa isa = CpuIsa::baseline;
  std::string error;  // non-empty: DRAGOMAN_CPU_ISA is bad, thrown on every call
};

const Decision& decision() {
  static const Decision d = [] {
    Decision made;
    try {
      made.isa = resolve_cpu_isa(std::getenv(kVariable));
    } catch (const std::exception& e) {
      made.error = e.what();
    }
    return made;
  }();
  return d;
}

}  // namespace

const char* cpu_isa_name(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::baseline: return "baseline";
    case CpuIsa::avx2: return "avx2";
    case CpuIsa::avx512: return "avx512";
  }
  return "unknown";
}

bool cpu_supports(CpuIsa isa) {
  static const bool avx2 = cpu_has(CpuIsa::avx2), avx512 = cpu_has(CpuIsa::avx512);
  switch (isa) {
    case CpuIsa::baseline: return true;
    case CpuIsa::avx2: return avx2;
    case CpuIsa::avx512: return avx512;
  }
  return false;
}

CpuIsa best_cpu_isa() {
  if (cpu_supports(CpuIsa::avx512)) return CpuIsa::avx512;
  if (cpu_supports(CpuIsa::avx2)) return CpuIsa::avx2;
  return CpuIsa::baseline;
}

CpuIsa resolve_cpu_isa(const char* value) {
  if (value == nullptr || *value == '\0') return best_cpu_isa();
  const std::string name = lower(value);
  CpuIsa isa;
  if (name == "avx512") {
    isa = CpuIsa::avx512;
  } else if (name == "avx2") {
    isa = CpuIsa::avx2;
  } else if (name == "baseline") {
    isa = CpuIsa::baseline;
  } else {
    throw Error(std::string(kVariable) + "=" + value + ": expected avx512, avx2 or baseline");
  }
  if (!cpu_supports(isa)) {
    throw Error(std::string(kVariable) + "=" + value + ": this CPU cannot run it (its best is " +
                cpu_isa_name(best_cpu_isa()) + ")");
  }
  return isa;
}

CpuIsa active_cpu_isa() {
  const Decision& d = decision();
  if (!d.error.empty()) throw Error(d.error);
  return d.isa;
}

std::string cpu_isa_summary() {
  const CpuIsa isa = active_cpu_isa();
  const CpuIsa best = best_cpu_isa();
  std::string text = std::string(cpu_isa_name(isa));
  if (isa == best) {
    text += " (the best this CPU has)";
  } else {
    text += std::string(" (forced by ") + kVariable + "; this CPU has " + cpu_isa_name(best) + ")";
  }
  return text;
}

}  // namespace dragoman::cpu
