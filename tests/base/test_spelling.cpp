// base/spelling: the edit distance (a swap of neighbours is one edit) and the nearest of several
// names, as "did you mean" uses them for subcommands and config keys.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "base/spelling.h"

namespace dragoman {

TEST_CASE("edit_distance counts insertions, deletions, substitutions and swaps of neighbours", "[base]") {
  CHECK(edit_distance("", "") == 0);
  CHECK(edit_distance("train", "train") == 0);
  CHECK(edit_distance("", "abc") == 3);
  CHECK(edit_distance("max_step", "max_steps") == 1);   // an insertion
  CHECK(edit_distance("trainn", "train") == 1);         // a deletion
  CHECK(edit_distance("trcin", "train") == 1);          // a substitution
  CHECK(edit_distance("trian", "train") == 1);          // a swap of neighbours
  CHECK(edit_distance("max_stpes", "max_steps") == 1);  // one swap, not two substitutions
  CHECK(edit_distance("serve", "score") == 3);
  CHECK(edit_distance("abc", "cba") == 2);
}

TEST_CASE("nearest_name: the closest name within 2 edits and half the letters, else none", "[base]") {
  const std::vector<std::string> commands = {"score", "score-bleu", "serve", "train", "translate"};
  CHECK(nearest_name("trian", commands) == "train");
  CHECK(nearest_name("translte", commands) == "translate");
  CHECK(nearest_name("scor", commands) == "score");  // score (1 edit) before score-bleu
  CHECK(nearest_name("serv", commands) == "serve");
  CHECK(nearest_name("average", commands).empty());  // nothing close
  CHECK(nearest_name("tr", commands).empty());       // 3 edits from train; too short to guess
  CHECK(nearest_name("x", {"y"}).empty());           // one edit is more than half of one letter
  CHECK(nearest_name("ab", {"ac", "ad"}) == "ac");   // equally near: the first
  CHECK(nearest_name("anything", {}).empty());
}

}  // namespace dragoman
