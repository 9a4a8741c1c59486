// Benchmark: beam search as serve runs it (continuous batching: a closed loop of C clients, each
// sending its next sentence as soon as its last is translated, sentences joining a running
// BeamSearch in groups) beside translate's length-sorted batches, on the same lines, without
// HTTP. Prints a Markdown table: sentences/s, decoding steps, the sentences a step searched on
// average, and the seconds spent joining (encoder passes and state copies) and stepping.
//
//   search_bench MODEL LINES [--clients 16,64] [--join 1,16] [--threads 2] [--batch-sentences 64]

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "decode/beam_search.h"
#include "decode/model_files.h"
#include "decode/translator.h"
#include "device/cpu/threads.h"
#include "kernels/gemm.h"

namespace {

using Clock = std::chrono::steady_clock;

double seconds(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

std::vector<std::int64_t> integers(const std::string& list) {
  std::vector<std::int64_t> out;
  std::stringstream in(list);
  for (std::string item; std::getline(in, item, ',');) out.push_back(std::atoll(item.c_str()));
  return out;
}

struct Result {
  double seconds = 0, join_seconds = 0, step_seconds = 0;
  std::int64_t steps = 0, searched = 0, joins = 0;
};

// C clients in a closed loop over `sources` (each source once, in order), joining in groups of
// `join` (or all waiting, when that many have room).
Result continuous(const dragoman::decode::DecodingModel& model, const std::vector<std::vector<std::int32_t>>& sources,
                  const dragoman::decode::SearchOptions& search, std::int64_t clients, std::int64_t join,
                  std::int64_t batch_sentences) {
  dragoman::decode::BeamSearch beam(model, search);
  Result r;
  std::size_t next = 0;
  std::int64_t waiting = std::min<std::int64_t>(clients, static_cast<std::int64_t>(sources.size()));
  const Clock::time_point start = Clock::now();
  while (next < sources.size() || !beam.empty()) {
    const std::int64_t room = batch_sentences - beam.sentences();
    if (waiting > 0 && (beam.empty() || waiting >= join)) {
      std::vector<std::vector<std::int32_t>> add;
      std::vector<std::int64_t> ids;
      while (waiting > 0 && static_cast<std::int64_t>(add.size()) < room && next < sources.size()) {
        add.push_back(sources[next]);
        ids.push_back(static_cast<std::int64_t>(next++));
        --waiting;
      }
      const Clock::time_point a = Clock::now();
      beam.add(add, ids);
      r.join_seconds += seconds(a, Clock::now());
      ++r.joins;
    }
    r.searched += beam.sentences();
    const Clock::time_point s = Clock::now();
    const auto finished = beam.step();
    r.step_seconds += seconds(s, Clock::now());
    ++r.steps;
    // Each finished sentence's client sends its next one (while lines are left).
    for (std::size_t i = 0; i < finished.size(); ++i) {
      if (next + static_cast<std::size_t>(waiting) < sources.size()) ++waiting;
    }
  }
  r.seconds = seconds(start, Clock::now());
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr,
                 "usage: search_bench MODEL LINES [--clients 16,64] [--join 1,16] [--threads 2] "
                 "[--batch-sentences 64]\n");
    return 2;
  }
  const std::string model_path = argv[1], lines_path = argv[2];
  std::string clients_list = "16,64", join_list = "1,16";
  int threads = 2;
  std::int64_t batch_sentences = 64;
  for (int i = 3; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--clients") clients_list = value;
    if (flag == "--join") join_list = value;
    if (flag == "--threads") threads = std::atoi(value.c_str());
    if (flag == "--batch-sentences") batch_sentences = std::atoll(value.c_str());
  }
  dragoman::cpu::set_compute_threads(threads);
  dragoman::cpu::set_row_invariant_products(true);
  const dragoman::decode::DecodingModels models =
      dragoman::decode::load_decoding_models({model_path}, "fp32", dragoman::Device::cpu());
  std::vector<std::string> lines;
  std::ifstream in(lines_path);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  dragoman::decode::TranslatorOptions options;
  options.batch_sentences = batch_sentences;
  const dragoman::decode::Translator translator(models.decoding(), *models.vocabulary, options);
  std::vector<std::vector<std::int32_t>> sources;
  for (auto& s : translator.encode(lines)) {
    if (!s.empty()) sources.push_back(std::move(s));
  }
  std::printf("search_bench: %s, %zu sentences, %d thread(s), beam %d, batches of %lld sentences\n\n",
              model_path.c_str(), sources.size(), threads, options.search.beam,
              static_cast<long long>(batch_sentences));
  std::printf("| search | sentences/s | steps | sentences a step | joins | joining s | stepping s |\n");
  std::printf("|---|---:|---:|---:|---:|---:|---:|\n");
  const Clock::time_point start = Clock::now();
  translator.translate_ids(sources);
  const double sorted = seconds(start, Clock::now());
  std::printf("| translate's sorted batches | %.1f | | | | | |\n", static_cast<double>(sources.size()) / sorted);
  for (const std::int64_t clients : integers(clients_list)) {
    for (const std::int64_t join : integers(join_list)) {
      const Result r = continuous(models.decoding(), sources, options.search, clients, join, batch_sentences);
      std::printf("| %lld clients, joining by %lld | %.1f | %lld | %.1f | %lld | %.2f | %.2f |\n",
                  static_cast<long long>(clients), static_cast<long long>(join),
                  static_cast<double>(sources.size()) / r.seconds, static_cast<long long>(r.steps),
                  static_cast<double>(r.searched) / static_cast<double>(r.steps), static_cast<long long>(r.joins),
                  r.join_seconds, r.step_seconds);
    }
  }
  return 0;
}
