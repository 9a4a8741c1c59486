// Cross-request batching (see batching_translator.h).
#include "serve/batching_translator.h"

#include <spdlog/spdlog.h>

#include <exception>

#include "core/error.h"
#include "core/timing.h"

namespace dragoman::serve {
namespace {

// Thrown between decoding batches when every request of the batch was abandoned.
struct Abandoned {};

bool same_batch(const TranslationJob& a, const TranslationJob& b) {
  return a.model == b.model && same_search(a.search, b.search);
}

}  // namespace

bool same_search(const SearchOptions& a, const SearchOptions& b) {
  return a.beam == b.beam && a.length_penalty == b.length_penalty && a.alpha == b.alpha &&
         a.word_reward == b.word_reward && a.max_length_a == b.max_length_a && a.max_length_b == b.max_length_b &&
         a.nbest == b.nbest && a.record_attention == b.record_attention && a.attention.layer == b.attention.layer &&
         a.attention.head == b.attention.head;
}

BatchingTranslator::BatchingTranslator(std::vector<Model> models, TranslatorOptions base, BatchingOptions options,
                                       BatchObserver observer)
    : models_(std::move(models)), base_(std::move(base)), options_(options), observer_(std::move(observer)) {
  if (models_.empty()) throw Error("serve: no model to translate with");
}

void BatchingTranslator::drain() {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    draining_ = true;
  }
  wake_.notify_all();
}

std::int64_t BatchingTranslator::queued_sentences() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return queued_sentences_;
}

std::shared_ptr<TranslationJob> BatchingTranslator::submit(std::size_t model,
                                                           std::vector<std::vector<std::int32_t>> sources,
                                                           const SearchOptions& search) {
  if (model >= models_.size()) throw Error("serve: model " + std::to_string(model) + " out of range");
  auto job = std::make_shared<TranslationJob>();
  job->model = model;
  for (const auto& s : sources) job->tokens += static_cast<std::int64_t>(s.size());
  job->sources = std::move(sources);
  job->search = search;
  job->queued = std::chrono::steady_clock::now();
  const auto count = static_cast<std::int64_t>(job->sources.size());
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (draining_ || (queued_sentences_ > 0 && queued_sentences_ + count > options_.max_queue_sentences)) {
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
    if (!batch.empty() && (!same_batch(**it, *batch.front()) || tokens + (*it)->tokens > options_.batch_tokens)) {
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

void BatchingTranslator::run(const std::function<bool()>& finished) {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    if (queue_.empty()) {
      lock.unlock();
      const bool done = finished();
      lock.lock();
      if (done && queue_.empty()) return;
      wake_.wait_for(lock, std::chrono::milliseconds(50), [&] { return !queue_.empty(); });
      continue;
    }
    // Wait for company: until the oldest request has waited max_wait, or a batch's worth of
    // tokens is queued for its model and options (or the server drains: then no more will come).
    const auto deadline = queue_.front()->queued + options_.max_wait;
    wake_.wait_until(lock, deadline, [&] {
      if (draining_) return true;
      std::int64_t tokens = 0;
      for (const auto& job : queue_) {
        if (same_batch(*job, *queue_.front())) tokens += job->tokens;
      }
      return tokens >= options_.batch_tokens;
    });
    const std::vector<std::shared_ptr<TranslationJob>> batch = take_batch();
    lock.unlock();
    translate(batch);
    lock.lock();
  }
}

void BatchingTranslator::translate(const std::vector<std::shared_ptr<TranslationJob>>& batch) {
  std::vector<std::vector<std::int32_t>> sources;
  std::vector<std::size_t> owners;  // the job of each sentence
  for (std::size_t j = 0; j < batch.size(); ++j) {
    if (batch[j]->abandoned) continue;
    for (const auto& s : batch[j]->sources) {
      sources.push_back(s);
      owners.push_back(j);
    }
  }
  // Between its decoding batches the translation stops when every request of it was abandoned
  // (their clients timed out): nobody would read the rest.
  const auto all_abandoned = [&batch] {
    for (const auto& job : batch) {
      if (!job->abandoned) return false;
    }
    return true;
  };
  try {
    TranslatorOptions options = base_;
    options.search = batch.front()->search;
    const Model& model = models_[batch.front()->model];
    const Clock::time_point start = Clock::now();
    std::vector<Translation> done;
    if (!sources.empty()) {
      done = Translator(*model.decoding, *model.vocabulary, options)
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
    for (std::size_t j = 0; j < batch.size(); ++j) batch[j]->result.set_value(std::move(per_job[j]));
    const double seconds = seconds_since(start);
    spdlog::debug("serve: a batch of {} sentence(s) from {} request(s) in {:.1f} ms", done.size(), batch.size(),
                  seconds * 1e3);
    if (observer_) observer_(static_cast<std::int64_t>(done.size()), target_tokens, seconds);
  } catch (const Abandoned&) {
    spdlog::debug("serve: a batch of {} request(s) stopped: their clients gave up", batch.size());
    for (const auto& job : batch) job->result.set_exception(std::make_exception_ptr(Error("abandoned")));
  } catch (...) {
    spdlog::error("serve: a batch of {} request(s) failed", batch.size());
    for (const auto& job : batch) job->result.set_exception(std::current_exception());
  }
}

}  // namespace dragoman::serve
