// Attention pictures (translate --attention-dir): one self-contained SVG per sentence, the source
// words across the top, the target words down the left, one square cell per (target, source) word
// pair shaded by its attention weight (white 0 to dark blue 1, the weight in the cell's tooltip),
// as the paper's figures show attention. Any browser shows it; nothing outside the file is read.
#pragma once

#include <string>
#include <vector>

namespace dragoman::decode {

// matrix: [target words][source words] weights in [0, 1]. `caption` is written above the picture
// (e.g. "line 12: decoder layer 6, the average of 8 heads").
std::string attention_svg(const std::vector<std::string>& source_words, const std::vector<std::string>& target_words,
                          const std::vector<std::vector<float>>& matrix, const std::string& caption);

// Text for SVG/XML: & < > " ' escaped, and the characters XML 1.0 does not allow (controls other
// than tab, U+FFFE, U+FFFF) replaced with U+FFFD.
std::string xml_escape(const std::string& text);

}  // namespace dragoman::decode
