// Attention pictures as SVG (see attention_svg.h).
#include "decode/attention_svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "base/error.h"

namespace dragoman::decode {
namespace {

constexpr int kCell = 24;      // a cell's side, px
constexpr int kCharWidth = 8;  // a character of the 12 px labels, about
constexpr int kMargin = 10;    // around the picture
constexpr int kCaptionHeight = 24;

// Code points in UTF-8 text (for the label widths).
std::size_t characters(const std::string& text) {
  return static_cast<std::size_t>(
      std::count_if(text.begin(), text.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

std::size_t longest(const std::vector<std::string>& words) {
  std::size_t n = 0;
  for (const std::string& w : words) n = std::max(n, characters(w));
  return n;
}

std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.4f", value);
  return text;
}

}  // namespace

std::string xml_escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    switch (c) {
      case '&': out += "&amp;"; continue;
      case '<': out += "&lt;"; continue;
      case '>': out += "&gt;"; continue;
      case '"': out += "&quot;"; continue;
      case '\'': out += "&apos;"; continue;
      default: break;
    }
    if ((c < 0x20 && c != '\t') || c == 0x7F) {
      out += "\xEF\xBF\xBD";  // U+FFFD
      continue;
    }
    // U+FFFE and U+FFFF (EF BF BE, EF BF BF) are not XML characters either.
    if (c == 0xEF && i + 2 < text.size() && static_cast<unsigned char>(text[i + 1]) == 0xBF &&
        (static_cast<unsigned char>(text[i + 2]) == 0xBE || static_cast<unsigned char>(text[i + 2]) == 0xBF)) {
      out += "\xEF\xBF\xBD";
      i += 2;
      continue;
    }
    out += static_cast<char>(c);
  }
  return out;
}

std::string attention_svg(const std::vector<std::string>& source_words, const std::vector<std::string>& target_words,
                          const std::vector<std::vector<float>>& matrix, const std::string& caption) {
  if (matrix.size() != target_words.size()) throw Error("attention_svg: one row per target word expected");
  for (const auto& row : matrix) {
    if (row.size() != source_words.size()) throw Error("attention_svg: one column per source word expected");
  }
  const int left = kMargin + static_cast<int>(longest(target_words)) * kCharWidth + 6;
  // Source words are written upwards at 90 degrees above their columns.
  const int top = kMargin + kCaptionHeight + static_cast<int>(longest(source_words)) * kCharWidth + 6;
  const int columns = static_cast<int>(source_words.size()), rows = static_cast<int>(target_words.size());
  const int width =
      std::max(left + columns * kCell + kMargin, kMargin * 2 + static_cast<int>(characters(caption)) * kCharWidth);
  const int height = top + rows * kCell + kMargin;

  std::string svg = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  svg += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + std::to_string(width) + "\" height=\"" +
         std::to_string(height) + "\" viewBox=\"0 0 " + std::to_string(width) + " " + std::to_string(height) +
         "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  svg += "<rect x=\"0\" y=\"0\" width=\"" + std::to_string(width) + "\" height=\"" + std::to_string(height) +
         "\" fill=\"#ffffff\"/>\n";
  svg += "<text x=\"" + std::to_string(kMargin) + "\" y=\"" + std::to_string(kMargin + 14) + "\">" +
         xml_escape(caption) + "</text>\n";
  for (int s = 0; s < columns; ++s) {
    const int x = left + s * kCell + kCell / 2 + 4, y = top - 6;
    svg += "<text class=\"source\" transform=\"translate(" + std::to_string(x) + "," + std::to_string(y) +
           ") rotate(-90)\">" + xml_escape(source_words[static_cast<std::size_t>(s)]) + "</text>\n";
  }
  for (int t = 0; t < rows; ++t) {
    const int y = top + t * kCell + kCell / 2 + 4;
    svg += "<text class=\"target\" x=\"" + std::to_string(left - 6) + "\" y=\"" + std::to_string(y) +
           "\" text-anchor=\"end\">" + xml_escape(target_words[static_cast<std::size_t>(t)]) + "</text>\n";
  }
  for (int t = 0; t < rows; ++t) {
    for (int s = 0; s < columns; ++s) {
      const double weight =
          std::clamp(static_cast<double>(matrix[static_cast<std::size_t>(t)][static_cast<std::size_t>(s)]), 0.0, 1.0);
      svg += "<rect class=\"cell\" x=\"" + std::to_string(left + s * kCell) + "\" y=\"" +
             std::to_string(top + t * kCell) + "\" width=\"" + std::to_string(kCell) + "\" height=\"" +
             std::to_string(kCell) + "\" fill=\"#08306b\" fill-opacity=\"" + number(weight) +
             "\" stroke=\"#d0d0d0\" stroke-width=\"0.5\"><title>" +
             xml_escape(source_words[static_cast<std::size_t>(s)] + " - " + target_words[static_cast<std::size_t>(t)] +
                        ": " + number(weight)) +
             "</title></rect>\n";
    }
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace dragoman::decode
