// A process-wide choice among named settings, taken from an environment variable on first use and
// overridable by the program (tests, benchmarks): DRAGOMAN_CUDA_ATTENTION, DRAGOMAN_CUDA_GRAD_EPILOGUES.
#pragma once

#include <atomic>
#include <initializer_list>
#include <string>
#include <vector>

namespace dragoman {

class EnvChoice {
 public:
  // choices[0] is the default, taken when the variable is unset or empty. Keep one as a function's
  // static (initialised on first use, whatever the order of the translation units' initialisers).
  EnvChoice(const char* variable, std::initializer_list<const char*> choices);

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

}  // namespace dragoman
