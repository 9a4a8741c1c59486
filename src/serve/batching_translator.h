// Cross-request batching for `dragoman serve`, continuous: requests submit their sentences
// (already encoded) for one of the served models with their search options, and one thread (the
// caller of run(): the server's main thread, the one that loaded the models) runs one beam search
// (decode/beam_search.h BeamSearch) that sentences join between decoding steps and leave as soon
// as they are finished. Requests waiting when the search has room join it at its next step (or
// in groups: join_sentences of them, or any once the oldest has waited join_wait), instead of
// waiting for a whole batch to finish; the search holds at most `batch_sentences`
// sentences and `batch_tokens` source tokens (translate's batch limits). An idle server waits at
// most `max_wait` for company before it starts a search (or until `batch_tokens` are queued).
// A request's sentences join longest first; its answer goes back when all of them are finished,
// in its order. With row-invariant products (translate --deterministic, kernels/gemm.h) a
// sentence's translation does not depend on what it was searched with: it is translate's.
//
// Requests share a search only with requests of the same model and search options; others wait
// until the search empties. The oldest request is never passed over for longer than max_wait:
// once a request of other options has waited that long, no more sentences join and the search
// is left to finish, then the next one starts with the oldest request's options.
//
// One thread computes, on its OpenMP threads: a second thread with a team of its own would double
// the process's OpenMP threads, and libgomp then stops spinning at its barriers (more threads than
// cores): every parallel loop would sleep and wake through the kernel (measured: serve at half of
// translate's speed on the same sentences, 16,000 context switches a second).
//
// The queue is bounded in the sentences of requests not started yet (a long request in progress,
// whose sentences join the search as it has room, no longer counts): a request that would exceed
// it is refused at once (QueueFull: the server answers 503 with Retry-After). A request whose client gave up (a
// timeout) is marked abandoned: its sentences are dropped from the queue and from the search.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "decode/translator.h"

namespace dragoman::serve {

struct BatchingOptions {
  std::chrono::microseconds max_wait{5000};  // how long the oldest request waits for company
  // A running search takes new sentences once this many wait, or the oldest has waited
  // join_wait (each joining is an encoder pass and a copy of the decoder state). On the CPU
  // joining at every step was as fast as joining by 8, 16 or 32 (bench/search_bench.cpp), with
  // the shortest waits: hence 1.
  std::int64_t join_sentences = 1;
  std::chrono::microseconds join_wait{60000};
  std::int64_t max_queue_sentences = 10000;  // queued sentences beyond which requests are refused
};

struct QueueFull {};

struct TranslationJob {
  std::size_t model = 0;
  std::vector<std::vector<std::int32_t>> sources;
  std::vector<decode::TargetGuide> guides;  // none, or one per source
  decode::SearchOptions search;
  std::promise<std::vector<decode::Translation>> result;
  std::atomic<bool> abandoned{false};
  std::chrono::steady_clock::time_point queued;
  std::int64_t tokens = 0;  // source tokens

  // The translating thread's: the sources' order of joining (longest first), how many joined,
  // the translations so far and how many are missing.
  std::vector<std::size_t> order;
  std::size_t joined = 0;
  std::vector<decode::Translation> translations;
  std::size_t missing = 0;
  bool answered = false;
};

// What run() reports after each decoding step (metrics): the sentences it searched, the sentences
// it finished and their 1-best translations' target tokens, and the seconds it took.
struct StepReport {
  std::int64_t sentences = 0;
  std::int64_t finished = 0;
  std::int64_t target_tokens = 0;
  double seconds = 0;
};
using StepObserver = std::function<void(const StepReport&)>;

class BatchingTranslator {
 public:
  struct Model {
    const decode::DecodingModel* decoding;
    const text::Vocabulary* vocabulary;
    const decode::Shortlist* shortlist = nullptr;  // its searches' (SearchOptions::shortlist), or none
  };
  // The models and vocabularies must outlive this. `limits` gives the search's batch_tokens and
  // batch_sentences (its search options are each request's).
  BatchingTranslator(std::vector<Model> models, decode::TranslatorOptions limits, BatchingOptions options,
                     StepObserver observer = {});
  ~BatchingTranslator();

  // Queues `sources` (token ids) to be translated by model `model` with `search` (and `guides`:
  // none, or one per source, checked by the caller to fit the model); throws QueueFull when the
  // queue has no room for them (or after drain()). The job's future gets the translations (or the
  // error).
  std::shared_ptr<TranslationJob> submit(std::size_t model, std::vector<std::vector<std::int32_t>> sources,
                                         const decode::SearchOptions& search,
                                         std::vector<decode::TargetGuide> guides = {});
  // Translates queued requests on the calling thread until `finished()` is true (checked at least
  // every 50 ms) and nothing is queued or searched.
  void run(const std::function<bool()>& finished);
  // Sentences of the requests queued and not started yet.
  std::int64_t queued_sentences() const;
  // From now on submit refuses requests; run() still finishes those queued.
  void drain();

 private:
  struct Joining {
    std::vector<std::vector<std::int32_t>> sources;
    std::vector<std::int64_t> ids;
    std::vector<decode::TargetGuide> guides;  // one per source (empty ones for unguided requests)
    bool guided = false;
  };
  // Moves queued sentences of the search's model and options into `joining` while the search has
  // room (the lock held); answers the requests that were abandoned or have nothing to search.
  void take_queued(Joining& joining);
  // Whether the search may take more: not when an older request of other options waited max_wait.
  bool may_join() const;
  // One step of the search, its finished sentences given to their requests.
  void step();
  void answer(TranslationJob& job);
  void fail(TranslationJob& job, std::exception_ptr error);

  std::vector<Model> models_;
  decode::TranslatorOptions limits_;
  BatchingOptions options_;
  StepObserver observer_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::shared_ptr<TranslationJob>> queue_;
  std::int64_t queued_sentences_ = 0;
  bool draining_ = false;

  // The translating thread's: the running search, its model, and the request and source of
  // each sentence in it (by the search's ids).
  std::unique_ptr<decode::BeamSearch> search_;
  std::size_t search_model_ = 0;
  std::map<std::int64_t, std::pair<std::shared_ptr<TranslationJob>, std::size_t>> searching_;
  std::int64_t next_id_ = 0;
};

// Whether two searches can share a batch (every option equal).
bool same_search(const decode::SearchOptions& a, const decode::SearchOptions& b);

}  // namespace dragoman::serve
