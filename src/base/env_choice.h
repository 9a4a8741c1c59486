// A process-wide choice among named settings, taken from an environment variable on first use and
// overridable by the program (tests, benchmarks): DRAGOMAN_CUDA_ATTENTION, DRAGOMAN_CUDA_GRAD_EPILOGUES.
// Header-only: dragoman_cuda uses it and links nothing of dragoman_core (docs/ARCHITECTURE.md).
#pragma once

#include <atomic>
#include <cstdlib>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"

namespace dragoman {

class EnvChoice {
 public:
  // choices[0] is the default, taken when the variable is unset or empty. Keep one as a function's
  // static (initialised on first use, whatever the order of the translation units' initialisers).
  EnvChoice(const char* variable, std::initializer_list<const char*> choices)
      : variable_(variable), choices_(choices) {}

  // The index of the choice: set()'s if called, else the variable's, read once (thread-safe). A value
  // that is not one of the choices is an Error naming the variable, the value and the choices, thrown
  // by every call until set() is.
  int get();
  void set(int index);  // an index into the choices; anything else is an Error

  // For the error message of get(): "auto, naive, tiled or mma".
  std::string expected() const;

 private:
  const char* variable_;
  std::vector<const char*> choices_;
  std::atomic<int> chosen_{-1};  // -1: not read yet
};

inline std::string EnvChoice::expected() const {
  std::string list;
  for (std::size_t i = 0; i < choices_.size(); ++i) {
    if (i > 0) list += i + 1 == choices_.size() ? " or " : ", ";
    list += choices_[i];
  }
  return list;
}

inline int EnvChoice::get() {
  int chosen = chosen_.load();
  if (chosen >= 0) return chosen;
  const char* value = std::getenv(variable_);
  const std::string_view name = value != nullptr ? value : "";
  int index = name.empty() ? 0 : -1;
  for (std::size_t i = 0; i < choices_.size() && index < 0; ++i) {
    if (name == choices_[i]) index = static_cast<int>(i);
  }
  if (index < 0) throw Error(std::string(variable_) + " is '" + std::string(name) + "': expected " + expected());
  int expected_value = -1;
  chosen_.compare_exchange_strong(expected_value, index);
  return chosen_.load();
}

inline void EnvChoice::set(int index) {
  if (index < 0 || index >= static_cast<int>(choices_.size())) {
    throw Error(std::string(variable_) + ": no choice " + std::to_string(index) + " (expected " + expected() + ")");
  }
  chosen_ = index;
}

}  // namespace dragoman
