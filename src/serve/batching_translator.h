// Cross-request batching for `dragoman serve`: requests submit their sentences (already encoded)
// with their search options; one worker thread per model takes the oldest request, waits at most
// `max_wait` for company (other requests with the same search options) until `batch_tokens` source
// tokens are queued, translates them together with one Translator call (sorted by length and
// batched there, decode/translator.h), and hands each request its own translations, in its order.
// With row-invariant products (translate --deterministic, kernels/cpu/gemm.h) a sentence's
// translation does not depend on the requests it was batched with.
//
// The queue is bounded in sentences: a request that would exceed it is refused at once (QueueFull:
// the server answers 503 with Retry-After). A request whose client gave up (a timeout) is marked
// abandoned: the worker skips it if it has not started it yet.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "decode/translator.h"

namespace dragoman::serve {

struct BatchingOptions {
  std::int64_t batch_tokens = 2048;          // source tokens a batch collects before it starts (at least one request)
  std::chrono::microseconds max_wait{5000};  // how long the oldest request waits for company
  std::int64_t max_queue_sentences = 10000;  // queued sentences beyond which requests are refused
  int threads = 1;                           // compute threads of the worker
};

struct QueueFull {};

struct TranslationJob {
  std::vector<std::vector<std::int32_t>> sources;
  SearchOptions search;
  std::promise<std::vector<Translation>> result;
  std::atomic<bool> abandoned{false};
  std::chrono::steady_clock::time_point queued;
  std::int64_t tokens = 0;  // source tokens
};

// What the worker reports after each batch (metrics): sentences, target tokens of the 1-best
// translations, seconds the translation took.
using BatchObserver = std::function<void(std::int64_t sentences, std::int64_t target_tokens, double seconds)>;

class BatchingTranslator {
 public:
  // The model and vocabulary must outlive this. `base` gives the batch sizes of each Translator call.
  BatchingTranslator(const DecodingModel& model, const Vocabulary& vocabulary, TranslatorOptions base,
                     BatchingOptions options, BatchObserver observer = {});
  // Finishes every queued request, then stops the worker.
  ~BatchingTranslator();
  BatchingTranslator(const BatchingTranslator&) = delete;
  BatchingTranslator& operator=(const BatchingTranslator&) = delete;

  // Queues `sources` (token ids) to be translated with `search`; throws QueueFull when the queue
  // has no room for them. The job's future gets the translations (or the worker's error).
  std::shared_ptr<TranslationJob> submit(std::vector<std::vector<std::int32_t>> sources, const SearchOptions& search);
  // Sentences queued and not started yet.
  std::int64_t queued_sentences() const;
  // Stops taking requests (submit throws QueueFull) and finishes those queued.
  void drain();

  // Replaces the observer (before requests arrive).
  void set_observer(BatchObserver observer);

  const DecodingModel& model() const { return model_; }
  const Vocabulary& vocabulary() const { return vocabulary_; }

 private:
  void work();
  // Takes the next batch: the oldest job and the queued jobs of the same search options, up to
  // batch_tokens source tokens. Called with the lock held and a job queued.
  std::vector<std::shared_ptr<TranslationJob>> take_batch();

  const DecodingModel& model_;
  const Vocabulary& vocabulary_;
  TranslatorOptions base_;
  BatchingOptions options_;
  BatchObserver observer_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::shared_ptr<TranslationJob>> queue_;
  std::int64_t queued_sentences_ = 0;
  bool stopping_ = false;
  std::thread worker_;
};

// Whether two searches can share a batch (every option equal).
bool same_search(const SearchOptions& a, const SearchOptions& b);

}  // namespace dragoman::serve
