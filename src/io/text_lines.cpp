// Reading UTF-8 text files as lines (see text_lines.h).
#include "io/text_lines.h"

#include "base/error.h"
#include "base/utf8.h"
#include "io/read_file.h"

namespace dragoman::io {
namespace {

TextLines split_lines(std::string name, std::vector<char> data) {
  TextLines text;
  text.name = std::move(name);
  text.data = std::move(data);
  const std::string_view all(text.data.data(), text.data.size());
  std::size_t start = 0;
  while (start < all.size()) {
    std::size_t end = all.find('\n', start);
    if (end == std::string_view::npos) end = all.size();
    const std::string_view line = all.substr(start, end - start);
    const std::size_t bad = utf8::find_invalid(line);
    if (bad != std::string_view::npos) {
      throw_input_error(text.name, text.lines.size() + 1,
                        "invalid UTF-8 at byte " + std::to_string(bad + 1) + " of the line (expected UTF-8 text)");
    }
    text.lines.push_back(line);
    start = end + 1;
  }
  return text;
}

}  // namespace

TextLines text_lines_from_bytes(std::string name, std::string data) {
  return split_lines(std::move(name), std::vector<char>(data.begin(), data.end()));
}

TextLines read_text_lines(const std::string& path) {
  return split_lines(path == "-" ? "<stdin>" : path, read_file(path));
}

}  // namespace dragoman::io
