// `dragoman build-vocab`: trains a SentencePiece vocabulary (options -> text/vocabulary.h).
#include <spdlog/spdlog.h>

#include <cstdint>
#include <limits>

#include "cli/commands.h"
#include "cli/validators.h"
#include "io/atomic_file.h"
#include "text/vocabulary.h"

namespace dragoman::cli {

Subcommand add_build_vocab(CLI::App& app) {
  auto o = std::make_shared<text::VocabularyOptions>();
  auto output = std::make_shared<std::string>();
  CLI::App* sub = app.add_subcommand(
      "build-vocab",
      "Train a SentencePiece vocabulary (BPE or unigram) shared by all input files; writes PREFIX.model and "
      "PREFIX.vocab. Special ids: <pad> 0, <unk> 1, <s> 2, </s> 3");
  sub->add_option("--input,-i", o->inputs,
                  "Text files, one sentence per line (source and target for a shared "
                  "vocabulary)")
      ->required()
      ->expected(1, -1)
      ->check(CLI::ExistingFile);
  sub->add_option("--output,-o", *output, "Output prefix: writes PREFIX.model and PREFIX.vocab")->required();
  sub->add_option("--model-type", o->model_type, "bpe (the paper's EN-DE) or unigram (word-piece-like, EN-FR)")
      ->check(CLI::IsMember({"bpe", "unigram"}))
      ->capture_default_str();
  sub->add_option("--vocab-size", o->vocab_size, "Number of pieces, special ones included")
      ->check(integer_in(5, std::int64_t{1} << 24))
      ->capture_default_str();
  sub->add_option("--character-coverage", o->character_coverage,
                  "Share of characters to cover (1.0 for small alphabets, 0.9995 for CJK)")
      ->check(number_in(0.5, 1))
      ->capture_default_str();
  sub->add_option("--input-sentence-size", o->input_sentence_size,
                  "Train on a random sample of this many sentences (0: all)")
      ->check(integer_at_least(0, std::numeric_limits<std::int64_t>::max()))
      ->capture_default_str();
  sub->add_option("--user-defined-symbols", o->user_defined_symbols,
                  "Pieces always kept whole (comma-separated or repeated), e.g. tags")
      ->delimiter(',');
  sub->add_option("--seed", o->seed, "Random seed for sampling and training")
      ->check(integer_in(0, std::numeric_limits<std::uint32_t>::max()))
      ->capture_default_str();
  add_threads_option(sub, o->threads, "Training threads");
  return {sub, [o, output] {
            // Both files are checked before the training, which can take minutes.
            io::check_writable(*output + ".model");
            io::check_writable(*output + ".vocab");
            o->threads = cpu::resolve_threads(o->threads, "build-vocab: --threads");
            o->verbose = spdlog::get_level() <= spdlog::level::debug;
            spdlog::info("build-vocab: training a {} vocabulary of {} pieces on {} file(s)", o->model_type,
                         o->vocab_size, o->inputs.size());
            const text::Vocabulary vocab = text::Vocabulary::train(*o);
            vocab.save(*output);
            spdlog::info("build-vocab: wrote {}.model and {}.vocab ({} pieces)", *output, *output, vocab.size());
            return 0;
          }};
}

}  // namespace dragoman::cli
