// `dragoman score`: the log-probability of given translations under a model or an ensemble (force
// decoding, decode/scorer.h): one line per sentence pair, the score, and with --token-scores each
// target piece's log-probability and then EOS's. For filtering data and reranking.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/error.h"
#include "base/timing.h"
#include "cli/commands.h"
#include "cli/decoding_options.h"
#include "cli/validators.h"
#include "decode/model_files.h"
#include "decode/scorer.h"
#include "decode/translator.h"
#include "device/cpu/threads.h"
#include "io/atomic_file.h"
#include "io/status_line.h"
#include "io/text_lines.h"
#include "ops/linear.h"

namespace dragoman::cli {
namespace {

// A target line of SentencePiece pieces separated by spaces (--pieces) as ids; an unknown piece is
// an error naming the file, the line and the piece.
std::vector<std::int32_t> piece_ids(const std::unordered_map<std::string, std::int32_t>& ids, std::string_view line,
                                    const std::string& where) {
  std::vector<std::int32_t> out;
  std::size_t start = 0;
  while (start < line.size()) {
    std::size_t end = line.find(' ', start);
    if (end == std::string_view::npos) end = line.size();
    if (end > start) {
      const std::string piece(line.substr(start, end - start));
      const auto it = ids.find(piece);
      if (it == ids.end())
        throw Error("score: " + where + ": '" + piece + "' is not a piece of the model's vocabulary");
      out.push_back(it->second);
    }
    start = end + 1;
  }
  return out;
}

struct ScoreOptions {
  std::vector<std::string> models;
  std::string source, target, output = "-";
  bool normalize = false, token_scores = false, deterministic = false, pieces = false, no_progress = false;
  decode::DecodingOptions decoding;  // device and batches (score has no search)
};

int run_score(const ScoreOptions& o) {
  cpu::set_compute_threads(cpu::resolve_threads(o.decoding.threads, "score: --threads"));
  ops::set_row_invariant_products(o.deterministic);
  const io::TextLines sources = io::read_text_lines(o.source), targets = io::read_text_lines(o.target);
  if (sources.lines.size() != targets.lines.size()) {
    throw Error("score: " + sources.name + " has " + std::to_string(sources.lines.size()) + " lines but " +
                targets.name + " has " + std::to_string(targets.lines.size()) + ": one translation per source line");
  }
  std::optional<io::AtomicFileWriter> file;
  if (o.output != "-") file.emplace(o.output);
  const Device device = Device::parse(o.decoding.device);
  const decode::DecodingModels models = decode::load_decoding_models(o.models, o.decoding.precision, device);
  const text::Vocabulary& vocabulary = *models.vocabulary;
  const std::int64_t max_positions = models.decoding().config().max_positions;
  std::unordered_map<std::string, std::int32_t> ids;  // piece -> id, for --pieces
  if (o.pieces) {
    // Target pieces: an imported model's target side may number more or fewer pieces than its source.
    for (std::int32_t id = 0; id < static_cast<std::int32_t>(vocabulary.target_size()); ++id) {
      ids[vocabulary.piece(id)] = id;
    }
  }
  std::vector<std::vector<std::int32_t>> source_ids, target_ids;
  for (std::size_t i = 0; i < sources.lines.size(); ++i) {
    const std::string line = std::to_string(i + 1);
    source_ids.push_back(vocabulary.encode(sources.lines[i]));
    target_ids.push_back(o.pieces ? piece_ids(ids, targets.lines[i], targets.name + ":" + line)
                                  : vocabulary.encode_target(targets.lines[i]));
    decode::check_forced_pair(source_ids.back(), target_ids.back(), max_positions,
                              "score: " + sources.name + ":" + line, "score: " + targets.name + ":" + line);
  }
  const decode::TranslatorOptions limits = o.decoding.translator_options(device, decode::DecodingUse::kBatch);
  const Clock::time_point start = Clock::now();
  io::Progress progress("score", "pairs", static_cast<std::int64_t>(source_ids.size()),
                        io::Progress::Options{!o.no_progress, false});
  const std::vector<decode::ForcedScore> scores =
      force_decode(models.decoding(), source_ids, target_ids, limits.batch_tokens, limits.batch_sentences,
                   [&](std::int64_t done) { progress.update(done); });
  progress.finish();
  std::string text;
  std::int64_t tokens = 0;
  for (const decode::ForcedScore& s : scores) {
    const auto length = static_cast<double>(s.token_log_probs.size());
    tokens += static_cast<std::int64_t>(s.token_log_probs.size());
    text += fmt::format("{}", o.normalize ? s.log_prob / length : s.log_prob);
    if (o.token_scores) {
      text += '\t';
      for (std::size_t j = 0; j < s.token_log_probs.size(); ++j) {
        text += (j > 0 ? " " : "") + fmt::format("{}", s.token_log_probs[j]);
      }
    }
    text += '\n';
  }
  if (file) {
    file->append(text);
    file->commit();
  } else if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size() || std::fflush(stdout) != 0) {
    throw Error("score: cannot write to standard output");
  }
  const double seconds = seconds_since(start);
  spdlog::info("score: {} sentence pairs, {} target tokens (EOS included) in {:.2f} s: {:.1f} pairs/s", scores.size(),
               tokens, seconds, static_cast<double>(scores.size()) / std::max(seconds, 1e-9));
  return 0;
}

}  // namespace

Subcommand add_score(CLI::App& app) {
  auto o = std::make_shared<ScoreOptions>();
  CLI::App* sub = app.add_subcommand(
      "score",
      "Score given translations: log p(target | source) under a model or an ensemble (force decoding), one line per "
      "sentence pair, for filtering data and reranking");
  sub->add_option("--model,-m", o->models, "Model file; more than once for an ensemble (as translate)")
      ->required()
      ->allow_extra_args(false)  // one file a flag, as translate
      ->check(CLI::ExistingFile);
  sub->add_option("--source,-s", o->source, "Source sentences, one per line ('-': standard input)")->required();
  sub->add_option("--target,-t", o->target, "Their translations, one per line")->required();
  sub->add_option("--output,-o", o->output, "Scores, one per line, written atomically ('-': standard output)")
      ->capture_default_str();
  sub->add_flag("--normalize", o->normalize,
                "The score divided by the target's length in pieces, EOS included (the mean per piece)");
  sub->add_flag("--pieces", o->pieces,
                "The target lines are SentencePiece pieces separated by spaces (translate's JSON 'pieces' without "
                "</s>), scored as they are instead of encoding the text");
  sub->add_flag("--token-scores", o->token_scores,
                "After the score and a tab, each target piece's log-probability and then EOS's");
  add_decoding_options(sub, o->decoding, kBatchOptions);
  add_decoding_options(sub, o->decoding, kDeviceOptions);
  sub->add_flag("--deterministic", o->deterministic,
                "Batch-invariant scores (as translate --deterministic): with it, the scores of translate "
                "--deterministic's own outputs are translate's log-probabilities, bit for bit");
  sub->add_flag("--no-progress", o->no_progress,
                "No status line of progress on a terminal (pairs done, pairs/s, ETA; never shown off a terminal)");
  return {sub, [o] { return run_score(*o); }};
}

}  // namespace dragoman::cli
