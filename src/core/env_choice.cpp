#include "core/env_choice.h"

#include <cstdlib>
#include <string_view>

#include "core/error.h"

namespace dragoman {

EnvChoice::EnvChoice(const char* variable, std::initializer_list<const char*> choices)
    : variable_(variable), choices_(choices) {}

std::string EnvChoice::expected() const {
  std::string list;
  for (std::size_t i = 0; i < choices_.size(); ++i) {
    if (i > 0) list += i + 1 == choices_.size() ? " or " : ", ";
    list += choices_[i];
  }
  return list;
}

int EnvChoice::get() {
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

void EnvChoice::set(int index) {
  if (index < 0 || index >= static_cast<int>(choices_.size())) {
    throw Error(std::string(variable_) + ": no choice " + std::to_string(index) + " (expected " + expected() + ")");
  }
  chosen_ = index;
}

}  // namespace dragoman
