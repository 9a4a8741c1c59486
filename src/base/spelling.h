// "Did you mean ...?" for names a user typed: a subcommand, a config key.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace dragoman {

// Edit distance with a swap of two neighbours counted as one edit ("trian" is 1 from "train").
std::size_t edit_distance(std::string_view a, std::string_view b);

// The candidate nearest to `name` when it is close: at most 2 edits and fewer than half of
// name's letters (the first of equally near ones); "" when none is.
std::string nearest_name(std::string_view name, const std::vector<std::string>& candidates);

}  // namespace dragoman
