// What the data and training tests share: scratch directories, files, a synthetic "reverse the
// letters" corpus, and a small vocabulary whose pieces are whole letters.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "text/vocabulary.h"
#include "train/config.h"

namespace dragoman::test {

// A fresh, empty directory under the system's temporary directory (unique per process and name).
std::string scratch_dir(const std::string& name);

void write_text(const std::string& path, const std::string& text);
std::string read_text(const std::string& path);
// The lines of a text file, without their '\n'.
std::vector<std::string> read_lines(const std::string& path);

// `lines` sentences of 3..7 letters from a..j separated by spaces; the target is the source
// reversed. Written to DIR/NAME.src and DIR/NAME.tgt (deterministic in seed).
struct ReversalFiles {
  std::string source, target;
};
ReversalFiles write_reversal_corpus(const std::string& dir, const std::string& name, int lines, std::uint32_t seed);

// A BPE vocabulary over the letters a..j whose 25 pieces are the specials, the characters and
// "▁a" .. "▁j" (one piece per word), saved as DIR/letters.model.
std::string write_letters_vocabulary(const std::string& dir);

// A tiny training config for the reversal task (2+2 layers, d_model 32) on the given files.
TrainConfig tiny_reversal_config(const ReversalFiles& train, const ReversalFiles& valid, const std::string& vocab);

}  // namespace dragoman::test
