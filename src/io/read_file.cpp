// Whole-file reading (see read_file.h).
#include "io/read_file.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "base/error.h"

namespace dragoman::io {

std::vector<char> read_file(const std::string& path) {
  const bool is_stdin = path == "-";
  std::FILE* file = is_stdin ? stdin : std::fopen(path.c_str(), "rb");
  if (file == nullptr) throw Error("cannot open " + path + ": " + std::strerror(errno));
  std::vector<char> data;
  char buffer[1 << 16];
  std::size_t got = 0;
  while ((got = std::fread(buffer, 1, sizeof buffer, file)) > 0) data.insert(data.end(), buffer, buffer + got);
  const int error = std::ferror(file) ? errno : 0;
  if (!is_stdin) std::fclose(file);
  if (error != 0)
    throw Error("cannot read " + (is_stdin ? std::string("<stdin>") : path) + ": " + std::strerror(error));
  return data;
}

}  // namespace dragoman::io
