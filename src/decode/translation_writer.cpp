// translate's output in input order (see translation_writer.h).
#include "decode/translation_writer.h"

#include <spdlog/spdlog.h>

#include <utility>

#include "base/error.h"
#include "decode/attention_svg.h"

namespace dragoman::decode {

TranslationSink::TranslationSink(const std::string& path, std::FILE* standard_output)
    : standard_output_(standard_output) {
  if (path != "-") file_.emplace(path);
}

void TranslationSink::write(const std::string& text) {
  if (file_) {
    file_->append(text);
  } else if (std::fwrite(text.data(), 1, text.size(), standard_output_) != text.size() ||
             std::fflush(standard_output_) != 0) {
    throw Error("cannot write to standard output");
  }
}

void TranslationSink::commit() {
  if (file_) file_->commit();
}

std::string TranslationSink::temporary_path() const { return file_ ? file_->temporary_path() : std::string(); }

TranslationWriter::TranslationWriter(TranslationSink& sink, OutputOptions format, const text::Vocabulary& vocabulary,
                                     std::string input_name, std::int64_t max_positions, std::string attention_dir,
                                     std::string picture_caption)
    : sink_(sink),
      format_(format),
      vocabulary_(vocabulary),
      input_name_(std::move(input_name)),
      max_positions_(max_positions),
      attention_dir_(std::move(attention_dir)),
      picture_caption_(std::move(picture_caption)) {}

void TranslationWriter::start_chunk(const std::vector<SourceWords>* words) {
  next_ = 0;
  words_ = words;
}

void TranslationWriter::write_ready(const std::vector<Translation>& results) {
  std::string text;
  for (; next_ < results.size() && !results[next_].nbest.empty(); ++next_) {
    const Translation& t = results[next_];
    const std::int64_t index = totals_.lines;
    if (t.truncated && ++totals_.truncated <= 10) {
      spdlog::warn("translate: {}:{}: longer than the model's {} positions: cut to its first {} tokens", input_name_,
                   index + 1, max_positions_, t.source_tokens);
    }
    totals_.source_tokens += t.source_tokens;
    totals_.target_tokens += static_cast<std::int64_t>(t.nbest.front().tokens.size());
    const SourceWords* source = words_ != nullptr ? &(*words_)[next_] : nullptr;
    if (format_.format == OutputFormat::kJson) {
      text += translation_json(t, format_, vocabulary_, source)
                  .dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) +
              "\n";
    } else {
      text += format_text(t, index, format_, vocabulary_, source);
    }
    if (!attention_dir_.empty()) write_picture(t.nbest.front(), index, *source);
    ++totals_.lines;
  }
  if (!text.empty()) sink_.write(text);
}

// DIR/N.svg for sentence N (counted from 0 as the n-best lines' ids, 6 digits at least: the line
// numbered the same in every output), when it had something to translate.
void TranslationWriter::write_picture(const TranslatedHypothesis& h, std::int64_t index,
                                      const SourceWords& source) const {
  if (h.attention.empty()) return;
  const WordLevel w = word_level(h, vocabulary_, &source);
  char name[32];
  std::snprintf(name, sizeof name, "%06lld.svg", static_cast<long long>(index));
  io::write_file_atomically(attention_dir_ + "/" + name,
                            attention_svg(source.words, w.words, w.attention,
                                          "sentence " + std::to_string(index) + " (input line " +
                                              std::to_string(index + 1) + "): " + picture_caption_));
}

std::string attention_caption(const DecodingModels& models, const AttentionChoice& choice) {
  std::string caption;
  for (const auto& model : models.models) {
    const model::ModelConfig& c = model->config();
    const std::int64_t layer = attention_layer(choice, c.decoder_layers, c.heads);
    if (caption.empty()) {
      caption = "decoder layer " + std::to_string(layer + 1) + " of " + std::to_string(c.decoder_layers) + ", " +
                (choice.head >= 0 ? "head " + std::to_string(choice.head + 1)
                                  : "the average of " + std::to_string(c.heads) + " heads");
    }
  }
  if (models.models.size() > 1) caption += ", the average of " + std::to_string(models.models.size()) + " models";
  return caption;
}

}  // namespace dragoman::decode
