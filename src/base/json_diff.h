// The first difference between two JSON values, for messages that say what differs between two
// configs ("model.d_ff: 2048 -> 4096").
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace dragoman {

// "" when equal; otherwise "KEY.PATH: A -> B" for the first differing key (object keys of `b` in
// order, then keys only `a` has), "(absent)" standing for a missing key.
std::string first_json_difference(const nlohmann::json& a, const nlohmann::json& b, const std::string& prefix = "");

}  // namespace dragoman
