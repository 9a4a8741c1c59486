// The options of decoding that translate, serve and score share (DESIGN.md "Options with one
// home"): the search (beam, length normalisation, lengths), where it runs (device, precision,
// threads) and the batches' sizes, with every built-in default defined once, here, and said why.
// The command line's option groups (cli/decoding_options.h) fill one DecodingOptions; so will
// serve's request fields and a Python binding.
//
// Precedence: the built-in defaults below < the model file's recommended settings (a converted
// model's decoding.* metadata: DecodingDefaults, read by model_files.h) < the command line. The
// model file's settings are applied by apply_model_defaults() to the options the command line did
// not give (DecodingOptions::given).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "decode/sampling.h"
#include "device/device.h"

namespace dragoman::decode {

struct SearchOptions;      // decode/beam_search.h
struct TranslatorOptions;  // decode/translator.h

// A hypothesis's length normaliser lp(|Y|) (beam_search.h): GNMT's ((5+|Y|)/6)^alpha (Wu et al.
// 2016, the paper's), |Y|^alpha (fairseq, Marian) or 1.
enum class LengthPenalty { kGnmt, kPower, kNone };

// The name the command line and model files give a normalisation: "gnmt", "power" or "none".
constexpr const char* length_penalty_name(LengthPenalty p) {
  switch (p) {
    case LengthPenalty::kGnmt: return "gnmt";
    case LengthPenalty::kPower: return "power";
    case LengthPenalty::kNone: return "none";
  }
  return "?";
}
// The normalisation a name gives (translate's and serve's --length-normalization); an unknown
// name is an Error.
LengthPenalty length_penalty_named(const std::string& name);

// The search: the paper's (Vaswani et al. 2017, section 6.1: beam 4, length penalty alpha 0.6 with
// GNMT's normaliser ((5+|Y|)/6)^alpha, at most source length + 50 output tokens), so that a model
// trained here translates as the paper's did without options.
inline constexpr int kDefaultBeam = 4;
inline constexpr double kDefaultLengthPenalty = 0.6;  // alpha
inline constexpr LengthPenalty kDefaultLengthNormalization = LengthPenalty::kGnmt;
inline constexpr double kDefaultWordReward = 0.0;  // the paper has none
inline constexpr double kDefaultMaxLengthA = 1.0;  // output <= a * source tokens + b
inline constexpr std::int64_t kDefaultMaxLengthB = 50;

// The largest beam translate takes (and a model file may recommend): far above any useful beam
// (4 to 12; n-best lists for reranking a few dozen), low enough that a typo is an error rather
// than a search of a million rows a sentence.
inline constexpr int kMaxBeam = 1024;
// The largest beam a server searches with (its --beam and a request's "beam" and "n_best"): one
// running search holds every client's sentences, each with beam rows, so a request's beam slows
// every other client's answers; 64 still covers n-best lists for reranking. Why serve differs
// from translate, whose beam slows only its own user.
inline constexpr int kMaxServeBeam = 64;
// The largest length penalty alpha (the command line's, a model file's, a request's).
inline constexpr int kMaxLengthPenalty = 10;
// The largest length cap a and b (output <= a * source tokens + b): far above any useful cap, low
// enough that a typo is an error rather than a search of a million steps.
inline constexpr double kMaxLengthA = 1000;
inline constexpr std::int64_t kMaxLengthB = std::int64_t{1} << 20;

// Where decoding runs: the CPU in fp32, the precision a model is trained in (16 bits and int8 are
// choices of speed over the last digits). Threads 0: OMP_NUM_THREADS if set, else all cores
// (device/cpu/threads.h resolve_threads).
inline constexpr const char* kDefaultDevice = "cpu";
inline constexpr const char* kDefaultPrecision = "fp32";
inline constexpr int kDefaultThreads = 0;

// Batches on the CPU: a batch's decoder log-probabilities are [sentences x beam, V] floats and its
// self-attention caches sentences x beam x length x d_model x 2 x layers, which should stay in the
// processor's caches; 64 sentences of 2048 tokens (padding counted) also show the first lines soon.
inline constexpr std::int64_t kCpuBatchTokens = 2048;
inline constexpr std::int64_t kCpuBatchSentences = 64;
// A GPU wants large batches to be busy, and its memory holds them.
inline constexpr std::int64_t kGpuBatchTokens = 16384;
inline constexpr std::int64_t kGpuBatchSentences = 1024;
// serve on the CPU searches half translate's sentences: continuous batching keeps its search full,
// where translate's sorted batches shrink as their sentences end, and a decoding step's cost per
// sentence grows with the rows it holds (their caches leave the processor's). Measured at 64
// clients (docs/PERFORMANCE.md, serve): 88-93 % of translate's sentences/s with 32, 83-86 % with 64
// on the demo model; 94 % against 91 % on base. On a GPU serve takes kGpuBatchSentences.
inline constexpr std::int64_t kServeCpuBatchSentences = 32;

// How decoding is driven, where that changes a default or a limit.
enum class DecodingUse {
  kBatch,   // translate and score: a whole input in sorted batches, for one user
  kServer,  // serve: one continuous search that every client's requests share
};

// The largest beam for a use: kMaxBeam, or kMaxServeBeam for a server.
int max_beam(DecodingUse use);

// The decoding settings a model file recommends (metadata decoding.beam, decoding.length_normalization,
// decoding.length_penalty: written by convert from the source toolkit's own settings, so that an
// imported model translates as it did there); read by decoding_defaults() (model_files.h).
struct DecodingDefaults {
  std::optional<int> beam;
  std::optional<std::string> normalization;  // gnmt, power or none
  std::optional<double> alpha;
};

// Which of the options a model file may recommend the command line gave (CLI11's count of --beam,
// --length-penalty, --length-normalization): the others take the model's recommendation.
struct GivenSearchOptions {
  bool beam = false, alpha = false, normalization = false;
};

struct DecodingOptions {
  // The search.
  int beam = kDefaultBeam;
  double length_penalty = kDefaultLengthPenalty;                                        // alpha
  std::string length_normalization = length_penalty_name(kDefaultLengthNormalization);  // its name
  double word_reward = kDefaultWordReward;
  double max_length_a = kDefaultMaxLengthA;
  std::int64_t max_length_b = kDefaultMaxLengthB;
  GivenSearchOptions given;  // which of beam and length penalty/normalisation were given: the rest are the model's
  SamplingOptions sampling;  // enabled: samples instead of the beam search (beam: how many a sentence)

  // Where it runs.
  std::string device = kDefaultDevice;        // cpu or cuda:N
  std::string precision = kDefaultPrecision;  // fp32, bf16, fp16 or int8 (the CPU)
  int threads = kDefaultThreads;

  // The batches: 0 is the device's default for the use (translator_options()).
  std::int64_t batch_tokens = 0;
  std::int64_t batch_sentences = 0;

  // The search these options ask for: beam, length normalisation, word reward, lengths; one
  // hypothesis returned and no attention recorded (the caller's outputs choose those).
  SearchOptions search_options() const;
  // The batch sizes on `device` for `use`: those given, else the defaults above; with
  // search_options().
  TranslatorOptions translator_options(const Device& device, DecodingUse use) const;
};

// Where a setting that a model file may recommend came from.
enum class SettingOrigin { kDefault, kModelFile, kGiven };

struct SearchOrigins {
  SettingOrigin beam = SettingOrigin::kDefault, alpha = SettingOrigin::kDefault,
                normalization = SettingOrigin::kDefault;
  bool any_from_model() const;
};

// Sets beam, length penalty and length normalisation from the model file's `d` where `o.given`
// says the command line left them, and says where each came from. A recommended beam above
// max_beam(use) (a model tuned for translate, given to serve) is not taken: the built-in default
// stays, and `ignored` (when not null) names it.
SearchOrigins apply_model_defaults(const DecodingDefaults& d, DecodingOptions& o, DecodingUse use = DecodingUse::kBatch,
                                   std::string* ignored = nullptr);

// "beam from the model file, length penalty given, length normalisation the default": for the log.
std::string describe_origins(const SearchOrigins& origins);

}  // namespace dragoman::decode
