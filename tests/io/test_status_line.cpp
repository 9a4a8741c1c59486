// io::Progress's line and the bar (status_line.h); the terminal itself is the CLI tests' (script(1)).
#include <catch2/catch.hpp>

#include <limits>

#include "io/status_line.h"

namespace dragoman::io {

TEST_CASE("progress_bar fills whole cells of the fraction, clamped to [0, 1]", "[io]") {
  CHECK(progress_bar(0.0, 4) == "[....]");
  CHECK(progress_bar(0.24, 4) == "[....]");
  CHECK(progress_bar(0.25, 4) == "[#...]");
  CHECK(progress_bar(0.99, 4) == "[###.]");
  CHECK(progress_bar(1.0, 4) == "[####]");
  CHECK(progress_bar(7.0, 4) == "[####]");
  CHECK(progress_bar(-1.0, 4) == "[....]");
  CHECK(progress_bar(std::numeric_limits<double>::quiet_NaN(), 4) == "[....]");
}

TEST_CASE("Progress's line: the bar, the count, the rate and the ETA when the total is known", "[io]") {
  const Progress::Options off{false, false};
  const Progress known("translate", "lines", 100, off);
  CHECK(known.text(25, 5.0) == "translate [#####...............] 25/100 lines | 5.0 lines/s | ETA 0:00:15");
  CHECK(known.text(100, 20.0) == "translate [####################] 100/100 lines | 5.0 lines/s | ETA 0:00:00");
  const Progress unknown("translate", "lines", -1, off);  // a pipe: no bar, no total, no ETA
  CHECK(unknown.text(30, 2.0) == "translate 30 lines | 15.0 lines/s");
  const Progress empty("score", "pairs", 0, off);  // nothing to do: no bar
  CHECK(empty.text(0, 1.0) == "score 0/0 pairs | 0.0 pairs/s");
}

}  // namespace dragoman::io
