#include "base/json_diff.h"

namespace dragoman {

std::string first_json_difference(const nlohmann::json& a, const nlohmann::json& b, const std::string& prefix) {
  if (a.is_object() && b.is_object()) {
    for (const auto& [key, value] : b.items()) {
      const std::string name = prefix.empty() ? key : prefix + "." + key;
      if (!a.contains(key)) return name + ": (absent) -> " + value.dump();
      const std::string d = first_json_difference(a[key], value, name);
      if (!d.empty()) return d;
    }
    for (const auto& [key, value] : a.items()) {
      if (!b.contains(key)) return (prefix.empty() ? key : prefix + "." + key) + ": " + value.dump() + " -> (absent)";
    }
    return "";
  }
  return a == b ? "" : prefix + ": " + a.dump() + " -> " + b.dump();
}

}  // namespace dragoman
