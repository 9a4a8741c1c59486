// Numeric command-line checks (see validators.h).
#include "cli/validators.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "base/error.h"
#include "device/cpu/threads.h"
#include "device/device.h"
#include "ops/build_info.h"

namespace dragoman::cli {
namespace {

// A bound as a person writes it: 10, 0.5, 1048576 (never 10.000000).
std::string format_bound(double value) {
  char text[32];
  if (value == std::floor(value) && std::fabs(value) < 1e15) {
    std::snprintf(text, sizeof text, "%.0f", value);
  } else {
    std::snprintf(text, sizeof text, "%g", value);
  }
  return text;
}

// The whole of `text` as an integer, or false (a sign, then digits; nothing else).
bool parse_integer(const std::string& text, std::int64_t& value) {
  const char* begin = text.data();
  const char* end = begin + text.size();
  if (begin != end && *begin == '+') ++begin;
  const auto [stop, error] = std::from_chars(begin, end, value);
  return error == std::errc() && stop == end && begin != end;
}

// The whole of `text` as a double (strtod's syntax: nan and inf parse, and are refused later).
bool parse_number(const std::string& text, double& value) {
  if (text.empty() || std::isspace(static_cast<unsigned char>(text.front()))) return false;
  char* stop = nullptr;
  value = std::strtod(text.c_str(), &stop);
  return stop == text.c_str() + text.size();
}

std::string got(const std::string& text) { return ", got '" + text + "'"; }

}  // namespace

CLI::Validator integer_in(std::int64_t min, std::int64_t max) {
  const std::string range = "from " + std::to_string(min) + " to " + std::to_string(max);
  return CLI::Validator(
      [range, min, max](std::string& text) -> std::string {
        std::int64_t value = 0;
        if (!parse_integer(text, value) || value < min || value > max)
          return "expected an integer " + range + got(text);
        return {};
      },
      "INT " + range);
}

CLI::Validator integer_at_least(std::int64_t min, std::int64_t max) {
  const std::string range = ">= " + std::to_string(min);
  return CLI::Validator(
      [range, min, max](std::string& text) -> std::string {
        std::int64_t value = 0;
        if (!parse_integer(text, value) || value < min) return "expected an integer " + range + got(text);
        if (value > max)
          return "expected an integer from " + std::to_string(min) + " to " + std::to_string(max) + got(text);
        return {};
      },
      "INT " + range);
}

CLI::Validator number_in(double min, double max) {
  const std::string range = "from " + format_bound(min) + " to " + format_bound(max);
  return CLI::Validator(
      [range, min, max](std::string& text) -> std::string {
        double value = 0;
        if (!parse_number(text, value) || !std::isfinite(value) || value < min || value > max) {
          return "expected a number " + range + got(text);
        }
        return {};
      },
      "NUMBER " + range);
}

CLI::Validator finite_number() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        double value = 0;
        if (!parse_number(text, value) || !std::isfinite(value)) return "expected a finite number" + got(text);
        return {};
      },
      "NUMBER");
}

CLI::Validator device_name() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        try {
          Device::parse(text);
        } catch (const Error&) {
          return "expected cpu, cuda or cuda:N, got '" + text + "'";
        }
        return {};
      },
      "DEVICE");
}

CLI::Option* add_threads_option(CLI::App* sub, int& threads, const std::string& what) {
  return sub->add_option("--threads", threads, what + " (0: OMP_NUM_THREADS if set, else all cores)")
      ->check(integer_in(0, cpu::kMaxThreads))
      ->capture_default_str();
}

void check_decoding_device(const std::string& command, const std::string& device_name, const std::string& precision) {
  const Device device = Device::parse(device_name);
  if (precision == "int8" && !device.is_cpu()) {
    throw CLI::ValidationError("--precision int8 runs on the CPU (on a GPU use bf16 or fp16)");
  }
  if (device.is_cpu()) return;
  if (!ops::built_with_cuda()) {
    throw Error(command + ": --device " + device_name +
                ": this build of dragoman has no CUDA (build it on a machine with the CUDA toolkit)");
  }
  const int visible = cuda_device_count();
  if (device.index >= visible) {
    throw Error(command + ": --device " + device_name + ": no such CUDA device (" + std::to_string(visible) +
                " visible" + (visible == 0 ? ": " + cuda_absent_reason() : std::string()) + ")");
  }
}

}  // namespace dragoman::cli
