// Reading a whole file into memory ("-" reads standard input).
#pragma once

#include <string>
#include <vector>

namespace dragoman::io {

// The bytes of `path`. Throws dragoman::Error naming the path if it cannot be opened or read.
std::vector<char> read_file(const std::string& path);

}  // namespace dragoman::io
