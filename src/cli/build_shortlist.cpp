// `dragoman build-shortlist`: a vocabulary shortlist (decode/shortlist.h) from a parallel corpus:
// IBM model 1's lexical table (data/lexical_table.h) and the most frequent target pieces.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <numeric>
#include <set>
#include <string>

#include "base/error.h"
#include "cli/commands.h"
#include "cli/validators.h"
#include "data/corpus.h"
#include "data/lexical_table.h"
#include "decode/model_files.h"
#include "device/cpu/threads.h"
#include "io/atomic_file.h"
#include "model/checkpoint.h"
#include "text/vocabulary.h"

namespace dragoman::cli {
namespace {

struct BuildShortlistOptions {
  std::string model, vocabulary;  // whose vocabulary (one of them)
  std::string source, target, output;
  std::int64_t per_piece = 100, frequent = 100, max_pairs = 0;
  double min_probability = 0.0;
  int iterations = 5;
  int threads = 0;
};

// The vocabulary the shortlist's pieces are of (the model file's, or a SentencePiece model's) and
// its special ids, which no list holds: ours (pad, unk, bos, eos), or an imported model's (its
// config's pad, bos and eos, its tables' unk and special pieces).
struct ShortlistVocabulary {
  text::Vocabulary vocabulary;
  std::set<std::int32_t> special;
};

ShortlistVocabulary shortlist_vocabulary(const BuildShortlistOptions& o) {
  const std::set<std::int32_t> ours = {text::kPadId, text::kUnkId, text::kBosId, text::kEosId};
  if (!o.vocabulary.empty()) return {text::Vocabulary::load(o.vocabulary), ours};
  model::ModelFileInfo info;
  const model::Transformer model = model::load_model(o.model, DType::kF32, &info);
  if (info.vocabulary.empty() && info.imported.empty()) {
    throw Error(o.model + ": the model file holds no vocabulary: give --vocabulary");
  }
  ShortlistVocabulary v{decode::model_vocabulary(info, o.model), {}};
  const model::ModelConfig& c = model.config();
  v.special = {c.pad_id, c.bos_id, c.eos_id};
  for (const text::Vocabulary* side : {static_cast<const text::Vocabulary*>(&v.vocabulary), &v.vocabulary.target()}) {
    if (side->table() == nullptr) {
      v.special.insert(ours.begin(), ours.end());
      continue;
    }
    v.special.insert(side->table()->unk_id);
    v.special.insert(side->table()->special.begin(), side->table()->special.end());
  }
  return v;
}

// Whether the file can hold `piece`: not with a space or tab (its separators) or a line end.
bool writable_piece(const std::string& piece) { return piece.find_first_of(" \t\r\n") == std::string::npos; }

// A path in the comment line: its tabs and line ends as spaces (a tab would make the line a list).
std::string comment_text(std::string text) {
  std::replace_if(
      text.begin(), text.end(), [](char c) { return c == '\t' || c == '\n' || c == '\r'; }, ' ');
  return text;
}

// The shortlist's text (decode/shortlist.h's format): the comment, the pieces kept for every batch,
// then each source piece's list.
std::string shortlist_text(const data::LexicalTable& table, const ShortlistVocabulary& v,
                           const BuildShortlistOptions& o) {
  const text::Vocabulary& vocab = v.vocabulary;
  const text::Vocabulary& target = vocab.target();
  std::set<std::string> unwritable;
  // A piece no list holds: a special one, or one the file cannot hold (`side`: the piece's side).
  const auto left_out = [&](std::int32_t id, const text::Vocabulary& side) {
    if (v.special.count(id) != 0) return true;
    const std::string piece =
        side.table() != nullptr ? side.table()->pieces[static_cast<std::size_t>(id)] : side.target().piece(id);
    if (writable_piece(piece)) return false;
    unwritable.insert(piece);
    return true;
  };
  std::string out = fmt::format(
      "# dragoman shortlist: IBM model 1 ({} EM iterations) over {} sentence pairs of {} and {}; the {} most "
      "frequent target pieces, then each source piece's {} most probable (p >= {})\n",
      o.iterations, table.pairs, comment_text(o.source), comment_text(o.target), o.frequent, o.per_piece,
      o.min_probability);
  std::vector<std::int32_t> order(table.target_counts.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::int32_t a, std::int32_t b) {
    return table.target_counts[static_cast<std::size_t>(a)] > table.target_counts[static_cast<std::size_t>(b)];
  });
  out += '\t';
  std::int64_t kept = 0;
  for (const std::int32_t id : order) {
    if (kept == o.frequent || table.target_counts[static_cast<std::size_t>(id)] == 0) break;
    if (left_out(id, target)) continue;
    if (kept++ > 0) out += ' ';
    out += target.piece(id);
  }
  out += '\n';
  for (std::size_t e = 0; e < table.by_source.size(); ++e) {
    const auto source = static_cast<std::int32_t>(e);
    std::string line;
    std::int64_t listed = 0;
    for (const auto& [f, p] : table.by_source[e]) {
      if (listed == o.per_piece || static_cast<double>(p) < o.min_probability) break;
      if (left_out(f, target)) continue;
      if (listed++ > 0) line += ' ';
      line += target.piece(f);
    }
    if (listed == 0 || left_out(source, vocab)) continue;
    out += (vocab.table() != nullptr ? vocab.table()->pieces[e] : vocab.target().piece(source));
    out += '\t';
    out += line;
    out += '\n';
  }
  if (!unwritable.empty()) {
    spdlog::warn("build-shortlist: {} pieces with a space, tab or line end left out (the file's separators)",
                 unwritable.size());
  }
  return out;
}

}  // namespace

Subcommand add_build_shortlist(CLI::App& app) {
  auto o = std::make_shared<BuildShortlistOptions>();
  CLI::App* sub = app.add_subcommand(
      "build-shortlist",
      "Build a vocabulary shortlist for translate --shortlist from a parallel corpus: for each source piece the "
      "target pieces that translate it (IBM model 1), and the most frequent target pieces");
  auto* model =
      sub->add_option("--model", o->model, "The model whose vocabulary the shortlist is for")->check(CLI::ExistingFile);
  auto* vocabulary =
      sub->add_option("--vocabulary", o->vocabulary, "Or its SentencePiece vocabulary (build-vocab's .model)")
          ->check(CLI::ExistingFile);
  model->excludes(vocabulary);
  sub->add_option("--source", o->source, "Source side of the corpus, one sentence per line")
      ->required()
      ->check(CLI::ExistingFile);
  sub->add_option("--target", o->target, "Target side, aligned line by line")->required()->check(CLI::ExistingFile);
  sub->add_option("--output,-o", o->output, "The shortlist file to write")->required();
  sub->add_option("--per-piece", o->per_piece, "Target pieces listed for each source piece, most probable first")
      ->check(integer_in(1, 1 << 20))
      ->capture_default_str();
  sub->add_option("--frequent", o->frequent, "Most frequent target pieces kept for every batch")
      ->check(integer_in(0, 1 << 24))
      ->capture_default_str();
  sub->add_option("--min-probability", o->min_probability,
                  "Leave out a source piece's targets below this p(target | source)")
      ->check(number_in(0, 1))
      ->capture_default_str();
  sub->add_option("--iterations", o->iterations, "EM iterations of IBM model 1")
      ->check(integer_in(1, 100))
      ->capture_default_str();
  sub->add_option("--max-pairs", o->max_pairs, "Use the first this many sentence pairs (0: all)")
      ->check(integer_in(0, std::int64_t{1} << 40))
      ->capture_default_str();
  add_threads_option(sub, o->threads, "Threads encoding the corpus and counting");
  return {
      sub, [o] {
        if (o->model.empty() && o->vocabulary.empty()) throw CLI::ValidationError("give --model or --vocabulary");
        io::check_writable(o->output);
        const int threads = cpu::resolve_threads(o->threads, "build-shortlist: --threads");
        const ShortlistVocabulary v = shortlist_vocabulary(*o);
        const text::Vocabulary& vocab = v.vocabulary;
        data::CorpusOptions corpus_options;
        corpus_options.source = o->source;
        corpus_options.target = o->target;
        corpus_options.max_length = 250;
        corpus_options.max_ratio = 0;  // every pair (but empty ones and over-long ones)
        const data::EncodedCorpus corpus = data::load_parallel_corpus(corpus_options, vocab, "", threads);
        spdlog::info("build-shortlist: {} sentence pairs ({} left out: empty or over 250 pieces)", corpus.counts.kept,
                     corpus.counts.total - corpus.counts.kept);
        if (corpus.size() == 0) {
          throw Error("build-shortlist: " + o->source + " and " + o->target +
                      " hold no sentence pair to learn from (every pair is empty or over 250 pieces)");
        }
        data::LexicalTableOptions table_options;
        table_options.iterations = o->iterations;
        table_options.threads = threads;
        table_options.max_pairs = o->max_pairs;
        const data::LexicalTable table = data::train_ibm_model1(
            corpus, vocab.size(), vocab.target_size(), table_options,
            [&](int iteration) { spdlog::info("build-shortlist: EM iteration {} of {}", iteration, o->iterations); });
        spdlog::info("build-shortlist: {} pairs, {} distinct co-occurring pieces", table.pairs, table.cooccurrences);
        io::write_file_atomically(o->output, shortlist_text(table, v, *o));
        spdlog::info("build-shortlist: wrote {}", o->output);
        return 0;
      }};
}

}  // namespace dragoman::cli
