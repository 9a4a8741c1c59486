// base/json_diff: the first difference between two JSON values (messages that say what differs
// between two configs) and the parts of a value that differ from a base (train's log of its config).
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "base/json_diff.h"

namespace dragoman {

TEST_CASE("first_json_difference names the first differing key", "[base]") {
  const nlohmann::json a = {{"model", {{"d_ff", 2048}, {"heads", 8}}}, {"data", {{"x", "a"}}}};
  nlohmann::json b = a;
  CHECK(first_json_difference(a, b).empty());
  b["model"]["d_ff"] = 4096;
  CHECK(first_json_difference(a, b) == "model.d_ff: 2048 -> 4096");
  nlohmann::json c = a;
  c["model"].erase("heads");
  CHECK(first_json_difference(a, c) == "model.heads: 8 -> (absent)");
  CHECK(first_json_difference(c, a) == "model.heads: (absent) -> 8");
}

TEST_CASE("json_changes keeps only what differs from the base, section by section", "[base]") {
  const nlohmann::json base = {{"model", {{"d_ff", 2048}, {"heads", 8}}}, {"training", {{"lr", 0.0}}}};
  nlohmann::json value = base;
  CHECK(json_changes(base, value) == nlohmann::json::object());
  value["model"]["d_ff"] = 512;
  value["training"]["lr"] = 0.001;
  value["data"] = {{"train_source", "/a.en"}};  // a section the base lacks: kept whole
  const nlohmann::json expected = {
      {"model", {{"d_ff", 512}}}, {"training", {{"lr", 0.001}}}, {"data", {{"train_source", "/a.en"}}}};
  CHECK(json_changes(base, value) == expected);
  CHECK(json_changes(nlohmann::json(1), nlohmann::json(2)) == nlohmann::json(2));  // not objects: the value
  CHECK(json_changes(nlohmann::json(1), nlohmann::json(1)) == nlohmann::json::object());
}

}  // namespace dragoman
