// `dragoman decoding-defaults`: the decoding settings a model file recommends (beam, length penalty,
// length normalisation: decoding.* metadata, decode/model_files.h), shown or written, so that the
// settings chosen on a development set travel with the model and translate and serve use them
// where their own options are not given.
#include <cstdio>

#include <spdlog/spdlog.h>

#include "base/error.h"
#include "cli/commands.h"
#include "cli/validators.h"
#include "decode/decoding_options.h"
#include "decode/model_files.h"
#include "io/atomic_file.h"
#include "io/safetensors.h"

namespace dragoman::cli {
namespace {

struct DefaultsOptions {
  std::string model;
  int beam = 0;
  double length_penalty = 0;
  std::string length_normalization;
  bool clear = false;
  std::string output;
  bool in_place = false;
};

// "beam 6, length penalty 2, gnmt length normalisation", or what is not set.
std::string describe(const decode::DecodingDefaults& d) {
  std::string text;
  const auto add = [&text](const std::string& part) { text += (text.empty() ? "" : ", ") + part; };
  if (d.beam) add("beam " + std::to_string(*d.beam));
  if (d.alpha) add(fmt::format("length penalty {}", *d.alpha));
  if (d.normalization) add(*d.normalization + " length normalisation");
  return text;
}

}  // namespace

Subcommand add_decoding_defaults(CLI::App& app) {
  auto o = std::make_shared<DefaultsOptions>();
  CLI::App* sub = app.add_subcommand(
      "decoding-defaults",
      "Show or set the decoding settings a model file recommends (beam, length penalty, length normalisation): "
      "translate and serve use them where their own options are not given");
  sub->add_option("model", o->model, "The model file")->required()->check(CLI::ExistingFile);
  CLI::Option* beam = sub->add_option("--beam,-b", o->beam, "The beam size to recommend")
                          ->check(integer_in(1, decode::kMaxBeam));
  CLI::Option* alpha = sub->add_option("--length-penalty", o->length_penalty, "The length penalty alpha to recommend")
                           ->check(number_in(0, decode::kMaxLengthPenalty));
  CLI::Option* normalization =
      sub->add_option("--length-normalization", o->length_normalization, "The length normalisation to recommend")
          ->check(CLI::IsMember({"gnmt", "power", "none"}));
  CLI::Option* clear =
      sub->add_flag("--clear", o->clear, "Remove the recommendations first (those given are then set)");
  CLI::Option* output =
      sub->add_option("--output,-o", o->output, "Write the model with the new settings here (atomically)");
  CLI::Option* in_place = sub->add_flag("--in-place", o->in_place, "Rewrite the model file itself (atomically)");
  output->excludes(in_place);
  return {sub, [o, beam, alpha, normalization, clear, output, in_place] {
            const io::SafeTensorsReader reader(o->model);
            model::ModelFileInfo info;
            info.metadata = reader.header().metadata;
            const decode::DecodingDefaults current = decode::decoding_defaults(info, o->model);
            const bool changes = beam->count() + alpha->count() + normalization->count() + clear->count() > 0;
            if (!changes) {
              if (output->count() + in_place->count() > 0) {
                throw CLI::ValidationError("nothing to write: give --beam, --length-penalty, --length-normalization "
                                           "or --clear");
              }
              const std::string recommended = describe(current);
              std::printf("%s: %s\n", o->model.c_str(),
                          recommended.empty()
                              ? "no recommended decoding settings (translate's defaults apply)"
                              : (recommended + " (translate and serve use them where not given)").c_str());
              return 0;
            }
            if (output->count() + in_place->count() == 0) {
              throw CLI::ValidationError("say where to write: --output FILE, or --in-place to rewrite " + o->model);
            }
            decode::DecodingDefaults next = o->clear ? decode::DecodingDefaults{} : current;
            if (beam->count() > 0) next.beam = o->beam;
            if (alpha->count() > 0) next.alpha = o->length_penalty;
            if (normalization->count() > 0) next.normalization = o->length_normalization;
            const std::string target = o->in_place ? o->model : o->output;
            if (!o->in_place) io::check_writable(target);
            decode::write_decoding_defaults(o->model, next, target);
            const std::string written = describe(next);
            spdlog::info("decoding-defaults: wrote {}: {}", target,
                         written.empty() ? "no recommended decoding settings" : written);
            return 0;
          }};
}

}  // namespace dragoman::cli
