// Where a tensor lives: the CPU or CUDA device n. Parsed from and printed as "cpu" / "cuda:n".
#pragma once

#include <string>
#include <string_view>

namespace dragoman {

enum class DeviceType { kCpu, kCuda };

struct Device {
  DeviceType type = DeviceType::kCpu;
  int index = 0;

  static Device cpu() { return {DeviceType::kCpu, 0}; }
  static Device cuda(int index) { return {DeviceType::kCuda, index}; }
  bool is_cpu() const { return type == DeviceType::kCpu; }

  // "cpu", "cuda", "cuda:N"; anything else is a dragoman::Error naming what was expected.
  static Device parse(std::string_view text);
  std::string str() const;

  friend bool operator==(const Device& a, const Device& b) { return a.type == b.type && a.index == b.index; }
  friend bool operator!=(const Device& a, const Device& b) { return !(a == b); }
};

}  // namespace dragoman
