// The first difference between two JSON values, for messages that say what differs between two
// configs ("model.d_ff: 2048 -> 4096").
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace dragoman {

// "" when equal; otherwise "KEY.PATH: A -> B" for the first differing key (object keys of `b` in
// order, then keys only `a` has), "(absent)" standing for a missing key.
std::string first_json_difference(const nlohmann::json& a, const nlohmann::json& b, const std::string& prefix = "");

// The parts of `value` that differ from `base`: objects key by key (recursively; keys equal in both
// left out, keys only `value` has kept), anything else whole. An empty object when nothing differs.
nlohmann::json json_changes(const nlohmann::json& base, const nlohmann::json& value);

}  // namespace dragoman
