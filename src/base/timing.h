// Wall-clock timing for logs and progress lines.
#pragma once

#include <chrono>
#include <cstdio>
#include <string>

namespace dragoman {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// "H:MM:SS" of a non-negative number of seconds (fractions dropped).
inline std::string format_hms(double seconds) {
  const auto s = static_cast<long long>(seconds);
  char text[32];
  std::snprintf(text, sizeof text, "%lld:%02lld:%02lld", s / 3600, s / 60 % 60, s % 60);
  return text;
}

}  // namespace dragoman
