// cuBLASLt GEMMs in row-major form (see gemm.h), with the small kernels of their edge cases.
//
// Row-major through a column-major library: a row-major X [r, c] with row stride ld is, read
// column-major, the matrix X^T [c, r] with the same ld. So C = op(A) op(B) (row-major) is computed as
// C^T = op(B)^T op(A)^T (column-major): cuBLASLt's first operand is our B, its second our A, its
// problem is n x m x k, and a transposed operand of ours is an untransposed one of cuBLASLt's and
// vice versa. The BIAS epilogue adds a vector along the rows of its column-major D = C^T, i.e. one
// bias element per column of our C: what a linear layer needs.
//
// Heuristic cache: cublasLtMatmulAlgoGetHeuristic is asked once per problem (device, shape, leading
// dimensions, batch strides, dtypes, transposes, epilogue, and the pointers' alignments, which decide
// which algorithms are eligible); its best algorithm is kept in a process-wide map and used for
// every later call, so a problem always runs the same algorithm (the same bits). The map is read
// under a shared lock; the heuristic is asked outside any lock (two threads meeting a new problem
// at once may both ask; the first answer stored is the one every call uses). The descriptors a
// product needs (the matmul descriptor and three layouts) are made once per problem and thread and
// kept with it, so a product in the steady state creates and destroys nothing: a thread's
// descriptors are its own, because the bias pointer is set on the matmul descriptor per call. Both
// grow with the distinct problems a process meets (as the algorithm map always did): a few hundred
// bytes each.
#include "kernels/gemm.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>

#include "base/env_choice.h"
#include "device/cuda/check.h"
#include "device/cuda/context.h"
#include "kernels/elementwise.h"

namespace dragoman::cuda {
namespace {

// ---- small kernels -------------------------------------------------------------------------------

constexpr unsigned kThreads = 256;

unsigned blocks_for(std::int64_t n) {
  return static_cast<unsigned>(std::min<std::int64_t>((n + kThreads - 1) / kThreads, 65535));
}

// C = beta * C over `batch` matrices [m, n] (ldc, stride_c); beta == 0 writes zeros without reading C
// (it may hold NaN). The k == 0 case of gemm, as cpu::gemm defines it.
template <typename C, typename S>
__global__ void scale_kernel(C* c, std::int64_t m, std::int64_t n, std::int64_t ldc, std::int64_t stride_c,
                             std::int64_t batch, S beta) {
  const std::int64_t total = batch * m * n;
  const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += step) {
    const std::int64_t b = i / (m * n), r = (i / n) % m, j = i % n;
    C& x = c[b * stride_c + r * ldc + j];
    x = beta == S(0) ? store<C>(0) : store<C>(beta * load(x));
  }
}

// c[r, j] = bias[j] for r < m, j < n (c contiguous): the rows a beta = 1 product adds the bias from.
template <typename T>
__global__ void bias_rows_kernel(const T* bias, T* c, std::int64_t m, std::int64_t n) {
  const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < m * n; i += step) {
    c[i] = bias[i % n];
  }
}

// ---- cuBLASLt ------------------------------------------------------------------------------------

template <typename X>
constexpr cudaDataType_t data_type() {
  if constexpr (std::is_same_v<X, float>) {
    return CUDA_R_32F;
  } else if constexpr (std::is_same_v<X, bf16>) {
    return CUDA_R_16BF;
  } else {
    static_assert(std::is_same_v<X, f16>, "float, bf16 or f16");
    return CUDA_R_16F;
  }
}

// One product as cuBLASLt sees it, in our row-major terms (see the top of this file).
struct Problem {
  bool trans_a = false, trans_b = false;
  std::int64_t m = 0, n = 0, k = 0;
  const void* a = nullptr;
  std::int64_t lda = 0, stride_a = 0;
  const void* b = nullptr;
  std::int64_t ldb = 0, stride_b = 0;
  void* c = nullptr;
  std::int64_t ldc = 0, stride_c = 0;
  std::int64_t batch = 1;
  cudaDataType_t ab_type = CUDA_R_32F, c_type = CUDA_R_32F;
  const void* alpha = nullptr;  // host floats (the scale type of CUBLAS_COMPUTE_32F)
  const void* beta = nullptr;
  const void* bias = nullptr;  // non-null: the BIAS (or RELU_BIAS) epilogue
  bool relu = false;           // the RELU (or RELU_BIAS) epilogue
  void* bias_grad = nullptr;   // non-null: the BGRADB epilogue, writing C's type (no bias, no ReLU)
  void* relu_mask = nullptr;   // non-null: with relu, RELU_AUX(_BIAS) writes the mask; with drelu, DRELU reads it
  bool drelu = false;          // the DRELU epilogue (ReLU's gradient by relu_mask)
};

// The largest power of two (at most 256) that divides the address: the alignment the heuristics are
// told about (their default assumes 256 bytes, which a view into a buffer need not have).
std::uint32_t alignment(const void* p) {
  const auto address = reinterpret_cast<std::uintptr_t>(p);
  std::uint32_t align = 256;
  while (align > 1 && address % align != 0) align /= 2;
  return align;
}

// The alignment every matrix of a (strided-batched) operand has: the base pointer's, no more than
// the leading dimension's and the batch stride's in bytes (stride 0: one matrix).
std::uint32_t operand_alignment(const void* p, cudaDataType_t type, std::int64_t ld, std::int64_t stride) {
  const std::uint64_t element = type == CUDA_R_32F ? 4 : 2;
  std::uint32_t align = alignment(p);
  for (const std::uint64_t bytes :
       {static_cast<std::uint64_t>(ld) * element, static_cast<std::uint64_t>(stride) * element}) {
    if (bytes == 0) continue;
    while (align > 1 && bytes % align != 0) align /= 2;
  }
  return align;
}

// What decides the heuristic's choice: device, transposes, epilogue, dtypes, shape, leading
// dimensions, batch strides and count, and the alignments of A, B, C and the bias (or bias
// gradient) vector, whose pointer the heuristic reads (a layer's bias is a view into the flat
// parameter buffer: layers of one shape can have biases of different alignments).
using PlanKey = std::array<std::int64_t, 20>;

struct PlanKeyHash {
  std::size_t operator()(const PlanKey& key) const {
    std::size_t h = 0;
    for (const std::int64_t v : key) h = h * 1000003u ^ std::hash<std::int64_t>()(v);
    return h;
  }
};

struct Plan {
  bool found = false;  // false: cuBLASLt offered no algorithm (kept, so it is not asked again)
  cublasLtMatmulAlgo_t algo{};
};

std::shared_mutex g_plans_mutex;
std::unordered_map<PlanKey, Plan, PlanKeyHash> g_plans;

// Owners of cuBLASLt descriptors. Destroying a valid descriptor cannot fail; its status is ignored
// because a destructor must not throw.
struct MatmulDesc {
  cublasLtMatmulDesc_t desc = nullptr;
  ~MatmulDesc() {
    if (desc != nullptr) (void)cublasLtMatmulDescDestroy(desc);
  }
};
struct Layout {
  cublasLtMatrixLayout_t layout = nullptr;
  ~Layout() {
    if (layout != nullptr) (void)cublasLtMatrixLayoutDestroy(layout);
  }
};
struct Preference {
  cublasLtMatmulPreference_t pref = nullptr;
  ~Preference() {
    if (pref != nullptr) (void)cublasLtMatmulPreferenceDestroy(pref);
  }
};

// A column-major layout [rows, cols] with leading dimension ld, `batch` of them `stride` apart.
void make_layout(Layout& l, cudaDataType_t type, std::int64_t rows, std::int64_t cols, std::int64_t ld,
                 std::int64_t batch, std::int64_t stride) {
  DRAGOMAN_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&l.layout, type, static_cast<std::uint64_t>(rows),
                                                   static_cast<std::uint64_t>(cols), ld));
  if (batch > 1) {
    const auto count = static_cast<std::int32_t>(batch);
    DRAGOMAN_CUBLAS_CHECK(
        cublasLtMatrixLayoutSetAttribute(l.layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count));
    DRAGOMAN_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(l.layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                                           &stride, sizeof stride));
  }
}

// A problem's descriptors, made on its first product on a thread and kept for the next ones.
struct Descriptors {
  MatmulDesc desc;
  Layout first, second, out;
};

// The matmul descriptor (transposes, epilogue; the bias pointer is set per call) and the layouts of
// a problem. cuBLASLt's first operand is our B, its second our A (column-major view).
void make_descriptors(Descriptors& d, const Problem& p, cublasLtEpilogue_t epilogue) {
  DRAGOMAN_CUBLAS_CHECK(cublasLtMatmulDescCreate(&d.desc.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t op_first = p.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_second = p.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  DRAGOMAN_CUBLAS_CHECK(
      cublasLtMatmulDescSetAttribute(d.desc.desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_first, sizeof op_first));
  DRAGOMAN_CUBLAS_CHECK(
      cublasLtMatmulDescSetAttribute(d.desc.desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_second, sizeof op_second));
  if (epilogue != CUBLASLT_EPILOGUE_DEFAULT) {
    DRAGOMAN_CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(d.desc.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue));
  }
  if (p.relu_mask != nullptr) {  // the mask's rows: one bit per row of D (a column of our C), padded to 128
    const std::int64_t ld = relu_mask_bits(p.n);
    DRAGOMAN_CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(d.desc.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &ld, sizeof ld));
  }
  make_layout(d.first, p.ab_type, p.trans_b ? p.k : p.n, p.trans_b ? p.n : p.k, p.ldb, p.batch, p.stride_b);
  make_layout(d.second, p.ab_type, p.trans_a ? p.m : p.k, p.trans_a ? p.k : p.m, p.lda, p.batch, p.stride_a);
  make_layout(d.out, p.c_type, p.n, p.m, p.ldc, p.batch, p.stride_c);
}

// This thread's descriptors of the problem `key`, made on first use.
Descriptors& descriptors_for(const PlanKey& key, const Problem& p, cublasLtEpilogue_t epilogue) {
  thread_local std::unordered_map<PlanKey, std::unique_ptr<Descriptors>, PlanKeyHash> kept;
  std::unique_ptr<Descriptors>& d = kept[key];
  if (d == nullptr) {
    auto made = std::make_unique<Descriptors>();
    make_descriptors(*made, p, epilogue);  // may throw: nothing is kept then
    d = std::move(made);
  }
  return *d;
}

// cuBLASLt's best algorithm for the problem (the heuristic's first answer), or found = false.
// With `may_fail` (an epilogue product that has a fallback), INVALID_VALUE also means no algorithm:
// a cuBLASLt that refuses an epilogue's combination that way makes the caller fall back rather than
// stop training.
Plan ask_heuristic(const Problem& p, const Context& ctx, const Descriptors& d, cublasLtEpilogue_t epilogue,
                   std::uint32_t align_a, std::uint32_t align_b, std::uint32_t align_c, bool may_fail) {
  Preference pref;
  DRAGOMAN_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref.pref));
  const std::uint64_t workspace = ctx.blaslt_workspace_bytes;
  DRAGOMAN_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                             &workspace, sizeof workspace));
  // Our B is cuBLASLt's A, our A its B; C and D are one buffer.
  const std::uint32_t aligns[4] = {align_b, align_a, align_c, align_c};
  const cublasLtMatmulPreferenceAttributes_t attrs[4] = {
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
  for (int i = 0; i < 4; ++i) {
    DRAGOMAN_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref.pref, attrs[i], &aligns[i], sizeof aligns[i]));
  }
  // Split-K partial sums only in the compute type (f32): the in-place and output-type schemes
  // add the parts in C's type, a rounding to bf16/f16 per part (3 bf16 ulps off on an H200 for
  // 513 x 255 x 31 products), where the CPU's twin rounds once. With an epilogue and a 16-bit C,
  // no split-K at all: its reduction rounds A B to C's type before it adds the bias (on an
  // H200, 33 x 31 x 32 bf16 products with a bias were off by half an ulp of A B, not of the
  // sum); without a split-K algorithm the heuristic says NOT_SUPPORTED and linear falls back.
  const bool sixteen_bit_epilogue = epilogue != CUBLASLT_EPILOGUE_DEFAULT && p.c_type != CUDA_R_32F;
  const std::uint32_t reduction =
      sixteen_bit_epilogue ? CUBLASLT_REDUCTION_SCHEME_NONE : CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
  DRAGOMAN_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref.pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK,
                                                             &reduction, sizeof reduction));
  cublasLtMatmulHeuristicResult_t result{};
  int count = 0;
  const cublasStatus_t status =
      cublasLtMatmulAlgoGetHeuristic(ctx.blaslt, d.desc.desc, d.first.layout, d.second.layout, d.out.layout,
                                     d.out.layout, pref.pref, 1, &result, &count);
  // NOT_SUPPORTED is how cuBLASLt says "no algorithm"; anything else is a real error.
  const bool refused = status == CUBLAS_STATUS_NOT_SUPPORTED || (may_fail && status == CUBLAS_STATUS_INVALID_VALUE);
  if (!refused) DRAGOMAN_CUBLAS_CHECK(status);
  Plan plan;
  plan.found = status == CUBLAS_STATUS_SUCCESS && count > 0;
  if (plan.found) plan.algo = result.algo;
  return plan;
}

std::string describe(const Problem& p) {
  return "m=" + std::to_string(p.m) + " n=" + std::to_string(p.n) + " k=" + std::to_string(p.k) +
         " trans_a=" + std::to_string(p.trans_a) + " trans_b=" + std::to_string(p.trans_b) +
         " lda=" + std::to_string(p.lda) + " ldb=" + std::to_string(p.ldb) + " ldc=" + std::to_string(p.ldc) +
         " batch=" + std::to_string(p.batch) + " A/B type " + std::to_string(static_cast<int>(p.ab_type)) + " C type " +
         std::to_string(static_cast<int>(p.c_type)) + (p.bias != nullptr ? " BIAS epilogue" : "") +
         (p.relu ? " RELU epilogue" : "") + (p.bias_grad != nullptr ? " BGRADB epilogue" : "") +
         (p.relu_mask != nullptr ? (p.drelu ? " DRELU epilogue" : " AUX (ReLU mask)") : "");
}

// DRAGOMAN_GEMM_LOG=1: every new plan on stderr (the algorithm cuBLASLt chose for a problem).
bool log_plans() {
  static const bool on = [] {
    const char* value = std::getenv("DRAGOMAN_GEMM_LOG");
    return value != nullptr && *value != '\0' && std::string(value) != "0";
  }();
  return on;
}

void log_plan(const Problem& p, int device, const Plan& plan, std::uint32_t align_a, std::uint32_t align_b,
              std::uint32_t align_c) {
  std::string text = "cuda::gemm plan on cuda:" + std::to_string(device) + ": " + describe(p) + " align A/B/C " +
                     std::to_string(align_a) + "/" + std::to_string(align_b) + "/" + std::to_string(align_c);
  if (plan.found) {
    const std::pair<cublasLtMatmulAlgoConfigAttributes_t, const char*> attributes[] = {
        {CUBLASLT_ALGO_CONFIG_ID, "algo"},
        {CUBLASLT_ALGO_CONFIG_TILE_ID, "tile"},
        {CUBLASLT_ALGO_CONFIG_SPLITK_NUM, "split-k"},
        {CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, "reduction"},
        {CUBLASLT_ALGO_CONFIG_STAGES_ID, "stages"}};
    for (const auto& [attribute, name] : attributes) {
      std::uint32_t value = 0;  // (int32 or uint32 attributes: the low 4 bytes either way)
      std::size_t written = 0;
      if (cublasLtMatmulAlgoConfigGetAttribute(&plan.algo, attribute, &value, sizeof value, &written) ==
          CUBLAS_STATUS_SUCCESS) {
        text += std::string(" ") + name + " " + std::to_string(value);
      }
    }
  } else {
    text += ": no algorithm";
  }
  std::fprintf(stderr, "%s\n", text.c_str());
}

// Runs the product on the device's context; false (nothing run) when cuBLASLt has no algorithm and
// `may_fail`, otherwise such a problem is an error.
bool matmul(const Problem& p, int device, bool may_fail) {
  const Context& ctx = context(device);
  const bool mask_out = p.relu_mask != nullptr && !p.drelu;
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  if (p.bias_grad != nullptr) {
    epilogue = CUBLASLT_EPILOGUE_BGRADB;
  } else if (p.drelu) {
    epilogue = CUBLASLT_EPILOGUE_DRELU;
  } else if (p.relu) {
    epilogue = p.bias != nullptr ? (mask_out ? CUBLASLT_EPILOGUE_RELU_AUX_BIAS : CUBLASLT_EPILOGUE_RELU_BIAS)
                                 : (mask_out ? CUBLASLT_EPILOGUE_RELU_AUX : CUBLASLT_EPILOGUE_RELU);
  } else if (p.bias != nullptr) {
    epilogue = CUBLASLT_EPILOGUE_BIAS;
  }
  // Every batch's matrix (base + i * stride elements) must meet the alignment promised to cuBLASLt,
  // and so must every row: take the base pointer's, capped by the stride's and the leading
  // dimension's in bytes.
  const std::uint32_t align_a = operand_alignment(p.a, p.ab_type, p.lda, p.batch > 1 ? p.stride_a : 0);
  const std::uint32_t align_b = operand_alignment(p.b, p.ab_type, p.ldb, p.batch > 1 ? p.stride_b : 0);
  const std::uint32_t align_c = operand_alignment(p.c, p.c_type, p.ldc, p.batch > 1 ? p.stride_c : 0);
  const void* vector = p.bias_grad != nullptr ? p.bias_grad : p.bias;
  const std::uint32_t align_vector = vector != nullptr ? alignment(vector) : 0;
  const PlanKey key = {device,     p.trans_a, p.trans_b, epilogue, p.ab_type, p.c_type,    p.m,
                       p.n,        p.k,       p.lda,     p.ldb,    p.ldc,     p.stride_a,  p.stride_b,
                       p.stride_c, p.batch,   align_a,   align_b,  align_c,   align_vector};
  Descriptors& d = descriptors_for(key, p, epilogue);
  if (vector != nullptr) {
    DRAGOMAN_CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(d.desc.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &vector, sizeof vector));
  }
  if (p.relu_mask != nullptr) {  // set before the heuristic, which reads its alignment
    DRAGOMAN_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(d.desc.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER,
                                                         &p.relu_mask, sizeof p.relu_mask));
  }
  Plan plan;
  bool known = false;
  {
    const std::shared_lock<std::shared_mutex> lock(g_plans_mutex);
    const auto it = g_plans.find(key);
    if (it != g_plans.end()) {
      plan = it->second;
      known = true;
    }
  }
  if (!known) {
    const Plan asked = ask_heuristic(p, ctx, d, epilogue, align_a, align_b, align_c, may_fail);
    const std::unique_lock<std::shared_mutex> lock(g_plans_mutex);
    const auto [it, inserted] = g_plans.emplace(key, asked);  // another thread's answer, if it came first
    plan = it->second;
    if (inserted && log_plans()) log_plan(p, device, plan, align_a, align_b, align_c);
  }
  if (!plan.found) {
    if (may_fail) return false;
    throw Error("cuda::gemm: cuBLASLt found no algorithm for " + describe(p) + " on cuda:" + std::to_string(device));
  }
  const cublasStatus_t status = cublasLtMatmul(
      ctx.blaslt, d.desc.desc, p.alpha, p.b, d.first.layout, p.a, d.second.layout, p.beta, p.c, d.out.layout, p.c,
      d.out.layout, &plan.algo, ctx.blaslt_workspace, ctx.blaslt_workspace_bytes, ctx.stream);
  // An epilogue refused when the product runs is treated like one the heuristic refused: the plan
  // remembers it, and the caller falls back (nothing was written).
  if (status == CUBLAS_STATUS_NOT_SUPPORTED && may_fail) {
    const std::unique_lock<std::shared_mutex> lock(g_plans_mutex);
    g_plans[key].found = false;
    return false;
  }
  DRAGOMAN_CUBLAS_CHECK(status);
  return true;
}

template <typename T, typename C>
Problem make_problem(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, const acc_t<T>* alpha,
                     const T* a, std::int64_t lda, const T* b, std::int64_t ldb, const acc_t<T>* beta, C* c,
                     std::int64_t ldc) {
  Problem p;
  p.trans_a = trans_a;
  p.trans_b = trans_b;
  p.m = m;
  p.n = n;
  p.k = k;
  p.a = a;
  p.lda = lda;
  p.b = b;
  p.ldb = ldb;
  p.c = c;
  p.ldc = ldc;
  p.ab_type = data_type<T>();
  p.c_type = data_type<C>();
  p.alpha = alpha;
  p.beta = beta;
  return p;
}

template <typename C, typename S>
void scale(C* c, std::int64_t m, std::int64_t n, std::int64_t ldc, std::int64_t stride_c, std::int64_t batch, S beta,
           int device) {
  scale_kernel<C, S>
      <<<blocks_for(batch * m * n), kThreads, 0, context(device).stream>>>(c, m, n, ldc, stride_c, batch, beta);
  DRAGOMAN_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

template <typename T, typename C>
void gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, acc_t<T> alpha, const T* a,
          std::int64_t lda, const T* b, std::int64_t ldb, acc_t<T> beta, C* c, std::int64_t ldc, int device) {
  static_assert(std::is_same_v<C, T> || std::is_same_v<C, acc_t<T>>, "C is T or acc_t<T>");
  if (m == 0 || n == 0) return;
  if (k == 0) return scale(c, m, n, ldc, 0, 1, beta, device);
  matmul(make_problem<T, C>(trans_a, trans_b, m, n, k, &alpha, a, lda, b, ldb, &beta, c, ldc), device, false);
}

template <typename T>
void gemm_bias(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, const T* a, std::int64_t lda,
               const T* b, std::int64_t ldb, const T* bias, T* c, int device, bool relu) {
  if (m == 0 || n == 0) return;
  const acc_t<T> one = 1, zero = 0;
  Problem p = make_problem<T, T>(trans_a, trans_b, m, n, k, &one, a, lda, b, ldb, &zero, c, n);
  // The epilogue wants a 16-byte aligned bias (Marian saw misaligned ones fail on A100).
  if (k > 0 && (bias == nullptr || alignment(bias) >= 16) && (bias != nullptr || relu)) {
    p.bias = bias;
    p.relu = relu;
    if (matmul(p, device, true)) return;
    p.bias = nullptr;
    p.relu = false;
  }
  if (bias == nullptr) {
    gemm<T, T>(trans_a, trans_b, m, n, k, one, a, lda, b, ldb, zero, c, n, device);
  } else {
    // C = bias rows, then C = A B + 1 * C: the same sum, rounded once.
    bias_rows_kernel<T><<<blocks_for(m * n), kThreads, 0, context(device).stream>>>(bias, c, m, n);
    DRAGOMAN_CUDA_CHECK(cudaGetLastError());
    if (k > 0) {
      p.beta = &one;
      matmul(p, device, false);
    }
  }
  if (relu) relu_forward<T>(c, c, m * n, context(device).stream);
}

template <typename T>
bool gemm_bias_grad(std::int64_t m, std::int64_t n, std::int64_t k, const T* a, std::int64_t lda, const T* b,
                    std::int64_t ldb, acc_t<T>* c, std::int64_t ldc, acc_t<T>* bias_grad, int device) {
  // Only the shapes of real layers (multiples of 8; an out of 1 once crashed BGRADB in cuBLASLt 11.6,
  // NVIDIA/apex#1392): other shapes take the kernels.
  if (m % 8 != 0 || n % 8 != 0 || m == 0 || n == 0 || k == 0 || alignment(bias_grad) < 16) return false;
  const acc_t<T> one = 1;
  Problem p = make_problem<T, acc_t<T>>(true, false, m, n, k, &one, a, lda, b, ldb, &one, c, ldc);
  p.bias_grad = bias_grad;
  return matmul(p, device, true);
}

template <typename T>
bool gemm_bias_relu_mask(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, const T* a,
                         std::int64_t lda, const T* b, std::int64_t ldb, const T* bias, T* c, void* mask, int device) {
  if (m == 0 || n == 0 || k == 0 || alignment(mask) < kReluMaskAlignment || (bias != nullptr && alignment(bias) < 16)) {
    return false;
  }
  const acc_t<T> one = 1, zero = 0;
  Problem p = make_problem<T, T>(trans_a, trans_b, m, n, k, &one, a, lda, b, ldb, &zero, c, n);
  p.bias = bias;
  p.relu = true;
  p.relu_mask = mask;
  return matmul(p, device, true);
}

template <typename T>
bool gemm_drelu(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, const T* a,
                std::int64_t lda, const T* b, std::int64_t ldb, T* c, const void* mask, int device) {
  if (m == 0 || n == 0 || k == 0 || alignment(mask) < kReluMaskAlignment) return false;
  const acc_t<T> one = 1, zero = 0;
  Problem p = make_problem<T, T>(trans_a, trans_b, m, n, k, &one, a, lda, b, ldb, &zero, c, n);
  p.relu_mask = const_cast<void*>(mask);  // read, not written (cuBLASLt's pointer attribute is one type)
  p.drelu = true;
  return matmul(p, device, true);
}

namespace {
EnvChoice& grad_epilogue_choice() {
  static EnvChoice choice("DRAGOMAN_CUDA_GRAD_EPILOGUES", {"auto", "off"});  // GradEpilogues' order
  return choice;
}
}  // namespace

GradEpilogues grad_epilogues() { return static_cast<GradEpilogues>(grad_epilogue_choice().get()); }

void set_grad_epilogues(GradEpilogues epilogues) { grad_epilogue_choice().set(static_cast<int>(epilogues)); }

template <typename T>
void gemm_strided_batched(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, acc_t<T> alpha,
                          const T* a, std::int64_t lda, std::int64_t stride_a, const T* b, std::int64_t ldb,
                          std::int64_t stride_b, acc_t<T> beta, T* c, std::int64_t ldc, std::int64_t stride_c,
                          std::int64_t batch, int device) {
  if (m == 0 || n == 0 || batch == 0) return;
  if (k == 0) return scale(c, m, n, ldc, stride_c, batch, beta, device);
  Problem p = make_problem<T, T>(trans_a, trans_b, m, n, k, &alpha, a, lda, b, ldb, &beta, c, ldc);
  p.batch = batch;
  p.stride_a = stride_a;
  p.stride_b = stride_b;
  p.stride_c = stride_c;
  matmul(p, device, false);
}

#define DRAGOMAN_INSTANTIATE_GEMM(T, C)                                                                            \
  template void gemm<T, C>(bool, bool, std::int64_t, std::int64_t, std::int64_t, acc_t<T>, const T*, std::int64_t, \
                           const T*, std::int64_t, acc_t<T>, C*, std::int64_t, int);
#define DRAGOMAN_INSTANTIATE(T)                                                                                       \
  DRAGOMAN_INSTANTIATE_GEMM(T, T)                                                                                     \
  template void gemm_bias<T>(bool, bool, std::int64_t, std::int64_t, std::int64_t, const T*, std::int64_t, const T*,  \
                             std::int64_t, const T*, T*, int, bool);                                                  \
  template bool gemm_bias_grad<T>(std::int64_t, std::int64_t, std::int64_t, const T*, std::int64_t, const T*,         \
                                  std::int64_t, acc_t<T>*, std::int64_t, acc_t<T>*, int);                             \
  template bool gemm_bias_relu_mask<T>(bool, bool, std::int64_t, std::int64_t, std::int64_t, const T*, std::int64_t,  \
                                       const T*, std::int64_t, const T*, T*, void*, int);                             \
  template bool gemm_drelu<T>(bool, bool, std::int64_t, std::int64_t, std::int64_t, const T*, std::int64_t, const T*, \
                              std::int64_t, T*, const void*, int);                                                    \
  template void gemm_strided_batched<T>(bool, bool, std::int64_t, std::int64_t, std::int64_t, acc_t<T>, const T*,     \
                                        std::int64_t, std::int64_t, const T*, std::int64_t, std::int64_t, acc_t<T>,   \
                                        T*, std::int64_t, std::int64_t, std::int64_t, int);
DRAGOMAN_INSTANTIATE(float)
DRAGOMAN_INSTANTIATE(bf16)
DRAGOMAN_INSTANTIATE(f16)
DRAGOMAN_INSTANTIATE_GEMM(bf16, float)
DRAGOMAN_INSTANTIATE_GEMM(f16, float)
#undef DRAGOMAN_INSTANTIATE
#undef DRAGOMAN_INSTANTIATE_GEMM

}  // namespace dragoman::cuda
