// What the fuzz targets share (docs/RELIABILITY.md, "Fuzzing"). The contract every target checks:
// library code given any bytes returns or throws dragoman::Error (the one exception type it
// throws, with a message for the user); anything else (another exception, a crash, a sanitizer
// report, a hang, an allocation past libFuzzer's -malloc_limit_mb) is a finding. Targets that can
// also check a result (a round trip, a score's range, valid UTF-8 out) abort when it is wrong.
#pragma once

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

namespace dragoman::fuzz {

inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// The input cut at its first `n - 1` NUL bytes into n parts (missing parts are empty): how a
// target that reads several files (hypotheses and references, source and target) takes them from
// one input. A seed is the files joined with a NUL between them.
inline std::vector<std::string> split_parts(std::string_view bytes, std::size_t n) {
  std::vector<std::string> parts;
  while (parts.size() + 1 < n) {
    const std::size_t nul = bytes.find('\0');
    if (nul == std::string_view::npos) break;
    parts.emplace_back(bytes.substr(0, nul));
    bytes.remove_prefix(nul + 1);
  }
  parts.emplace_back(bytes);
  parts.resize(n);
  return parts;
}

// A private directory for the files a target hands to path-based readers, removed at exit.
inline const std::string& temp_dir() {
  static const std::string dir = [] {
    const char* base = std::getenv("TMPDIR");
    std::string pattern = std::string(base != nullptr && *base != '\0' ? base : "/tmp") + "/dragoman-fuzz-XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr) {
      std::perror("mkdtemp");
      std::abort();
    }
    static const std::string removed_at_exit = pattern;
    std::atexit([] {
      std::error_code ignored;
      std::filesystem::remove_all(removed_at_exit, ignored);
    });
    return pattern;
  }();
  return dir;
}

// Writes `bytes` to `name` in temp_dir() (replacing the previous input's file) and returns the path.
inline std::string write_temp(const std::string& name, std::string_view bytes) {
  const std::string path = temp_dir() + "/" + name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) {
    std::fprintf(stderr, "fuzz: cannot write %s\n", path.c_str());
    std::abort();
  }
  return path;
}

// Logging off: the library's info lines would flood the fuzzer's output.
inline void quiet() { spdlog::set_level(spdlog::level::off); }

// A failed check of a result: print it and abort (libFuzzer saves the input).
[[noreturn]] inline void fail(const std::string& what) {
  std::fprintf(stderr, "fuzz check failed: %s\n", what.c_str());
  std::abort();
}

}  // namespace dragoman::fuzz
