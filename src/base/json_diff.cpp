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

nlohmann::json json_changes(const nlohmann::json& base, const nlohmann::json& value) {
  nlohmann::json changes = nlohmann::json::object();
  if (!base.is_object() || !value.is_object()) return base == value ? changes : value;
  for (const auto& [key, v] : value.items()) {
    if (!base.contains(key)) {
      changes[key] = v;
    } else if (base[key] != v) {
      changes[key] = base[key].is_object() && v.is_object() ? json_changes(base[key], v) : v;
    }
  }
  return changes;
}

}  // namespace dragoman
