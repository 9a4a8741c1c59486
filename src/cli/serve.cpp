// `dragoman serve`: a translation server (serve/server.h, docs/SERVE.md) over one or more models,
// with translate's decoding options, cross-request batching and limits; SIGINT/SIGTERM stop it
// after the requests in flight are answered (exit 0).
#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <regex>

#include "base/error.h"
#include "cli/commands.h"
#include "cli/decoding_options.h"
#include "cli/stop_signal.h"
#include "cli/validators.h"
#include "device/cpu/threads.h"
#include "device/device.h"
#include "ops/linear.h"
#include "serve/server.h"

namespace dragoman::cli {
namespace {

struct ServeCliOptions {
  std::vector<std::string> models;  // PATH or NAME=PATH
  std::vector<std::string> shortlists;  // FILE (the first model's) or NAME=FILE
  std::string host = "127.0.0.1";
  int port = 8080;
  decode::DecodingOptions decoding;  // the search (a request's defaults), device, batches
  double max_wait_ms = 5;
  std::int64_t join_sentences = 1;
  double join_wait_ms = 60;
  std::int64_t max_queue = 10000;
  std::int64_t max_request_bytes = 1 << 20;
  std::int64_t max_request_sentences = 1000;
  double request_timeout = 60;
  int http_threads = 64;
  bool nondeterministic = false;
};

// "NAME=PATH" or "PATH" (named after the file, without its directory and extension).
std::pair<std::string, std::string> name_and_path(const std::string& spec) {
  const std::size_t eq = spec.find('=');
  if (eq != std::string::npos && eq > 0) return {spec.substr(0, eq), spec.substr(eq + 1)};
  std::string name = spec.substr(spec.find_last_of('/') + 1);
  if (const std::size_t dot = name.find('.'); dot != std::string::npos && dot > 0) name.resize(dot);
  return {name, spec};
}

int run_serve(const ServeCliOptions& o) {
  check_decoding_device("serve", o.decoding.device, o.decoding.precision);
  const Device device = Device::parse(o.decoding.device);
  const int threads = cpu::resolve_threads(o.decoding.threads, "serve: --threads");
  cpu::set_compute_threads(threads);
  // Batch-invariant answers (a sentence's translation does not depend on who shared its batch),
  // unless --nondeterministic; a GPU has no such mode.
  ops::set_row_invariant_products(!o.nondeterministic && device.is_cpu());
  StopSignals signals;

  serve::ServerOptions options;
  options.host = o.host;
  options.port = o.port;
  options.limits.max_sentences = o.max_request_sentences;
  options.max_request_bytes = static_cast<std::size_t>(o.max_request_bytes);
  options.request_timeout_seconds = o.request_timeout;
  options.http_threads = o.http_threads;

  // On the CPU a search of half translate's sentences (kServeCpuBatchSentences says why).
  const decode::TranslatorOptions base = o.decoding.translator_options(device, decode::DecodingUse::kServer);
  serve::BatchingOptions batching;
  batching.max_wait = std::chrono::microseconds(static_cast<std::int64_t>(o.max_wait_ms * 1000));
  batching.max_queue_sentences = o.max_queue;
  batching.join_sentences = o.join_sentences;
  batching.join_wait = std::chrono::microseconds(static_cast<std::int64_t>(o.join_wait_ms * 1000));
  options.translator = base;
  options.batching = batching;

  std::vector<serve::ServedModel> models;
  static const std::regex language_pair("([a-z]{2,3})-([a-z]{2,3})");
  // Each model's shortlist: NAME=FILE, or FILE for the first model.
  std::map<std::string, std::string> shortlists;
  for (const std::string& spec : o.shortlists) {
    const std::size_t eq = spec.find('=');
    const bool named = eq != std::string::npos && eq > 0 && !std::filesystem::exists(spec);
    const std::string name = named ? spec.substr(0, eq) : name_and_path(o.models.front()).first;
    const std::string file = named ? spec.substr(eq + 1) : spec;
    if (std::none_of(o.models.begin(), o.models.end(),
                     [&](const std::string& m) { return name_and_path(m).first == name; })) {
      throw CLI::ValidationError("--shortlist " + spec + ": no model is named \"" + name + "\"");
    }
    if (!shortlists.emplace(name, file).second)
      throw CLI::ValidationError("--shortlist: two for the model \"" + name + "\"");
  }
  for (const std::string& spec : o.models) {
    const auto [name, path] = name_and_path(spec);
    for (const serve::ServedModel& m : models) {
      if (m.name == name) throw CLI::ValidationError("--model: two models named \"" + name + "\"");
    }
    serve::ServedModel m;
    m.name = name;
    std::smatch match;
    if (std::regex_match(name, match, language_pair)) {
      m.source_language = match[1];
      m.target_language = match[2];
    }
    const auto shortlist = shortlists.find(name);
    m.models = decode::load_decoding_models({path}, o.decoding.precision, device,
                                            shortlist != shortlists.end() ? shortlist->second : "");
    spdlog::info("serve: model {} = {} (step {}){}", name, path, m.models.infos.front().step,
                 m.source_language.empty() ? "" : " for " + m.source_language + " -> " + m.target_language);
    models.push_back(std::move(m));
  }
  // The default model's recommended settings (model_files.h) for the options not given.
  decode::DecodingOptions effective = o.decoding;
  std::string ignored;
  const decode::SearchOrigins origins =
      apply_model_defaults(decode::decoding_defaults(models.front().models.infos.front(), o.models.front()), effective,
                           decode::DecodingUse::kServer, &ignored);
  if (!ignored.empty()) spdlog::warn("serve: {}: the default beam {} instead", ignored, effective.beam);
  options.search = effective.search_options();
  spdlog::info(
      "serve: beam {}, {} alpha {}, {} compute thread(s), continuous batching of up to {} sentences and {} source "
      "tokens, an idle server waiting up to {} ms for company ({})",
      options.search.beam, effective.length_normalization, options.search.alpha, threads, base.batch_sentences,
      base.batch_tokens, o.max_wait_ms, describe_origins(origins));
  serve::run_server(models, options, signals.flag());
  return 0;
}

}  // namespace

Subcommand add_serve(CLI::App& app) {
  auto o = std::make_shared<ServeCliOptions>();
  CLI::App* sub = app.add_subcommand(
      "serve",
      "Serve translations over HTTP: POST /v1/translate (JSON), the LibreTranslate API (POST /translate, GET "
      "/languages), GET /health, GET /metrics; requests batched together (docs/SERVE.md)");
  sub->add_option("--model,-m", o->models,
                  "A model file, or NAME=FILE (a name like en-de also gives LibreTranslate its languages); more than "
                  "one: chosen per request by \"model\", the first is the default")
      ->required()
      ->allow_extra_args(false);  // one a flag: -m en-de=a -m de-en=b
  sub->add_option("--shortlist", o->shortlists,
                  "A vocabulary shortlist (dragoman build-shortlist) for the first model, or NAME=FILE for the model "
                  "NAME: the output layer of the sentences searched together over their sources' lists alone")
      ->allow_extra_args(false);
  sub->add_option("--host", o->host, "Address to listen on")->capture_default_str();
  sub->add_option("--port", o->port, "Port to listen on (0: any free port, logged)")
      ->check(integer_in(0, 65535))
      ->capture_default_str();
  add_decoding_options(sub, o->decoding, kSearchOptions | kDeviceOptions | kBatchOptions, decode::DecodingUse::kServer);
  sub->add_option("--max-wait-ms", o->max_wait_ms,
                  "How long a request to an idle server waits for others to start a search with")
      ->check(number_in(0, 10000))
      ->capture_default_str();
  sub->add_option("--join-sentences", o->join_sentences,
                  "A running search takes new requests' sentences once this many wait (1: at every step)")
      ->check(integer_in(1, std::int64_t{1} << 30))
      ->capture_default_str();
  sub->add_option("--join-wait-ms", o->join_wait_ms, "... or once the oldest of them has waited this long")
      ->check(number_in(0, 10000))
      ->capture_default_str();
  sub->add_option("--max-queue", o->max_queue, "Sentences queued at most; beyond, requests get 503 and Retry-After")
      ->check(integer_in(1, std::int64_t{1} << 30))
      ->capture_default_str();
  sub->add_option("--max-request-bytes", o->max_request_bytes, "A request's body at most (413 beyond)")
      ->check(integer_in(1, std::int64_t{1} << 30))
      ->capture_default_str();
  sub->add_option("--max-request-sentences", o->max_request_sentences, "Sentences in one request at most (413)")
      ->check(integer_in(1, std::int64_t{1} << 20))
      ->capture_default_str();
  sub->add_option("--request-timeout", o->request_timeout, "Seconds a request may wait for its translation (504)")
      ->check(number_in(0.001, 86400))
      ->capture_default_str();
  sub->add_option("--http-threads", o->http_threads, "Connections served at once")
      ->check(integer_in(1, 4096))
      ->capture_default_str();
  sub->add_flag("--nondeterministic", o->nondeterministic,
                "Allow a sentence's scores to change in the last bits with the requests it is batched with "
                "(faster on AVX2 CPUs in fp32; see translate --deterministic)");
  return {sub, [o, sub] {
            o->decoding.given = given_search_options(*sub);
            return run_serve(*o);
          }};
}

}  // namespace dragoman::cli
