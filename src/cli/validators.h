// Checks of numeric command-line values, shared by the subcommands. CLI11's own Range and
// PositiveNumber let nan through (every comparison with nan is false), call "abc" out of range
// instead of not a number, and print their bounds with std::to_string (1.797693e308 becomes 309
// digits). These read the whole value, refuse nan and inf, and state the bounds as a person
// would write them: "--beam: expected an integer from 1 to 1024, got 'abc'".
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <limits>
#include <string>

#include "device/cpu/threads.h"

namespace dragoman::cli {

// A decimal integer in [min, max].
CLI::Validator integer_in(std::int64_t min, std::int64_t max);
// An integer >= min (and within the option's type: callers pass its maximum).
CLI::Validator integer_at_least(std::int64_t min, std::int64_t max = std::numeric_limits<int>::max());
// A finite number in [min, max].
CLI::Validator number_in(double min, double max);
// Any finite number (no nan, no inf).
CLI::Validator finite_number();

// A device name Device::parse accepts (cpu, cuda, cuda:N): anything else is a usage error.
CLI::Validator device_name();

// The checks of a decoding command's --device and --precision (translate, serve), before anything
// loads: int8 is the CPU's (a usage error elsewhere); a CUDA device needs a CUDA build and must be
// there. Errors start with `command` ("translate", "serve").
void check_decoding_device(const std::string& command, const std::string& device, const std::string& precision);

// Adds `--threads N` to `sub`: 0 (the default) means OMP_NUM_THREADS or all cores, at most
// kMaxThreads (device/cpu/threads.h; resolve_threads there turns the value into a thread count).
CLI::Option* add_threads_option(CLI::App* sub, int& threads, const std::string& what);

}  // namespace dragoman::cli
