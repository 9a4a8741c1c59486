// Training configuration (see config.h).
#include "train/config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <utility>

#include "base/dtype.h"
#include "base/error.h"
#include "base/spelling.h"
#include "base/utf8.h"
#include "device/cpu/threads.h"
#include "io/text_lines.h"
#include "train/fine_tuning.h"
#include "train/schedule.h"

namespace dragoman::train {
namespace {

// A config key that names a file, with its field in a TrainConfig.
template <typename Field>
struct PathKey {
  const char* section;
  const char* key;
  Field field;
};

// The keys that name files, with their fields in `c` (a TrainConfig, const or not): made absolute
// against the config file's directory when a config file gives them, else the working directory,
// and checked to be files before training.
template <typename Config>
auto path_keys(Config& c) {
  using Field = decltype(&c.data.train_source);
  return std::array<PathKey<Field>, 8>{{{"training", "init_from", &c.training.init_from},
                                        {"data", "train_source", &c.data.train_source},
                                        {"data", "train_target", &c.data.train_target},
                                        {"data", "train_tsv", &c.data.train_tsv},
                                        {"data", "valid_source", &c.data.valid_source},
                                        {"data", "valid_target", &c.data.valid_target},
                                        {"data", "valid_tsv", &c.data.valid_tsv},
                                        {"data", "vocabulary", &c.data.vocabulary}}};
}

// "unknown config key 'training.max_step'; did you mean 'training.max_steps'?", or the section's
// keys when none is close.
std::string unknown_key_message(const std::string& section, const std::string& key, std::vector<std::string> keys) {
  std::sort(keys.begin(), keys.end());
  const std::string nearest = nearest_name(key, keys);
  std::string message = "unknown config key '" + section + "." + key + "'";
  if (!nearest.empty()) return message + "; did you mean '" + section + "." + nearest + "'?";
  message += " (the keys of " + section + ":";
  for (const std::string& k : keys) message += " " + k;
  return message + ")";
}

// "SOURCE:LINE" of a node (its line when yaml-cpp knows it).
std::string where(const YAML::Node& node, const std::string& source) {
  return source + (node.Mark().is_null() ? "" : ":" + std::to_string(node.Mark().line + 1));
}

// A scalar's text, which must be valid UTF-8: yaml-cpp also reads UTF-16 and UTF-32 (NUL bytes
// make it guess so), and its escapes ("\xF5", "\U0011FFFF") can make what UTF-8 cannot hold.
std::string scalar_text(const YAML::Node& node, const std::string& source) {
  const std::string& text = node.Scalar();
  if (utf8::find_invalid(text) != std::string::npos) {
    throw Error(where(node, source) + ": '" + utf8::replace_invalid(text) + "' is not valid UTF-8 text");
  }
  return text;
}

// A YAML node as JSON: plain scalars become booleans, integers or numbers when they read as one;
// quoted scalars stay strings.
nlohmann::json yaml_to_json(const YAML::Node& node, const std::string& source) {
  switch (node.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined: return nullptr;
    case YAML::NodeType::Sequence: {
      nlohmann::json array = nlohmann::json::array();
      for (const YAML::Node& item : node) array.push_back(yaml_to_json(item, source));
      return array;
    }
    case YAML::NodeType::Map: {
      nlohmann::json object = nlohmann::json::object();
      for (const auto& item : node) {
        if (!item.first.IsScalar()) throw Error(where(item.first, source) + ": a key that is not a name");
        object[scalar_text(item.first, source)] = yaml_to_json(item.second, source);
      }
      return object;
    }
    case YAML::NodeType::Scalar: break;
  }
  const std::string text = scalar_text(node, source);
  if (node.Tag() == "!") return text;  // quoted
  if (text == "true" || text == "True" || text == "yes") return true;
  if (text == "false" || text == "False" || text == "no") return false;
  if (text == "null" || text == "~") return nullptr;
  try {
    std::size_t used = 0;
    const long long integer = std::stoll(text, &used);
    if (used == text.size()) return integer;
  } catch (const std::exception&) {
  }
  try {
    std::size_t used = 0;
    const double number = std::stod(text, &used);
    if (used == text.size()) return number;
  } catch (const std::exception&) {
  }
  return text;
}

// Recursively merges `top` over `base` (objects key by key; anything else replaces).
void merge(nlohmann::json& base, const nlohmann::json& top) {
  if (!base.is_object() || !top.is_object()) {
    base = top;
    return;
  }
  for (const auto& [key, value] : top.items()) {
    if (base.contains(key)) {
      merge(base[key], value);
    } else {
      base[key] = value;
    }
  }
}

// The merged JSON of a YAML file and the `base:` files it names (paths relative to the file).
// Each file is checked on its own first, so an error names the file that has the bad key.
nlohmann::json load_yaml_chain(const std::string& path, int depth) {
  if (depth > 8) throw Error(path + ": more than 8 nested `base:` files (a cycle?)");
  if (!std::filesystem::is_regular_file(path)) throw Error("cannot read config file " + path);
  // Read as UTF-8 text first (YAML is UTF-8; yaml-cpp would turn invalid bytes into U+FFFD
  // silently): an invalid byte is an error naming the file and line.
  const io::TextLines text = io::read_text_lines(path);
  for (std::size_t i = 0; i < text.lines.size(); ++i) {
    if (text.lines[i].find('\0') != std::string_view::npos)
      throw_input_error(path, i + 1, "a NUL byte (not a text file)");
  }
  nlohmann::json json;
  try {
    json = yaml_to_json(YAML::Load(std::string(text.data.begin(), text.data.end())), path);
  } catch (const YAML::Exception& e) {  // syntax, or a key that is not a plain string (a list, a map)
    throw Error(path + (e.mark.is_null() ? "" : ":" + std::to_string(e.mark.line + 1)) + ": invalid YAML: " + e.msg);
  }
  if (json.is_null()) json = nlohmann::json::object();
  if (!json.is_object()) throw Error(path + ": expected a mapping with sections model, data, training, checkpoint");
  nlohmann::json merged = nlohmann::json::object();
  if (json.contains("base")) {
    if (!json["base"].is_string()) throw Error(path + ": 'base' must be a file name");
    const std::filesystem::path base = std::filesystem::path(path).parent_path() / json["base"].get<std::string>();
    merged = load_yaml_chain(base.string(), depth + 1);
    json.erase("base");
  }
  TrainConfig::from_json(json, path);  // checks names and types of this file alone
  // A path written in a config file is relative to that file's directory: a config copied
  // elsewhere, or run from another directory, finds the same files (--set values stay relative to
  // the working directory).
  const std::filesystem::path dir = std::filesystem::absolute(path).parent_path();
  const TrainConfig fields;  // (only the keys of the list are needed here)
  for (const auto& [section, key, field] : path_keys(fields)) {
    if (!json.contains(section) || !json[section].is_object()) continue;
    const auto it = json[section].find(key);
    if (it == json[section].end() || !it->is_string() || it->get<std::string>().empty()) continue;
    const std::filesystem::path given = it->get<std::string>();
    if (given.is_relative()) *it = (dir / given).lexically_normal().string();
  }
  merge(merged, json);
  return merged;
}

// Strict typed reading of one section's keys into fields.
class SectionReader {
 public:
  SectionReader(const nlohmann::json& section, std::string source, std::string name)
      : section_(section), source_(std::move(source)), name_(std::move(name)) {
    if (!section_.is_object()) throw Error(source_ + ": section '" + name_ + "' must be a mapping");
  }

  void integer(const char* key, std::int64_t& field) {
    read(key, [&](const nlohmann::json& v) {
      if (!v.is_number_integer()) wrong(key, "an integer", v);
      field = v.get<std::int64_t>();
    });
  }
  void unsigned_integer(const char* key, std::uint64_t& field) {
    read(key, [&](const nlohmann::json& v) {
      if (!v.is_number_integer() || v.get<std::int64_t>() < 0) wrong(key, "a non-negative integer", v);
      field = v.get<std::uint64_t>();
    });
  }
  void number(const char* key, double& field) {
    read(key, [&](const nlohmann::json& v) {
      if (!v.is_number()) wrong(key, "a number", v);
      field = v.get<double>();
    });
  }
  void boolean(const char* key, bool& field) {
    read(key, [&](const nlohmann::json& v) {
      if (!v.is_boolean()) wrong(key, "true or false", v);
      field = v.get<bool>();
    });
  }
  void string(const char* key, std::string& field) {
    read(key, [&](const nlohmann::json& v) {
      if (!v.is_string()) wrong(key, "a string", v);
      field = v.get<std::string>();
    });
  }
  // Every key of the section must have been read.
  void finish() const {
    for (const auto& [key, value] : section_.items()) {
      if (known_.count(key) == 0) {
        std::vector<std::string> keys;
        for (const auto& [known, read] : known_) keys.push_back(known);
        throw Error(source_ + ": " + unknown_key_message(name_, key, keys));
      }
    }
  }

 private:
  void read(const char* key, const std::function<void(const nlohmann::json&)>& apply) {
    known_[key] = true;
    if (section_.contains(key)) apply(section_.at(key));
  }
  [[noreturn]] void wrong(const char* key, const char* expected, const nlohmann::json& v) const {
    throw Error(source_ + ": config key '" + name_ + "." + key + "' must be " + expected + ", got " + v.dump());
  }

  const nlohmann::json& section_;
  std::string source_, name_;
  std::map<std::string, bool> known_;
};

}  // namespace

nlohmann::json TrainConfig::to_json() const {
  nlohmann::json model_json = model.to_json();
  return {{"model", model_json},
          {"data",
           {{"train_source", data.train_source},
            {"train_target", data.train_target},
            {"train_tsv", data.train_tsv},
            {"valid_source", data.valid_source},
            {"valid_target", data.valid_target},
            {"valid_tsv", data.valid_tsv},
            {"vocabulary", data.vocabulary},
            {"vocab_type", data.vocab_type},
            {"vocab_size", data.vocab_size},
            {"character_coverage", data.character_coverage},
            {"vocab_sample", data.vocab_sample},
            {"max_length", data.max_length},
            {"max_ratio", data.max_ratio},
            {"curriculum", data.curriculum},
            {"curriculum_start", data.curriculum_start}}},
          {"training",
           {{"seed", training.seed},
            {"init_from", training.init_from},
            {"freeze", training.freeze},
            {"zero_init_residual", training.zero_init_residual},
            {"max_tokens", training.max_tokens},
            {"tokens_per_update", training.tokens_per_update},
            {"update_freq", training.update_freq},
            {"max_steps", training.max_steps},
            {"max_epochs", training.max_epochs},
            {"max_minutes", training.max_minutes},
            {"lr_factor", training.lr_factor},
            {"lr", training.lr},
            {"warmup_steps", training.warmup_steps},
            {"lr_decay", training.lr_decay},
            {"lr_hold", training.lr_hold},
            {"adam_beta1", training.adam_beta1},
            {"adam_beta2", training.adam_beta2},
            {"adam_eps", training.adam_eps},
            {"weight_decay", training.weight_decay},
            {"optimizer", training.optimizer},
            {"muon_lr_scale", training.muon_lr_scale},
            {"muon_momentum", training.muon_momentum},
            {"muon_ns_steps", training.muon_ns_steps},
            {"ema_decay", training.ema_decay},
            {"clip_norm", training.clip_norm},
            {"log_every", training.log_every},
            {"valid_every", training.valid_every},
            {"valid_bleu", training.valid_bleu},
            {"valid_beam", training.valid_beam},
            {"best_metric", training.best_metric},
            {"patience", training.patience},
            {"threads", training.threads},
            {"devices", training.devices},
            {"precision", training.precision},
            {"loss_scale", training.loss_scale},
            {"loss_scale_window", training.loss_scale_window},
            {"min_loss_scale", training.min_loss_scale}}},
          {"checkpoint",
           {{"every_steps", checkpoint.every_steps},
            {"every_minutes", checkpoint.every_minutes},
            {"keep_last", checkpoint.keep_last}}}};
}

TrainConfig TrainConfig::from_json(const nlohmann::json& json, const std::string& source) {
  if (!json.is_object()) throw Error(source + ": expected a mapping with sections model, data, training, checkpoint");
  TrainConfig c;
  for (const auto& [name, section] : json.items()) {
    if (name == "model") {
      // Over this config's current model (defaults: the paper's base model), key by key.
      nlohmann::json merged = c.model.to_json();
      if (!section.is_object()) throw Error(source + ": section 'model' must be a mapping");
      for (const auto& [key, value] : section.items()) {
        merged[key] = value;
        if (std::find(c.model_keys_given.begin(), c.model_keys_given.end(), key) == c.model_keys_given.end())
          c.model_keys_given.push_back(key);
      }
      for (const auto& [key, value] : section.items()) {
        if (!c.model.to_json().contains(key)) {
          std::vector<std::string> keys;
          const nlohmann::json defaults = c.model.to_json();
          for (const auto& [known, default_value] : defaults.items()) keys.push_back(known);
          throw Error(source + ": " + unknown_key_message("model", key, keys));
        }
      }
      c.model = model::ModelConfig::from_json(merged, source, false);
    } else if (name == "data") {
      SectionReader r(section, source, name);
      r.string("train_source", c.data.train_source);
      r.string("train_target", c.data.train_target);
      r.string("train_tsv", c.data.train_tsv);
      r.string("valid_source", c.data.valid_source);
      r.string("valid_target", c.data.valid_target);
      r.string("valid_tsv", c.data.valid_tsv);
      r.string("vocabulary", c.data.vocabulary);
      r.string("vocab_type", c.data.vocab_type);
      r.integer("vocab_size", c.data.vocab_size);
      r.number("character_coverage", c.data.character_coverage);
      r.integer("vocab_sample", c.data.vocab_sample);
      r.integer("max_length", c.data.max_length);
      r.number("max_ratio", c.data.max_ratio);
      r.number("curriculum", c.data.curriculum);
      r.number("curriculum_start", c.data.curriculum_start);
      r.finish();
    } else if (name == "training") {
      SectionReader r(section, source, name);
      r.unsigned_integer("seed", c.training.seed);
      r.string("init_from", c.training.init_from);
      r.string("freeze", c.training.freeze);
      r.boolean("zero_init_residual", c.training.zero_init_residual);
      r.integer("max_tokens", c.training.max_tokens);
      r.integer("tokens_per_update", c.training.tokens_per_update);
      r.integer("update_freq", c.training.update_freq);
      r.integer("max_steps", c.training.max_steps);
      r.integer("max_epochs", c.training.max_epochs);
      r.number("max_minutes", c.training.max_minutes);
      r.number("lr_factor", c.training.lr_factor);
      r.number("lr", c.training.lr);
      r.integer("warmup_steps", c.training.warmup_steps);
      r.string("lr_decay", c.training.lr_decay);
      r.number("lr_hold", c.training.lr_hold);
      r.number("adam_beta1", c.training.adam_beta1);
      r.number("adam_beta2", c.training.adam_beta2);
      r.number("adam_eps", c.training.adam_eps);
      r.number("weight_decay", c.training.weight_decay);
      r.string("optimizer", c.training.optimizer);
      r.number("muon_lr_scale", c.training.muon_lr_scale);
      r.number("muon_momentum", c.training.muon_momentum);
      r.integer("muon_ns_steps", c.training.muon_ns_steps);
      r.number("ema_decay", c.training.ema_decay);
      r.number("clip_norm", c.training.clip_norm);
      r.integer("log_every", c.training.log_every);
      r.integer("valid_every", c.training.valid_every);
      r.boolean("valid_bleu", c.training.valid_bleu);
      r.integer("valid_beam", c.training.valid_beam);
      r.string("best_metric", c.training.best_metric);
      r.integer("patience", c.training.patience);
      r.integer("threads", c.training.threads);
      r.string("devices", c.training.devices);
      r.string("precision", c.training.precision);
      r.number("loss_scale", c.training.loss_scale);
      r.integer("loss_scale_window", c.training.loss_scale_window);
      r.number("min_loss_scale", c.training.min_loss_scale);
      r.finish();
    } else if (name == "checkpoint") {
      SectionReader r(section, source, name);
      r.integer("every_steps", c.checkpoint.every_steps);
      r.number("every_minutes", c.checkpoint.every_minutes);
      r.integer("keep_last", c.checkpoint.keep_last);
      r.finish();
    } else {
      const std::string nearest = nearest_name(name, {"model", "data", "training", "checkpoint"});
      throw Error(source + ": unknown config section '" + name + "'" +
                  (nearest.empty() ? " (expected model, data, training, checkpoint)"
                                   : "; did you mean '" + nearest +
                                         "'? (the sections: model, data, training, "
                                         "checkpoint)"));
    }
  }
  return c;
}

TrainConfig TrainConfig::load(const std::string& path, const std::vector<std::string>& overrides) {
  nlohmann::json merged = path.empty() ? nlohmann::json::object() : load_yaml_chain(path, 0);
  for (const std::string& override_text : overrides) {
    const std::size_t eq = override_text.find('=');
    const std::size_t dot = override_text.find('.');
    if (eq == std::string::npos || dot == std::string::npos || dot > eq || dot == 0 || dot + 1 == eq) {
      throw Error("--set " + override_text + ": expected section.key=value");
    }
    const std::string section = override_text.substr(0, dot), key = override_text.substr(dot + 1, eq - dot - 1);
    if (const std::size_t bad = utf8::find_invalid(override_text); bad != std::string::npos) {
      throw Error("--set: invalid UTF-8 at byte " + std::to_string(bad + 1) + " of '" +
                  utf8::replace_invalid(override_text) + "'");
    }
    if (override_text.find('\0') != std::string::npos) throw Error("--set: a NUL byte in '" + override_text + "'");
    nlohmann::json value;
    try {
      value = yaml_to_json(YAML::Load(override_text.substr(eq + 1)), "--set");
    } catch (const YAML::Exception& e) {
      throw Error("--set " + override_text + ": invalid value: " + e.msg);
    }
    if (value.is_null()) {  // "section.key=": back to the default
      const nlohmann::json defaults = TrainConfig().to_json();
      if (!defaults.contains(section) || !defaults[section].contains(key)) {
        TrainConfig::from_json({{section, {{key, nullptr}}}}, "--set " + override_text);  // names the unknown key
      }
      if (merged.contains(section) && merged[section].is_object()) merged[section].erase(key);
      continue;
    }
    const nlohmann::json one = {{section, {{key, value}}}};
    TrainConfig::from_json(one, "--set " + override_text);  // names and type
    merge(merged, one);
  }
  return from_json(merged, path.empty() ? "command line" : path);
}

void TrainConfig::validate() const {
  const auto fail = [](const std::string& what) { throw Error("invalid training config: " + what); };
  const bool files = !data.train_source.empty() || !data.train_target.empty();
  if (files == !data.train_tsv.empty()) fail("give either data.train_source and data.train_target, or data.train_tsv");
  if (files && (data.train_source.empty() || data.train_target.empty())) {
    fail("data.train_source and data.train_target go together");
  }
  if (!data.valid_tsv.empty() && (!data.valid_source.empty() || !data.valid_target.empty())) {
    fail("give either data.valid_source and data.valid_target, or data.valid_tsv");
  }
  if (data.valid_source.empty() != data.valid_target.empty())
    fail("data.valid_source and data.valid_target go together");
  if (data.vocab_type != "bpe" && data.vocab_type != "unigram") fail("data.vocab_type must be bpe or unigram");
  if (data.max_length < 1) fail("data.max_length must be >= 1");
  if (!(data.curriculum >= 0 && data.curriculum <= 1)) {
    fail("data.curriculum must be in [0, 1] (the share of the first epoch; 0: off)");
  }
  if (!(data.curriculum_start > 0 && data.curriculum_start <= 1)) fail("data.curriculum_start must be in (0, 1]");
  if (training.max_tokens < 1) fail("training.max_tokens must be >= 1");
  if (training.update_freq < 0) fail("training.update_freq must be >= 1 (0: derived)");
  if (training.tokens_per_update < 0) fail("training.tokens_per_update must be >= 0 (0: not set)");
  if (training.update_freq > 0 && training.tokens_per_update > 0) {
    fail("training.update_freq " + std::to_string(training.update_freq) + " and training.tokens_per_update " +
         std::to_string(training.tokens_per_update) +
         " both set: give one (tokens_per_update derives update_freq from the workers and max_tokens; "
         "--set training.tokens_per_update= unsets it)");
  }
  if (training.max_steps < 0 || training.max_epochs < 0) fail("training.max_steps and max_epochs must be >= 0");
  if (!(training.max_minutes >= 0) || !std::isfinite(training.max_minutes)) {
    fail("training.max_minutes must be >= 0 (0: no time budget)");
  }
  if (training.max_steps == 0 && training.max_epochs == 0 && training.max_minutes == 0) {
    fail("set training.max_steps, training.max_epochs or training.max_minutes");
  }
  if (training.warmup_steps < 1) fail("training.warmup_steps must be >= 1");
  if (training.optimizer != "adam" && training.optimizer != "muon") {
    fail("training.optimizer must be adam or muon, got '" + training.optimizer + "'");
  }
  if (!(training.muon_lr_scale > 0) || !std::isfinite(training.muon_lr_scale)) {
    fail("training.muon_lr_scale must be > 0");
  }
  if (!(training.muon_momentum >= 0 && training.muon_momentum < 1)) fail("training.muon_momentum must be in [0, 1)");
  if (training.muon_ns_steps < 1 || training.muon_ns_steps > 20) fail("training.muon_ns_steps must be in [1, 20]");
  if (!(training.ema_decay >= 0 && training.ema_decay < 1)) {
    fail("training.ema_decay must be in [0, 1) (0: no moving average; 0.9999 is usual)");
  }
  if (training.lr_decay != "inverse_sqrt" && training.lr_decay != "constant" && !decays_to_zero(training.lr_decay)) {
    fail("training.lr_decay must be inverse_sqrt, constant, linear or cosine");
  }
  if (!(training.lr_hold >= 0 && training.lr_hold < 1)) fail("training.lr_hold must be in [0, 1)");
  if (training.lr_hold > 0 && !decays_to_zero(training.lr_decay)) {
    fail("training.lr_hold holds the peak before a decay to zero: it needs lr_decay linear or cosine");
  }
  if (decays_to_zero(training.lr_decay) && training.max_minutes == 0 &&
      (training.max_steps == 0 || training.max_steps <= training.warmup_steps)) {
    fail("training.lr_decay " + training.lr_decay +
         " decays to zero at training.max_steps: set max_steps above warmup_steps (" +
         std::to_string(training.warmup_steps) + "), or a time budget (training.max_minutes)");
  }
  if (!(training.lr_factor > 0) || !std::isfinite(training.lr_factor)) fail("training.lr_factor must be > 0");
  if (!(training.lr >= 0) || !std::isfinite(training.lr)) fail("training.lr must be >= 0 (0: use lr_factor)");
  if (training.lr > 0 && training.lr_factor != 1.0) {
    fail("give training.lr (the peak learning rate) or training.lr_factor (the paper's factor), not both "
         "(to use training.lr over a config that sets the factor, clear it: --set training.lr_factor=)");
  }
  try {
    freeze_groups(training.freeze);
  } catch (const Error& e) {
    fail(e.what());
  }
  if (!training.freeze.empty() && training.weight_decay > 0) {
    fail("training.freeze with training.weight_decay " + std::to_string(training.weight_decay) +
         ": the decoupled decay would still shrink the frozen weights; set weight_decay to 0");
  }
  if (!training.init_from.empty() && !data.vocabulary.empty()) {
    fail(
        "training.init_from and data.vocabulary: a model to start from brings its own vocabulary; leave "
        "data.vocabulary out");
  }
  if (training.log_every < 1) fail("training.log_every must be >= 1");
  if (training.valid_every < 0 || training.patience < 0) fail("training.valid_every and patience must be >= 0");
  if (training.valid_beam < 1 || training.valid_beam > 1024) fail("training.valid_beam must be in [1, 1024]");
  if (training.best_metric != "nll" && training.best_metric != "bleu") fail("training.best_metric must be nll or bleu");
  if (training.best_metric == "bleu" && !training.valid_bleu)
    fail("training.best_metric bleu needs training.valid_bleu");
  if (training.threads < 0 || training.threads > cpu::kMaxThreads) {
    fail("training.threads must be from 0 (OMP_NUM_THREADS or all cores) to " + std::to_string(cpu::kMaxThreads));
  }
  try {
    parse_devices(training.devices, 1);  // the syntax ("all" is resolved by the trainer)
  } catch (const Error& e) {
    fail(std::string("training.devices ") + e.what());
  }
  DType precision = DType::kF32;
  if (!parse_precision(training.precision, precision)) fail("training.precision must be fp32, bf16 or fp16");
  if (!(training.min_loss_scale > 0) || !(training.loss_scale >= training.min_loss_scale) ||
      !std::isfinite(training.loss_scale)) {
    fail("training.loss_scale must be finite and >= training.min_loss_scale > 0");
  }
  if (training.loss_scale_window < 1) fail("training.loss_scale_window must be >= 1");
  if (checkpoint.every_steps < 0 || checkpoint.every_minutes < 0) fail("checkpoint intervals must be >= 0");
  if (checkpoint.keep_last < 1) fail("checkpoint.keep_last must be >= 1");
}

void TrainConfig::check_files() const {
  for (const auto& [section, key, path] : path_keys(*this)) {
    if (path->empty() || std::filesystem::is_regular_file(*path)) continue;
    throw Error(std::string("config key ") + section + "." + key + ": " +
                (std::filesystem::exists(*path) ? "not a regular file: " : "no such file: ") + *path +
                " (a relative path in a config file is relative to that file's directory; in --set, to the "
                "working directory)");
  }
}

void TrainConfig::make_paths_absolute() {
  for (const auto& [section, key, path] : path_keys(*this)) {
    if (!path->empty()) *path = std::filesystem::absolute(*path).lexically_normal().string();
  }
}

namespace {

// A non-negative decimal number, or nothing.
std::optional<int> parse_index(const std::string& text) {
  int value = -1;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || text.empty() || value < 0) return std::nullopt;
  return value;
}

}  // namespace

std::vector<Device> parse_devices(const std::string& text, int visible_gpus) {
  const auto fail = [&](const std::string& what) -> void {
    throw Error(
        "'" + text + "': " + what +
        " (expected cpu, cpu:N for N CPU workers, cuda:I, cuda:A-B, a comma list such as cuda:0,1,2,3, or all)");
  };
  std::vector<Device> devices;
  if (text == "all") {
    if (visible_gpus < 1) throw Error("'all': no CUDA device is visible (no GPU, no driver, or a build without CUDA)");
    for (int i = 0; i < visible_gpus; ++i) devices.push_back(Device::cuda(i));
    return devices;
  }
  bool cuda = false;  // a bare index or range continues a cuda list
  std::size_t begin = 0;
  while (begin <= text.size()) {
    const std::size_t comma = std::min(text.find(',', begin), text.size());
    std::string entry = text.substr(begin, comma - begin);
    entry.erase(0, entry.find_first_not_of(' '));
    entry.erase(entry.find_last_not_of(' ') + 1);
    begin = comma + 1;
    if (entry == "cpu" || entry.rfind("cpu:", 0) == 0) {
      const std::optional<int> workers = entry == "cpu" ? std::optional<int>(1) : parse_index(entry.substr(4));
      if (!workers || *workers < 1 || *workers > 1024) fail("'" + entry + "' is not cpu or cpu:N with N in [1, 1024]");
      if (!devices.empty()) fail("cpu workers are given once, alone");
      devices.assign(static_cast<std::size_t>(*workers), Device::cpu());
      if (begin <= text.size()) fail("cpu workers are not mixed with other devices");
      return devices;
    }
    std::string range = entry;
    if (entry == "cuda") {
      range = "0";
    } else if (entry.rfind("cuda:", 0) == 0) {
      range = entry.substr(5);
    } else if (!cuda) {
      fail("'" + entry + "' is not a device");
    }
    cuda = true;
    const std::size_t dash = range.find('-');
    const std::optional<int> first = parse_index(range.substr(0, dash));
    const std::optional<int> last = dash == std::string::npos ? first : parse_index(range.substr(dash + 1));
    if (!first || !last || *last < *first) fail("'" + entry + "' is not a CUDA device index or range A-B");
    for (int i = *first; i <= *last; ++i) {
      if (std::find(devices.begin(), devices.end(), Device::cuda(i)) != devices.end()) {
        fail("cuda:" + std::to_string(i) + " is given twice");
      }
      devices.push_back(Device::cuda(i));
    }
  }
  return devices;
}

std::string to_yaml(const nlohmann::json& json) {
  YAML::Emitter out;
  const std::function<void(const nlohmann::json&)> emit = [&](const nlohmann::json& v) {
    if (v.is_object()) {
      out << YAML::BeginMap;
      for (const auto& [key, value] : v.items()) {
        out << YAML::Key << key << YAML::Value;
        emit(value);
      }
      out << YAML::EndMap;
    } else if (v.is_array()) {
      out << YAML::BeginSeq;
      for (const auto& item : v) emit(item);
      out << YAML::EndSeq;
    } else if (v.is_string()) {
      out << YAML::DoubleQuoted << v.get<std::string>();
    } else {
      out << v.dump();  // numbers and booleans as JSON writes them (round-trips exactly)
    }
  };
  emit(json);
  return std::string(out.c_str()) + "\n";
}

}  // namespace dragoman::train
