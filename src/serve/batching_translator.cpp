// Cross-request batching (see batching_translator.h).
#include "serve/batching_translator.h"

#include <spdlog/spdlog.h>

#include <exception>

#include "core/threads.h"
#include "core/timing.h"

namespace dragoman::serve {
namespace {

// Thrown between decoding batches when every request of the batch was abandoned.
struct Abandoned {};

}  // namespace

bool same_search(const SearchOptions& a, const SearchOptions& b) {
  return a.beam == b.beam && a.length_penalty == b.length_penalty && a.alpha == b.alpha &&
         a.word_reward == b.word_reward && a.max_length_a == b.max_length_a && a.max_length_b == b.max_length_b &&
         a.nbest == b.nbest && a.record_attention == b.record_attention && a.attention.layer == b.attention.layer &&
         a.attention.head == b.attention.head;
}

BatchingTranslator::BatchingTranslator(const DecodingModel& model, const Vocabulary& vocabulary, TranslatorOptions base,
                                       BatchingOptions options, BatchObserver observer)
    : model_(model),
      vocabulary_(vocabulary),
      base_(std::move(base)),
      options_(options),
      observer_(std::move(observer)),
      worker_([this] { work(); }) {}

BatchingTranslator::~BatchingTranslator() {
  drain();
  if (worker_.joinable()) worker_.join();
}

void BatchingTranslator::drain() {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
}

void BatchingTranslator::set_observer(BatchObserver observer) {
  const std::lock_guard<std::mutex> lock(mutex_);
  observer_ = std::move(observer);
}

std::int64_t BatchingTranslator::queued_sentences() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return queued_sentences_;
}

std::shared_ptr<TranslationJob> BatchingTranslator::submit(std::vector<std::vector<std::int32_t>> sources,
                                                           const SearchOptions& search) {
  auto job = std::make_shared<TranslationJob>();
  for (const auto& s : sources) job->tokens += static_cast<std::int64_t>(s.size());
  job->sources = std::move(sources);
  job->search = search;
  job->queued = std::chrono::steady_clock::now();
  const auto count = static_cast<std::int64_t>(job->sources.size());
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_ || (queued_sentences_ > 0 && queued_sentences_ + count > options_.max_queue_sentences)) {
      throw QueueFull{};
    }
    queue_.push_back(job);
    queued_sentences_ += count;
  }
  wake_.notify_all();
  return job;
}

std::vector<std::shared_ptr<TranslationJob>> BatchingTranslator::take_batch() {
  std::vector<std::shared_ptr<TranslationJob>> batch;
  std::int64_t tokens = 0;
  for (auto it = queue_.begin(); it != queue_.end();) {
    const bool first = batch.empty();
    if (!first &&
        (!same_search((*it)->search, batch.front()->search) || tokens + (*it)->tokens > options_.batch_tokens)) {
      ++it;
      continue;
    }
    tokens += (*it)->tokens;
    queued_sentences_ -= static_cast<std::int64_t>((*it)->sources.size());
    batch.push_back(*it);
    it = queue_.erase(it);
    if (tokens >= options_.batch_tokens) break;
  }
  return batch;
}

void BatchingTranslator::work() {
  use_compute_threads_here(options_.threads);
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, nothing left
    // Wait for company: until the oldest request has waited max_wait, or a batch's worth of
    // tokens is queued (or the server stops: then no more will come).
    const auto deadline = queue_.front()->queued + options_.max_wait;
    wake_.wait_until(lock, deadline, [&] {
      if (stopping_) return true;
      std::int64_t tokens = 0;
      for (const auto& job : queue_) {
        if (same_search(job->search, queue_.front()->search)) tokens += job->tokens;
      }
      return tokens >= options_.batch_tokens;
    });
    std::vector<std::shared_ptr<TranslationJob>> batch = take_batch();
    lock.unlock();
    std::vector<std::vector<std::int32_t>> sources;
    std::vector<std::size_t> owners;  // the job of each sentence
    for (std::size_t j = 0; j < batch.size(); ++j) {
      if (batch[j]->abandoned) continue;
      for (const auto& s : batch[j]->sources) {
        sources.push_back(s);
        owners.push_back(j);
      }
    }
    try {
      TranslatorOptions options = base_;
      options.search = batch.front()->search;
      const Clock::time_point start = Clock::now();
      // Between its decoding batches the translation stops when every request of it was abandoned
      // (their clients timed out): nobody would read the rest.
      const auto all_abandoned = [&batch] {
        for (const auto& job : batch) {
          if (!job->abandoned) return false;
        }
        return true;
      };
      std::vector<Translation> done;
      if (!sources.empty()) {
        done = Translator(model_, vocabulary_, options)
                   .translate_ids_in_batches(std::move(sources), [&](const std::vector<Translation>&, std::int64_t) {
                     if (all_abandoned()) throw Abandoned{};
                   });
      }
      std::vector<std::vector<Translation>> per_job(batch.size());
      std::int64_t target_tokens = 0;
      for (std::size_t i = 0; i < done.size(); ++i) {
        target_tokens += static_cast<std::int64_t>(done[i].nbest.front().tokens.size());
        per_job[owners[i]].push_back(done[i]);
      }
      for (std::size_t j = 0; j < batch.size(); ++j) {
        if (!batch[j]->abandoned) batch[j]->result.set_value(std::move(per_job[j]));
      }
      BatchObserver observer;
      {
        const std::lock_guard<std::mutex> observer_lock(mutex_);
        observer = observer_;
      }
      if (observer) observer(static_cast<std::int64_t>(done.size()), target_tokens, seconds_since(start));
    } catch (const Abandoned&) {
      spdlog::debug("serve: a batch of {} request(s) stopped: their clients gave up", batch.size());
    } catch (...) {
      spdlog::error("serve: a batch of {} request(s) failed", batch.size());
      for (const auto& job : batch) {
        if (!job->abandoned) job->result.set_exception(std::current_exception());
      }
    }
    lock.lock();
  }
}

}  // namespace dragoman::serve
