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

namespace dragoman::cli {

// A decimal integer in [min, max].
CLI::Validator integer_in(std::int64_t min, std::int64_t max);
// An integer >= min (and within the option's type: callers pass its maximum).
CLI::Validator integer_at_least(std::int64_t min, std::int64_t max = std::numeric_limits<int>::max());
// A finite number in [min, max].
CLI::Validator number_in(double min, double max);
// Any finite number (no nan, no inf).
CLI::Validator finite_number();

// The most threads any subcommand accepts: far above any machine this runs on, and below the
// point where a typo (--threads 10000) would start that many threads.
inline constexpr int kMaxThreads = 1024;

// Adds `--threads N` to `sub`: 0 (the default) means OMP_NUM_THREADS or all cores (below), at most
// kMaxThreads.
CLI::Option* add_threads_option(CLI::App* sub, int& threads, const std::string& what);

// The thread count a command uses for `requested`; 0 means OMP_NUM_THREADS when that is set, else
// all cores. Warns when the count asked for is more than the machine's cores: threads that
// outnumber the cores wait for each other.
int resolve_threads(int requested, const std::string& command);

}  // namespace dragoman::cli
