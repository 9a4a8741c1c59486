// Where a tensor lives: the CPU or CUDA device n. Parsed from and printed as "cpu" / "cuda:n".
#pragma once

#include <string>
#include <string_view>

namespace dragoman {

// Whether this build has CUDA (-DDRAGOMAN_CUDA: DRAGOMAN_WITH_CUDA is defined for dragoman_core
// and every target that links it; no source of dragoman_cuda includes this header). Code for a GPU
// sits in `if constexpr (kWithCuda)` branches (ops::detail::on_device for the ops), so a CPU-only
// build compiles none of it and links no stand-ins for it.
#ifdef DRAGOMAN_WITH_CUDA
inline constexpr bool kWithCuda = true;
#else
inline constexpr bool kWithCuda = false;
#endif

// Throws "WHAT: this build has no CUDA (rebuild with -DDRAGOMAN_CUDA=ON)": a GPU asked of a
// CPU-only build.
[[noreturn]] void throw_no_cuda(const std::string& what);

// The CUDA devices this process can use: 0 without a driver or a device, and in a build without
// CUDA (device/cuda/runtime_info.h; never throws).
int cuda_device_count();
// Why cuda_device_count() is 0: the CUDA runtime's words, "no CUDA device", or "a build without
// CUDA". Empty when there is a device.
std::string cuda_absent_reason();

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
