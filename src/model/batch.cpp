// Batches (see batch.h).
#include "model/batch.h"

#include <algorithm>

#include "base/error.h"

namespace dragoman::model {

namespace {

std::int64_t sum_of_lengths(const Tensor& lengths) {
  std::int64_t n = 0;
  for (const std::int32_t len : lengths.to_vector<std::int32_t>()) n += len;
  return n;
}

}  // namespace

std::int64_t Batch::target_tokens() const { return tokens >= 0 ? tokens : sum_of_lengths(tgt_lengths); }

Batch Batch::from_sentences(const std::vector<std::vector<std::int32_t>>& src,
                            const std::vector<std::vector<std::int32_t>>& tgt, const ModelConfig& config) {
  if (src.size() != tgt.size() || src.empty()) {
    throw Error("batch: " + std::to_string(src.size()) + " source and " + std::to_string(tgt.size()) +
                " target sentences; expected the same non-zero number");
  }
  const auto b = static_cast<std::int64_t>(src.size());
  std::int64_t s = 0, t = 0;
  for (std::size_t i = 0; i < src.size(); ++i) {
    if (src[i].empty()) throw Error("batch: source sentence " + std::to_string(i) + " is empty");
    s = std::max<std::int64_t>(s, static_cast<std::int64_t>(src[i].size()));
    t = std::max<std::int64_t>(t, static_cast<std::int64_t>(tgt[i].size()) + 1);
  }
  const std::int32_t pad = config.pad_id;
  std::vector<std::int32_t> src_ids(static_cast<std::size_t>(b * s), pad), in(static_cast<std::size_t>(b * t), pad),
      out(static_cast<std::size_t>(b * t), pad), src_len, tgt_len;
  for (std::int64_t i = 0; i < b; ++i) {
    const auto& x = src[static_cast<std::size_t>(i)];
    const auto& y = tgt[static_cast<std::size_t>(i)];
    std::copy(x.begin(), x.end(), src_ids.begin() + i * s);
    in[static_cast<std::size_t>(i * t)] = config.bos_id;
    std::copy(y.begin(), y.end(), in.begin() + i * t + 1);
    std::copy(y.begin(), y.end(), out.begin() + i * t);
    out[static_cast<std::size_t>(i * t) + y.size()] = config.eos_id;
    src_len.push_back(static_cast<std::int32_t>(x.size()));
    tgt_len.push_back(static_cast<std::int32_t>(y.size() + 1));
  }
  Batch batch{Tensor::from_vector(src_ids, {b, s}), Tensor::from_vector(src_len, {b}), Tensor::from_vector(in, {b, t}),
              Tensor::from_vector(out, {b, t}), Tensor::from_vector(tgt_len, {b})};
  batch.tokens = batch.validate(config);
  return batch;
}

std::int64_t Batch::validate(const ModelConfig& config) const {
  const auto fail = [](const std::string& what) { throw Error("invalid batch: " + what); };
  for (const Tensor* t : {&src, &src_lengths, &tgt_in, &tgt_out, &tgt_lengths}) {
    if (!t->defined() || t->dtype() != DType::kI32 || !t->device().is_cpu() || !t->is_contiguous()) {
      fail("ids and lengths must be contiguous i32 CPU tensors");
    }
  }
  if (src.rank() != 2 || tgt_in.rank() != 2 || tgt_in.shape() != tgt_out.shape() || src.dim(0) != tgt_in.dim(0) ||
      src_lengths.shape() != Shape{src.dim(0)} || tgt_lengths.shape() != Shape{src.dim(0)}) {
    fail("shapes do not agree: src " + src.describe() + ", tgt_in " + tgt_in.describe() + ", tgt_out " +
         tgt_out.describe());
  }
  // A target input starts with bos_id, which may be pad_id (MarianMT starts decoding from <pad>).
  const auto check = [&](const Tensor& ids, const Tensor& lengths, const char* what, std::int64_t vocab,
                         bool starts_with_bos = false) {
    const std::int64_t b = ids.dim(0), len = ids.dim(1);
    const std::int32_t* p = ids.data<std::int32_t>();
    for (std::int64_t i = 0; i < b; ++i) {
      const std::int32_t n = lengths.data<std::int32_t>()[i];
      if (n < 1 || n > len) fail(std::string(what) + " length " + std::to_string(n) + " of row " + std::to_string(i));
      for (std::int64_t j = 0; j < len; ++j) {
        const std::int32_t id = p[i * len + j];
        if (id < 0 || id >= vocab) fail(std::string(what) + " id " + std::to_string(id) + " outside the vocabulary");
        if (starts_with_bos && j == 0 && id == config.bos_id) continue;
        if ((j < n) == (id == config.pad_id)) {
          fail(std::string(what) + " row " + std::to_string(i) + " position " + std::to_string(j) +
               (j < n ? " is padding inside the sentence" : " should be padding"));
        }
      }
    }
  };
  check(src, src_lengths, "source", config.src_vocab_size);
  check(tgt_in, tgt_lengths, "target input", config.tgt_vocab_size, true);
  check(tgt_out, tgt_lengths, "target output", config.tgt_vocab_size);
  if (src.dim(1) > config.max_positions || tgt_in.dim(1) > config.max_positions) {
    fail("sequence longer than max_positions " + std::to_string(config.max_positions));
  }
  return sum_of_lengths(tgt_lengths);
}

Batch Batch::to(Device device, const ModelConfig& config) const {
  const std::int64_t count = validate(config);
  return {src.to(device), src_lengths.to(device), tgt_in.to(device), tgt_out.to(device), tgt_lengths.to(device), count};
}

}  // namespace dragoman::model
