// Cross-request batching for `dragoman serve`: requests submit their sentences (already encoded)
// for one of the served models with their search options; one thread (the caller of run(): the
// server's main thread, the one that loaded the models) takes the oldest request, waits at most
// `max_wait` for company (other requests for the same model with the same search options) until
// `batch_tokens` source tokens are queued, translates them together with one Translator call
// (sorted by length and batched there, decode/translator.h), and hands each request its own
// translations, in its order. With row-invariant products (translate --deterministic,
// kernels/cpu/gemm.h) a sentence's translation does not depend on the requests it was batched with.
//
// One thread computes, on its OpenMP threads: a second thread with a team of its own would double
// the process's OpenMP threads, and libgomp then stops spinning at its barriers (more threads than
// cores): every parallel loop would sleep and wake through the kernel (measured: serve at half of
// translate's speed on the same sentences, 16,000 context switches a second).
//
// The queue is bounded in sentences: a request that would exceed it is refused at once (QueueFull:
// the server answers 503 with Retry-After). A request whose client gave up (a timeout) is marked
// abandoned: its batch is skipped, or stopped between decoding batches, when all of its requests are.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <vector>

#include "decode/translator.h"

namespace dragoman::serve {

struct BatchingOptions {
  std::int64_t batch_tokens = 2048;          // source tokens a batch collects (at least one request)
  std::chrono::microseconds max_wait{5000};  // how long the oldest request waits for company
  std::int64_t max_queue_sentences = 10000;  // queued sentences beyond which requests are refused
};

struct QueueFull {};

struct TranslationJob {
  std::size_t model = 0;
  std::vector<std::vector<std::int32_t>> sources;
  SearchOptions search;
  std::promise<std::vector<Translation>> result;
  std::atomic<bool> abandoned{false};
  std::chrono::steady_clock::time_point queued;
  std::int64_t tokens = 0;  // source tokens
};

// What run() reports after each batch (metrics): sentences, target tokens of the 1-best
// translations, seconds the translation took.
using BatchObserver = std::function<void(std::int64_t sentences, std::int64_t target_tokens, double seconds)>;

class BatchingTranslator {
 public:
  struct Model {
    const DecodingModel* decoding;
    const Vocabulary* vocabulary;
  };
  // The models and vocabularies must outlive this. `base` gives the batch sizes of each Translator call.
  BatchingTranslator(std::vector<Model> models, TranslatorOptions base, BatchingOptions options,
                     BatchObserver observer = {});

  // Queues `sources` (token ids) to be translated by model `model` with `search`; throws QueueFull
  // when the queue has no room for them (or after drain()). The job's future gets the translations
  // (or the error).
  std::shared_ptr<TranslationJob> submit(std::size_t model, std::vector<std::vector<std::int32_t>> sources,
                                         const SearchOptions& search);
  // Translates queued requests on the calling thread until `finished()` is true (checked at least
  // every 50 ms) and nothing is queued.
  void run(const std::function<bool()>& finished);
  // Sentences queued and not started yet.
  std::int64_t queued_sentences() const;
  // From now on submit refuses requests; run() still finishes those queued.
  void drain();

 private:
  // The next batch: the oldest job and the queued jobs of the same model and search options, up to
  // batch_tokens source tokens. Called with the lock held and a job queued.
  std::vector<std::shared_ptr<TranslationJob>> take_batch();
  void translate(const std::vector<std::shared_ptr<TranslationJob>>& batch);

  std::vector<Model> models_;
  TranslatorOptions base_;
  BatchingOptions options_;
  BatchObserver observer_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::shared_ptr<TranslationJob>> queue_;
  std::int64_t queued_sentences_ = 0;
  bool draining_ = false;
};

// Whether two searches can share a batch (every option equal).
bool same_search(const SearchOptions& a, const SearchOptions& b);

}  // namespace dragoman::serve
