// Which instruction set the CPU kernels of this process run: the run-time dispatch of
// Dragoman's own row kernels (kernels/cpu/vector_math.h), by the CPU's features, not its model.
//
//   avx512:   AVX-512 F, BW, DQ and VL (Skylake-X and later, Zen 4 and later): 16 floats a register
//   avx2:     AVX2 and FMA (Haswell and later, every Zen): 8 floats a register
//   baseline: the x86-64 baseline (SSE2): 4 floats a register; the only level on other CPU families
//
// The best level the CPU (and the operating system: the wide registers must be saved) allows is used,
// unless the environment variable DRAGOMAN_CPU_ISA names a lower one ("avx512", "avx2", "baseline",
// case-insensitive), so that a machine with AVX-512 can run and test the paths of older CPUs. A level
// the CPU does not have, or a name not on that list, is an error (Error, naming the variable).
// Every level gives the same bits (vector_math.h), so forcing one changes only the speed.
#pragma once

#include <string>

namespace dragoman::cpu {

enum class CpuIsa { baseline = 0, avx2 = 1, avx512 = 2 };

// "baseline", "avx2", "avx512".
const char* cpu_isa_name(CpuIsa isa);

// The best level this CPU and OS support (read once from CPUID).
CpuIsa best_cpu_isa();

// Whether this CPU can run `isa`'s kernels (and this build has them).
bool cpu_supports(CpuIsa isa);

// The level the kernels run: best_cpu_isa(), or DRAGOMAN_CPU_ISA's. Decided on the first call (main
// calls it at start-up, so a bad DRAGOMAN_CPU_ISA stops the program before any work); throws Error
// for a bad value, on that call and every later one.
CpuIsa active_cpu_isa();

// DRAGOMAN_CPU_ISA's value parsed (for tests): throws Error for a name not on the list or a level
// the CPU lacks; `value` null or empty gives best_cpu_isa().
CpuIsa resolve_cpu_isa(const char* value);

// One line for --version and benchmark tables: the level running, and why (the CPU's best, or forced).
std::string cpu_isa_summary();

}  // namespace dragoman::cpu
