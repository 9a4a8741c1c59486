// serve's HTTP layer (see server.h).
#include "serve/server.h"

#include <httplib.h>
#include <spdlog/spdlog.h>

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <iterator>
#include <nlohmann/json.hpp>
#include <thread>
#include <utility>

#include "base/error.h"
#include "base/timing.h"
#include "decode/guide_input.h"
#include "serve/metrics.h"

namespace dragoman::serve {
namespace {

using nlohmann::ordered_json;

constexpr const char* kJson = "application/json";

struct Context {
  std::vector<ServedModel>& models;
  const ServerOptions& options;
  Metrics& metrics;
  BatchingTranslator& batcher;

  std::int64_t queued() const { return batcher.queued_sentences(); }
};

std::size_t model_named(Context& c, const std::string& name) {
  if (name.empty()) return 0;
  for (std::size_t i = 0; i < c.models.size(); ++i) {
    if (c.models[i].name == name) return i;
  }
  std::string names;
  for (const ServedModel& m : c.models) names += (names.empty() ? "" : ", ") + m.name;
  throw ApiError{400, "model: no model named \"" + name + "\" (this server has " + names + ")"};
}

std::size_t model_for_languages(Context& c, const std::string& source, const std::string& target) {
  if (c.models.size() == 1 && c.models.front().target_language.empty()) return 0;
  for (std::size_t i = 0; i < c.models.size(); ++i) {
    const ServedModel& m = c.models[i];
    if (m.target_language == target && (source == "auto" || m.source_language == source)) return i;
  }
  throw ApiError{400, "no model translates " + source + " to " + target + " here (GET /languages lists them)"};
}

// Translates `texts` (one sentence each) with `model`, through its batcher: the translations in
// order. Throws ApiError 503 (queue full) or 504 (timeout).
std::vector<decode::Translation> translate(Context& c, std::size_t model, const std::vector<std::string>& texts,
                                           const decode::SearchOptions& search,
                                           std::vector<decode::TargetGuide> guides = {}) {
  const text::Vocabulary& vocabulary = *c.models[model].models.vocabulary;
  std::vector<std::vector<std::int32_t>> sources;
  sources.reserve(texts.size());
  for (const std::string& text : texts) sources.push_back(vocabulary.encode(text));
  std::shared_ptr<TranslationJob> job;
  try {
    job = c.batcher.submit(model, std::move(sources), search, std::move(guides));
  } catch (const QueueFull&) {
    throw ApiError{503, "the server is busy (its queue is full): try again shortly"};
  }
  std::future<std::vector<decode::Translation>> result = job->result.get_future();
  const auto timeout = std::chrono::duration<double>(c.options.request_timeout_seconds);
  if (result.wait_for(timeout) != std::future_status::ready) {
    job->abandoned = true;
    throw ApiError{504, "the translation took longer than this server's timeout of " +
                            std::to_string(c.options.request_timeout_seconds) + " s"};
  }
  return result.get();
}

// A request's target prefixes and constraints, encoded for the model (none when it has neither);
// what the model cannot produce, or what does not fit its positions, is a 400 naming the text.
std::vector<decode::TargetGuide> request_guides(const TranslateRequest& r, const text::Vocabulary& vocabulary,
                                                const model::ModelConfig& config) {
  std::vector<decode::TargetGuide> guides;
  if (r.target_prefixes.empty() && r.constraints.empty()) return guides;
  for (std::size_t i = 0; i < r.texts.size(); ++i) {
    const std::string where = r.texts.size() > 1 ? "[" + std::to_string(i) + "]" : "";
    decode::TargetGuide guide;
    try {
      if (!r.target_prefixes.empty() && !r.target_prefixes[i].empty()) {
        guide.prefix = decode::encode_target_phrase(vocabulary, r.target_prefixes[i], "target_prefix" + where);
      }
      if (!r.constraints.empty()) {
        for (const std::string& phrase : r.constraints[i]) {
          guide.constraints.push_back(decode::encode_target_phrase(vocabulary, phrase, "constraints" + where));
        }
      }
    } catch (const Error& e) {
      throw ApiError{400, e.what()};
    }
    const std::int64_t tokens = static_cast<std::int64_t>(guide.prefix.size()) + guide.constraint_tokens();
    if (tokens > config.max_positions - 1) {
      throw ApiError{400, "target_prefix and constraints" + where + ": " + std::to_string(tokens) +
                              " tokens, more than the model's output can hold (" +
                              std::to_string(config.max_positions - 1) + ")"};
    }
    guides.push_back(std::move(guide));
  }
  return guides;
}

std::string v1_translate(Context& c, const httplib::Request& req) {
  const TranslateRequest r = parse_translate_request(req.body, c.options.search, c.options.limits);
  const std::size_t index = model_named(c, r.model);
  const ServedModel& model = c.models[index];
  const std::vector<decode::Translation> done = translate(
      c, index, r.texts, r.search, request_guides(r, *model.models.vocabulary, model.models.decoding().config()));
  ordered_json answer = {{"model", model.name}, {"translations", ordered_json::array()}};
  for (std::size_t i = 0; i < done.size(); ++i) {
    decode::SourceWords words;
    if (r.output.alignment != decode::AlignmentKind::kNone)
      words = decode::source_words(r.texts[i], *model.models.vocabulary);
    answer["translations"].push_back(translation_json(done[i], r.output, *model.models.vocabulary, &words));
  }
  return answer.dump(-1, ' ', false, ordered_json::error_handler_t::replace);
}

std::string libre_translate(Context& c, const httplib::Request& req) {
  const bool json_body = req.get_header_value("Content-Type").rfind(kJson, 0) == 0;
  const LibreRequest r =
      json_body ? parse_libre_json(req.body, c.options.limits) : parse_libre_fields(req.params, c.options.limits);
  const std::size_t model = model_for_languages(c, r.source, r.target);
  // Each text line by line (LibreTranslate keeps a text's line breaks).
  std::vector<std::string> lines;
  std::vector<std::size_t> line_counts;
  for (const std::string& text : r.q) {
    std::size_t count = 0, start = 0;
    for (;;) {
      const std::size_t end = text.find('\n', start);
      std::string line = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
      if (!line.empty() && line.back() == '\r') line.pop_back();
      lines.push_back(std::move(line));
      ++count;
      if (end == std::string::npos) break;
      start = end + 1;
    }
    line_counts.push_back(count);
  }
  if (static_cast<std::int64_t>(lines.size()) > c.options.limits.max_sentences) {
    throw ApiError{413, "q: " + std::to_string(lines.size()) + " lines, more than this server's limit of " +
                            std::to_string(c.options.limits.max_sentences) + " per request"};
  }
  decode::SearchOptions search = c.options.search;
  search.nbest = 1;
  const std::vector<decode::Translation> done = translate(c, model, lines, search);
  std::vector<std::string> texts;
  std::size_t at = 0;
  for (const std::size_t count : line_counts) {
    std::string text;
    for (std::size_t i = 0; i < count; ++i, ++at) text += (i > 0 ? "\n" : "") + done[at].nbest.front().text;
    texts.push_back(std::move(text));
  }
  ordered_json answer;
  if (r.list) {
    answer["translatedText"] = texts;
  } else {
    answer["translatedText"] = texts.front();
  }
  return answer.dump(-1, ' ', false, ordered_json::error_handler_t::replace);
}

std::string languages(const Context& c) {
  ordered_json list = ordered_json::array();
  for (const ServedModel& m : c.models) {
    if (m.source_language.empty()) continue;
    bool merged = false;
    for (auto& entry : list) {
      if (entry["code"] == m.source_language) {
        entry["targets"].push_back(m.target_language);
        merged = true;
      }
    }
    if (!merged) {
      list.push_back(
          {{"code", m.source_language}, {"name", language_name(m.source_language)}, {"targets", {m.target_language}}});
    }
  }
  return list.dump();
}

std::string health(const Context& c) {
  ordered_json models = ordered_json::array();
  for (const ServedModel& m : c.models) models.push_back(m.name);
  return ordered_json{{"status", "ok"}, {"models", models}, {"queued_sentences", c.queued()}}.dump();
}

// Runs `handler` for an endpoint: its answer, or the error's status and {"error": message};
// counted and logged.
void answer(Context& c, const std::string& endpoint, const httplib::Request& req, httplib::Response& res,
            const std::function<std::string()>& handler) {
  const Clock::time_point start = Clock::now();
  try {
    res.set_content(handler(), kJson);
    res.status = 200;
  } catch (const ApiError& e) {
    res.status = e.status;
    if (e.status == 503) res.set_header("Retry-After", "1");
    res.set_content(error_body(e.message), kJson);
  } catch (const std::exception& e) {
    res.status = 500;
    res.set_content(error_body(e.what()), kJson);
    spdlog::error("serve: {} {}: {}", req.method, endpoint, e.what());
  }
  const double seconds = seconds_since(start);
  c.metrics.request(endpoint, res.status, seconds);
  spdlog::debug("serve: {} {} {} from {} in {:.1f} ms", req.method, endpoint, res.status, req.remote_addr,
                seconds * 1e3);
}

}  // namespace

void run_server(std::vector<ServedModel>& models, const ServerOptions& options, const std::atomic<int>* stop,
                const std::function<void(int port)>& on_listening) {
  if (models.empty()) throw Error("serve: no model");
  Metrics metrics;
  std::vector<BatchingTranslator::Model> decoders;
  for (const ServedModel& m : models) {
    decoders.push_back({&m.models.decoding(), m.models.vocabulary.get(), m.models.shortlist.get()});
  }
  BatchingTranslator batcher(decoders, options.translator, options.batching, [&metrics](const StepReport& step) {
    metrics.step(step.sentences, step.finished, step.target_tokens);
  });
  Context c{models, options, metrics, batcher};
  httplib::Server server;
  const int threads = options.http_threads;
  server.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<std::size_t>(threads)); };
  // A connection serves up to 1,000 requests (cpp-httplib 0.11's default is 5: clients that keep
  // their connections, load generators among them, reconnected every fifth request).
  server.set_keep_alive_max_count(1000);
  // Answers leave at once: with Nagle's algorithm a kept connection's answer (headers, then body)
  // waited for the client's delayed ACK, 40 ms a request (measured: a one-sentence request took
  // 44 ms on a kept connection, 9 ms on a new one).
  server.set_tcp_nodelay(true);
  server.set_payload_max_length(options.max_request_bytes);
  // SO_REUSEADDR (a restart binds at once after the last one's connections), but not cpp-httplib's
  // default SO_REUSEPORT too: with it a second server binds the same port and shares the traffic.
  // The socket is kept to raise its listen backlog once bound (below).
  socket_t listening = INVALID_SOCKET;
  server.set_socket_options([&listening](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, reinterpret_cast<const void*>(&yes), sizeof yes);
    listening = sock;
  });
  server.Post("/v1/translate", [&c](const httplib::Request& req, httplib::Response& res) {
    answer(c, "/v1/translate", req, res, [&] { return v1_translate(c, req); });
  });
  server.Post("/translate", [&c](const httplib::Request& req, httplib::Response& res) {
    answer(c, "/translate", req, res, [&] { return libre_translate(c, req); });
  });
  server.Get("/languages", [&c](const httplib::Request& req, httplib::Response& res) {
    answer(c, "/languages", req, res, [&] { return languages(c); });
  });
  server.Get("/health", [&c](const httplib::Request& req, httplib::Response& res) {
    answer(c, "/health", req, res, [&] { return health(c); });
  });
  server.Get("/metrics", [&c](const httplib::Request&, httplib::Response& res) {
    res.set_content(c.metrics.text(c.queued()), "text/plain; version=0.0.4");
  });
  // Any other path or method: 404, or 405 with Allow for an endpoint asked with another method, with a
  // JSON message; counted like the endpoints' answers (unknown paths as endpoint "other").
  server.set_error_handler([&c](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;  // an endpoint's own error answer (answer() counted it)
    // The endpoints registered above (method, path), for the 405s and the 404's message.
    static const std::pair<const char*, const char*> kEndpoints[] = {{"POST", "/v1/translate"},
                                                                     {"POST", "/translate"},
                                                                     {"GET", "/languages"},
                                                                     {"GET", "/health"},
                                                                     {"GET", "/metrics"}};
    const auto* endpoint = std::find_if(std::begin(kEndpoints), std::end(kEndpoints),
                                        [&](const auto& e) { return req.path == e.second; });
    const bool known = endpoint != std::end(kEndpoints);
    if (res.status == 404 && known) {
      res.status = 405;
      res.set_header("Allow", endpoint->first);
      res.set_content(error_body(req.method + " " + req.path + ": this endpoint takes " + endpoint->first), kJson);
      c.metrics.request(req.path, res.status, 0);
      return;
    }
    c.metrics.request(known ? req.path : "other", res.status, 0);
    if (res.status == 413) {
      const bool form = req.get_header_value("Content-Type").rfind("application/x-www-form-urlencoded", 0) == 0;
      res.set_content(error_body(form ? "a form-encoded request is limited to 8 KiB (cpp-httplib's limit): send "
                                        "JSON (Content-Type: application/json) for more"
                                      : "the request is larger than this server's limit (--max-request-bytes)"),
                      kJson);
    } else if (res.status == 404) {
      std::string list;
      for (const auto& [method, path] : kEndpoints) list += std::string(list.empty() ? "" : ", ") + method + " " + path;
      res.set_content(error_body("no such endpoint: " + req.method + " " + req.path + " (" + list + ")"), kJson);
    } else {
      res.set_content(error_body("HTTP " + std::to_string(res.status)), kJson);
    }
  });

  const int port = options.port == 0 ? server.bind_to_any_port(options.host) : options.port;
  if (options.port != 0 && !server.bind_to_port(options.host, options.port)) {
    throw Error("serve: cannot listen on " + options.host + ":" + std::to_string(options.port) +
                " (in use, or not an address of this machine)");
  }
  if (port < 0) throw Error("serve: cannot listen on " + options.host);
  // cpp-httplib listens with a backlog of 5 connections (Debian's library is built so): when more
  // clients connect at once than the accepting thread takes in (64 load generator connections to
  // a busy server), the kernel dropped the others' handshakes, and their TCP retried after 1, 3
  // and 7 s (measured: TcpExtListenDrops, and requests that took exactly that much longer). The
  // bound socket listens again with the system's limit (Linux takes a second listen() as a new
  // backlog).
  if (listening != INVALID_SOCKET && ::listen(listening, SOMAXCONN) != 0) {
    spdlog::warn("serve: could not raise the listen backlog ({})", std::strerror(errno));
  }
  std::atomic<bool> listener_done{false};
  std::thread listener([&] {
    server.listen_after_bind();
    listener_done = true;
  });
  while (!server.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  spdlog::info("serve: listening on http://{}:{} ({} model(s): the default {})", options.host, port, models.size(),
               models.front().name);
  if (on_listening) on_listening(port);
  // The watcher: the minute's summary, and the stop signal (stop accepting; the connections'
  // threads finish their requests, which this thread goes on translating below).
  std::thread watcher([&] {
    Clock::time_point minute = Clock::now();
    while (stop->load() == 0 && !listener_done) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      if (seconds_since(minute) >= 60) {
        spdlog::info("{}", metrics.minute_summary());
        minute = Clock::now();
      }
    }
    spdlog::info("serve: signal {}: no new connections; answering the requests in flight", stop->load());
    server.stop();
  });
  // This thread (the one that loaded the models) translates every batch.
  batcher.run([&] { return listener_done.load(); });
  watcher.join();
  listener.join();
  batcher.drain();
  spdlog::info("{}", metrics.minute_summary());
}

}  // namespace dragoman::serve
