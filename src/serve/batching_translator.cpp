// Continuous cross-request batching (see batching_translator.h).
#include "serve/batching_translator.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <exception>

#include "base/error.h"
#include "base/timing.h"

namespace dragoman::serve {

bool same_search(const decode::SearchOptions& a, const decode::SearchOptions& b) {
  return a.beam == b.beam && a.length_penalty == b.length_penalty && a.alpha == b.alpha &&
         a.word_reward == b.word_reward && a.max_length_a == b.max_length_a && a.max_length_b == b.max_length_b &&
         a.nbest == b.nbest && a.record_attention == b.record_attention && a.attention.layer == b.attention.layer &&
         a.attention.head == b.attention.head && a.sampling.enabled == b.sampling.enabled &&
         a.sampling.temperature == b.sampling.temperature && a.sampling.top_k == b.sampling.top_k &&
         a.sampling.top_p == b.sampling.top_p && a.sampling.seed == b.sampling.seed;
}

namespace {

// Whether two requests can share a search: the same model and search options.
bool same_batch(const TranslationJob& a, std::size_t model, const decode::SearchOptions& search) {
  return a.model == model && same_search(a.search, search);
}

}  // namespace

BatchingTranslator::BatchingTranslator(std::vector<Model> models, decode::TranslatorOptions limits,
                                       BatchingOptions options, StepObserver observer)
    : models_(std::move(models)), limits_(std::move(limits)), options_(options), observer_(std::move(observer)) {
  if (models_.empty()) throw Error("serve: no model to translate with");
  if (limits_.batch_tokens < 1 || limits_.batch_sentences < 1) {
    throw Error("serve: the batch sizes in tokens and sentences must be >= 1");
  }
}

BatchingTranslator::~BatchingTranslator() = default;

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
                                                           const decode::SearchOptions& search,
                                                           std::vector<decode::TargetGuide> guides) {
  if (model >= models_.size()) throw Error("serve: model " + std::to_string(model) + " out of range");
  if (!guides.empty() && guides.size() != sources.size()) throw Error("serve: one guide per source");
  auto job = std::make_shared<TranslationJob>();
  job->model = model;
  job->search = search;
  job->queued = std::chrono::steady_clock::now();
  // As translate: a source beyond the model's positions is cut to them, an empty one translates to
  // an empty line without a search.
  const std::int64_t max_positions = models_[model].decoding->config().max_positions;
  for (std::size_t i = 0; i < sources.size(); ++i) {
    job->translations.push_back(decode::prepare_source(sources[i], max_positions));
    job->tokens += job->translations.back().source_tokens;
    if (!sources[i].empty()) job->order.push_back(i);
  }
  job->sources = std::move(sources);
  job->guides = std::move(guides);
  std::stable_sort(job->order.begin(), job->order.end(),
                   [&](std::size_t a, std::size_t b) { return job->sources[a].size() > job->sources[b].size(); });
  job->missing = job->order.size();
  const auto count = static_cast<std::int64_t>(job->order.size());
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (draining_ || (queued_sentences_ > 0 && queued_sentences_ + count > options_.max_queue_sentences)) {
      throw QueueFull{};
    }
    if (count > 0) {
      queue_.push_back(job);
      queued_sentences_ += count;
    }
  }
  if (count == 0) {
    answer(*job);
    return job;
  }
  wake_.notify_all();
  return job;
}

void BatchingTranslator::answer(TranslationJob& job) {
  if (job.answered) return;
  job.answered = true;
  job.result.set_value(std::move(job.translations));
}

void BatchingTranslator::fail(TranslationJob& job, std::exception_ptr error) {
  if (job.answered) return;
  job.answered = true;
  job.result.set_exception(std::move(error));
}

bool BatchingTranslator::may_join() const {
  if (queue_.empty()) return false;
  const TranslationJob& oldest = *queue_.front();
  if (same_batch(oldest, search_model_, search_->options())) return true;
  return std::chrono::steady_clock::now() - oldest.queued < options_.max_wait;
}

void BatchingTranslator::take_queued(Joining& joining) {
  // Abandoned requests leave the queue, whatever their options, and so do those answered already
  // (with the error of a failed search that had some of their sentences).
  for (auto it = queue_.begin(); it != queue_.end();) {
    TranslationJob& job = **it;
    if (!job.abandoned && !job.answered) {
      ++it;
      continue;
    }
    if (job.joined == 0) queued_sentences_ -= static_cast<std::int64_t>(job.order.size());
    fail(job, std::make_exception_ptr(Error("abandoned")));
    it = queue_.erase(it);
  }
  if (!may_join()) return;
  std::int64_t sentences = search_->sentences(), tokens = search_->source_tokens();
  // A running search takes new sentences in groups (each joining is an encoder pass and a copy
  // of the decoder state): once join_sentences of them wait, or the oldest has waited join_wait.
  if (sentences > 0) {
    std::int64_t waiting = 0;
    auto oldest = std::chrono::steady_clock::now();
    for (const auto& job : queue_) {
      if (!same_batch(*job, search_model_, search_->options())) continue;
      waiting += static_cast<std::int64_t>(job->order.size() - job->joined);
      oldest = std::min(oldest, job->queued);
    }
    if (waiting < options_.join_sentences && std::chrono::steady_clock::now() - oldest < options_.join_wait) return;
  }
  for (auto it = queue_.begin(); it != queue_.end();) {
    TranslationJob& job = **it;
    if (!same_batch(job, search_model_, search_->options())) {
      ++it;
      continue;
    }
    for (; job.joined < job.order.size(); ++job.joined) {
      const std::size_t index = job.order[job.joined];
      const auto length = static_cast<std::int64_t>(job.sources[index].size());
      const bool room =
          sentences == 0 || (sentences < limits_.batch_sentences && tokens + length <= limits_.batch_tokens);
      if (!room) break;
      // A request is queued until its first sentence joins (the queue's bound counts requests
      // waiting to start, not the sentences of one in progress).
      if (job.joined == 0) queued_sentences_ -= static_cast<std::int64_t>(job.order.size());
      const std::int64_t id = next_id_++;
      searching_[id] = {*it, index};
      joining.sources.push_back(job.sources[index]);
      joining.ids.push_back(id);
      joining.guides.push_back(job.guides.empty() ? decode::TargetGuide() : job.guides[index]);
      joining.guided = joining.guided || !job.guides.empty();
      ++sentences;
      tokens += length;
    }
    if (job.joined < job.order.size()) return;  // the search is full
    it = queue_.erase(it);
  }
}

void BatchingTranslator::step() {
  // Requests whose clients gave up leave the search.
  bool abandoned = false;
  for (const auto& entry : searching_) abandoned = abandoned || entry.second.first->abandoned;
  if (abandoned) {
    search_->remove([this](std::int64_t id) { return searching_.at(id).first->abandoned.load(); });
    for (auto it = searching_.begin(); it != searching_.end();) {
      if (!it->second.first->abandoned) {
        ++it;
        continue;
      }
      fail(*it->second.first, std::make_exception_ptr(Error("abandoned")));
      it = searching_.erase(it);
    }
    spdlog::debug("serve: sentences of abandoned requests left the search");
  }
  if (search_->empty()) return;
  const Clock::time_point start = Clock::now();
  StepReport report;
  report.sentences = search_->sentences();
  const text::Vocabulary& vocabulary = *models_[search_model_].vocabulary;
  for (auto& [id, hypotheses] : search_->step()) {
    const auto it = searching_.find(id);
    TranslationJob& job = *it->second.first;
    decode::Translation& translation = job.translations[it->second.second];
    translation.nbest = translated(vocabulary, hypotheses);
    ++report.finished;
    report.target_tokens += static_cast<std::int64_t>(translation.nbest.front().tokens.size());
    searching_.erase(it);
    if (--job.missing == 0) answer(job);
  }
  report.seconds = seconds_since(start);
  if (observer_) observer_(report);
}

void BatchingTranslator::run(const std::function<bool()>& finished) {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    if (!search_ || search_->empty()) {
      search_.reset();
      if (queue_.empty()) {
        lock.unlock();
        const bool done = finished();
        lock.lock();
        if (done && queue_.empty()) return;
        wake_.wait_for(lock, std::chrono::milliseconds(50), [&] { return !queue_.empty(); });
        continue;
      }
      // Idle: wait for company, until the oldest request has waited max_wait, or a batch's worth
      // of tokens is queued for its model and options (or the server drains: no more will come).
      const auto deadline = queue_.front()->queued + options_.max_wait;
      wake_.wait_until(lock, deadline, [&] {
        if (draining_) return true;
        std::int64_t tokens = 0;
        const TranslationJob& oldest = *queue_.front();
        for (const auto& job : queue_) {
          if (same_batch(*job, oldest.model, oldest.search)) tokens += job->tokens;
        }
        return tokens >= limits_.batch_tokens;
      });
      const std::shared_ptr<TranslationJob> oldest = queue_.front();
      try {
        decode::SearchOptions search = oldest->search;
        search.shortlist = models_[oldest->model].shortlist;
        search_ = std::make_unique<decode::BeamSearch>(*models_[oldest->model].decoding, search);
        search_model_ = oldest->model;
      } catch (...) {  // options no search takes: this request's error
        queue_.pop_front();
        if (oldest->joined == 0) queued_sentences_ -= static_cast<std::int64_t>(oldest->order.size());
        fail(*oldest, std::current_exception());
        continue;
      }
    }
    Joining joining;
    take_queued(joining);
    lock.unlock();
    try {
      if (!joining.sources.empty()) {
        search_->add(joining.sources, joining.ids, joining.guided ? &joining.guides : nullptr);
      }
      step();
    } catch (...) {
      spdlog::error("serve: a search of {} sentence(s) failed", searching_.size());
      for (auto& entry : searching_) fail(*entry.second.first, std::current_exception());
      searching_.clear();
      search_.reset();
    }
    lock.lock();
  }
}

}  // namespace dragoman::serve
