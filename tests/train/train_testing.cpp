#include "train/train_testing.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"

namespace dragoman::test {

std::string scratch_dir(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("dragoman_test_" + std::to_string(::getpid()) + "_" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out) throw Error("test: cannot write " + path);
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("test: cannot read " + path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<std::string> read_lines(const std::string& path) {
  std::istringstream in(read_text(path));
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

ReversalFiles write_reversal_corpus(const std::string& dir, const std::string& name, int lines, std::uint32_t seed) {
  std::string src, tgt;
  std::uint32_t state = seed * 2654435761u + 1;
  const auto next = [&] {
    state = state * 1664525u + 1013904223u;
    return state >> 16;
  };
  for (int i = 0; i < lines; ++i) {
    const int n = 3 + static_cast<int>(next() % 5);
    std::string letters;
    for (int k = 0; k < n; ++k) letters.push_back(static_cast<char>('a' + next() % 10));
    for (int k = 0; k < n; ++k) {
      src += (k ? " " : "") + std::string(1, letters[k]);
      tgt += (k ? " " : "") + std::string(1, letters[n - 1 - k]);
    }
    src += "\n";
    tgt += "\n";
  }
  ReversalFiles files{dir + "/" + name + ".src", dir + "/" + name + ".tgt"};
  write_text(files.source, src);
  write_text(files.target, tgt);
  return files;
}

std::string write_letters_vocabulary(const std::string& dir) {
  std::string text;
  for (int repeat = 0; repeat < 20; ++repeat) {
    for (char c = 'a'; c <= 'j'; ++c) text += std::string(1, c) + " " + std::string(1, static_cast<char>('a' + (c - 'a' + repeat) % 10)) + "\n";
  }
  const std::string input = dir + "/letters.txt";
  write_text(input, text);
  VocabularyOptions o;
  o.inputs = {input};
  o.model_type = "bpe";
  o.vocab_size = 25;
  o.threads = 1;
  Vocabulary::train(o).save(dir + "/letters");
  return dir + "/letters.model";
}

TrainConfig tiny_reversal_config(const ReversalFiles& train, const ReversalFiles& valid, const std::string& vocab) {
  TrainConfig c;
  c.model.encoder_layers = c.model.decoder_layers = 2;
  c.model.d_model = 32;
  c.model.d_ff = 64;
  c.model.heads = 2;
  c.model.dropout = 0.0;
  c.model.label_smoothing = 0.0;
  c.model.max_positions = 16;
  c.data.train_source = train.source;
  c.data.train_target = train.target;
  c.data.valid_source = valid.source;
  c.data.valid_target = valid.target;
  c.data.vocabulary = vocab;
  c.data.max_length = 12;
  c.training.max_tokens = 800;
  c.training.max_steps = 500;
  c.training.lr_factor = 0.3;
  c.training.warmup_steps = 100;
  c.training.log_every = 20;
  c.training.valid_every = 100;
  c.training.threads = 1;
  c.checkpoint.every_steps = 100;
  c.checkpoint.every_minutes = 0;
  return c;
}

}  // namespace dragoman::test
