// The decoding options on the command line (see decoding_options.h).
#include "cli/decoding_options.h"

#include <fmt/format.h>

#include <cstdint>
#include <string>

#include "cli/validators.h"
#include "decode/translator.h"

namespace dragoman::cli {
namespace {

// Bounds against typos (a value beyond them is a usage error, never a search that cannot end).
constexpr std::int64_t kMaxBatch = std::int64_t{1} << 30;

void add_search_options(CLI::App* sub, decode::DecodingOptions& o, decode::DecodingUse use) {
  const bool server = use == decode::DecodingUse::kServer;
  // (The model file's recommendation, when it has one, replaces the built-in default shown in [].)
  sub->add_option("--beam,-b", o.beam,
                  std::string(server ? "Default beam size (a request may choose another)"
                                     : "Beam size (1: greedy decoding)") +
                      "; the model file's when it recommends one (dragoman decoding-defaults)")
      ->check(integer_in(1, max_beam(use)))
      ->capture_default_str();
  sub->add_option("--length-penalty", o.length_penalty,
                  std::string(server ? "Default length normalisation exponent alpha"
                                     : "Length normalisation exponent alpha") +
                      "; the model file's when it recommends one")
      ->check(number_in(0, decode::kMaxLengthPenalty))
      ->capture_default_str();
  sub->add_option("--length-normalization", o.length_normalization,
                  "gnmt: ((5+|Y|)/6)^alpha (the paper); power: |Y|^alpha (fairseq, Marian); none; the model "
                  "file's when it recommends one")
      ->check(CLI::IsMember({length_penalty_name(decode::LengthPenalty::kGnmt),
                             length_penalty_name(decode::LengthPenalty::kPower),
                             length_penalty_name(decode::LengthPenalty::kNone)}))
      ->capture_default_str();
}

void add_word_reward_option(CLI::App* sub, decode::DecodingOptions& o) {
  sub->add_option("--word-reward", o.word_reward, "Added to a hypothesis's score per output token (EOS included)")
      ->check(finite_number())
      ->capture_default_str();
}

void add_length_options(CLI::App* sub, decode::DecodingOptions& o) {
  sub->add_option("--max-length-a", o.max_length_a, "Output at most a * source tokens + b tokens (before EOS)")
      ->check(number_in(0, decode::kMaxLengthA))
      ->capture_default_str();
  sub->add_option("--max-length-b", o.max_length_b, "See --max-length-a")
      ->check(integer_in(0, decode::kMaxLengthB))
      ->capture_default_str();
}

void add_device_options(CLI::App* sub, decode::DecodingOptions& o) {
  sub->add_option("--device", o.device, "cpu or cuda:N (the model is cast to --precision on it)")
      ->check(device_name())
      ->capture_default_str();
  sub->add_option("--precision", o.precision,
                  "Weights and activations in fp32, bf16 or fp16 (16-bit: half the model's memory; log-probabilities "
                  "stay fp32), or int8 on the CPU (linear layers' weights quantized per row, activations per row)")
      ->check(CLI::IsMember({"fp32", "bf16", "fp16", "int8"}))
      ->capture_default_str();
  add_threads_option(sub, o.threads, "Compute threads");
}

void add_batch_options(CLI::App* sub, decode::DecodingOptions& o, decode::DecodingUse use) {
  // The defaults the help states are those translator_options() takes when none is given.
  const decode::DecodingOptions none;
  const decode::TranslatorOptions cpu = none.translator_options(Device::cpu(), use);
  const decode::TranslatorOptions gpu = none.translator_options(Device::cuda(0), use);
  const bool server = use == decode::DecodingUse::kServer;
  sub->add_option("--batch-tokens,--max-batch-tokens", o.batch_tokens,
                  fmt::format("{} (default: {} on the CPU, {} on a GPU)",
                              server ? "Source tokens of the sentences searched together, at most"
                                     : "Source tokens per batch, padding counted",
                              cpu.batch_tokens, gpu.batch_tokens))
      ->check(integer_in(1, kMaxBatch));
  sub->add_option("--batch-sentences", o.batch_sentences,
                  fmt::format("{} (default: {} on the CPU, {} on a GPU)",
                              server ? "Sentences searched together, at most" : "Sentences per batch, at most",
                              cpu.batch_sentences, gpu.batch_sentences))
      ->check(integer_in(1, kMaxBatch));
}

}  // namespace

void add_decoding_options(CLI::App* sub, decode::DecodingOptions& o, unsigned groups, decode::DecodingUse use) {
  if ((groups & kSearchOptions) != 0) add_search_options(sub, o, use);
  if ((groups & kWordRewardOption) != 0) add_word_reward_option(sub, o);
  if ((groups & kSearchOptions) != 0) add_length_options(sub, o);
  if ((groups & kDeviceOptions) != 0) add_device_options(sub, o);
  if ((groups & kBatchOptions) != 0) add_batch_options(sub, o, use);
}

decode::GivenSearchOptions given_search_options(const CLI::App& sub) {
  return {sub.count("--beam") > 0, sub.count("--length-penalty") > 0, sub.count("--length-normalization") > 0};
}

}  // namespace dragoman::cli
