// `dragoman convert`: another toolkit's trained model as one Dragoman model file, vocabularies
// inside (docs/MODELS.md): a Hugging Face MarianMT directory, or a Marian model.npz with its
// SentencePiece models and vocabulary.
#include <spdlog/spdlog.h>

#include "base/error.h"
#include "cli/commands.h"
#include "cli/validators.h"
#include "convert/hf_marian.h"
#include "convert/marian_npz.h"
#include "convert/model_format.h"
#include "io/atomic_file.h"

namespace dragoman::cli {
namespace {

struct ConvertOptions {
  std::string from;
  std::string input;
  std::vector<std::string> vocabs;
  std::vector<std::string> spms;
  std::string sinusoids = "concatenated";
  std::string output;
};

}  // namespace

Subcommand add_convert(CLI::App& app) {
  auto o = std::make_shared<ConvertOptions>();
  CLI::App* sub = app.add_subcommand(
      "convert",
      "Convert a trained Marian or OPUS-MT model (model.npz) or a Hugging Face MarianMT directory into one Dragoman "
      "model file with its vocabularies (docs/MODELS.md)");
  sub->add_option("--from", o->from,
                  "The input's format, when it is not plain: hf (a MarianMT directory) or marian (a model.npz or "
                  "decoder.yml). Default: told from the input (config.json: hf; .npz, decoder.yml: marian)")
      ->check(CLI::IsMember({"hf", "marian"}));
  sub->add_option("input", o->input,
                  "The MarianMT directory, or Marian's model.npz or decoder.yml (or the directory holding it)")
      ->required()
      ->check(CLI::ExistingPath);
  sub->add_option("--vocab", o->vocabs,
                  "marian: the vocabulary (vocab.yml, or a .spm whose pieces are the ids); twice for separate source "
                  "and target vocabularies")
      ->expected(1, 2)
      ->check(CLI::ExistingFile);
  sub->add_option("--spm", o->spms,
                  "marian: the SentencePiece models that cut the text (source.spm target.spm, or one for both)")
      ->expected(1, 2)
      ->check(CLI::ExistingFile);
  sub->add_option("--sinusoids", o->sinusoids,
                  "marian: the position table: concatenated (as the Hugging Face and CTranslate2 conversions of "
                  "Marian models compute it: their translations) or tensor2tensor (Marian's own: its translations)")
      ->check(CLI::IsMember({"tensor2tensor", "concatenated"}))
      ->capture_default_str();
  sub->add_option("--output,-o", o->output, "The Dragoman model file (written atomically)")->required();
  return {sub, [o] {
            io::check_writable(o->output);
            const convert::DetectedModel input =
                o->from.empty() ? convert::detect_model_format(o->input)
                                : convert::model_format_as(o->input, o->from == "hf" ? convert::ModelFormat::kHfMarian
                                                                                    : convert::ModelFormat::kMarian);
            spdlog::info("convert: reading {} ({})", input.path, input.reason);
            convert::ImportedModel model;
            if (input.format == convert::ModelFormat::kHfMarian) {
              if (!o->vocabs.empty() || !o->spms.empty()) {
                throw CLI::ValidationError("--vocab and --spm are for Marian models (a MarianMT directory holds them)");
              }
              model = convert::read_hf_marian(input.path);
            } else {
              model = convert::read_marian({input.path, o->vocabs, o->spms,
                                            o->sinusoids == "tensor2tensor" ? ops::SinusoidLayout::kTensor2Tensor
                                                                            : ops::SinusoidLayout::kConcatenated});
            }
            convert::write_imported_model(model, o->output, o->input);
            const model::ModelConfig& c = model.config;
            spdlog::info("convert: wrote {}: {} + {} layers, d_model {}, {} heads, d_ff {}, {}, vocabularies {} / {}",
                         o->output, c.encoder_layers, c.decoder_layers, c.d_model, c.heads, c.d_ff,
                         c.activation == model::Activation::kRelu ? "relu" : "swish", c.src_vocab_size,
                         c.tgt_vocab_size);
            return 0;
          }};
}

}  // namespace dragoman::cli
