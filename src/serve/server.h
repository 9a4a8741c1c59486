// `dragoman serve`'s HTTP server (cpp-httplib from Debian): the endpoints of docs/SERVE.md over the
// served models, their requests batched by one BatchingTranslator whose batches run on the calling
// thread, until a stop signal; then it stops accepting, answers what is in flight, and returns.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "decode/model_files.h"
#include "serve/api.h"
#include "serve/batching_translator.h"

namespace dragoman::serve {

struct ServedModel {
  std::string name;                              // chosen per request ("model"); the first is the default
  std::string source_language, target_language;  // from a name "xx-yy" (LibreTranslate's languages), else ""
  decode::DecodingModels models;
};

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;
  decode::SearchOptions search;  // the defaults a request may change
  RequestLimits limits;
  std::size_t max_request_bytes = 1 << 20;
  double request_timeout_seconds = 60;
  int http_threads = 64;         // connections served at once (each waits for its translation)
  decode::TranslatorOptions translator;  // the decoding batches' sizes
  BatchingOptions batching;
};

// Serves until *stop becomes non-zero (a signal), then drains. Throws Error when it cannot listen.
// `on_listening` is called once the socket is bound (with the port: 0 in options picks a free one).
void run_server(std::vector<ServedModel>& models, const ServerOptions& options, const std::atomic<int>* stop,
                const std::function<void(int port)>& on_listening = {});

}  // namespace dragoman::serve
