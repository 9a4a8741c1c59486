// Scaled dot-product attention on CUDA (see attention.h): one block per query for the forward pass
// and dq, one block per key for dk and dv; probabilities in shared memory, sums in fixed orders.
// Compiled without FMA contraction (src/CMakeLists.txt), so each dot product rounds as on the CPU.
#include "kernels/attention.h"

#include <cmath>
#include <cstdlib>
#include <string>
#include <type_traits>

#include "base/env_choice.h"
#include "base/error.h"
#include "device/cuda/check.h"
#include "kernels/cuda/attention_common.cuh"
#include "kernels/cuda/attention_flash.h"
#include "kernels/cuda/attention_mma.h"
#include "kernels/cuda/attention_tiled.h"

namespace dragoman::cuda {
namespace {

using attention_detail::Dropout;
using attention_detail::dropout_of;
using attention_detail::exp_acc;
using attention_detail::log_acc;
using attention_detail::row_dot;
using attention_detail::visible_keys;

constexpr unsigned kThreads = 128;  // per block: one row (query or key) each
constexpr unsigned kWarps = kThreads / 32;
constexpr std::size_t kMaxSharedBytes = 48 * 1024;  // without the opt-in to larger dynamic shared memory

struct Add {
  template <typename A>
  __device__ A operator()(A a, A b) const {
    return a + b;
  }
};
struct Max {
  template <typename A>
  __device__ A operator()(A a, A b) const {
    return b > a ? b : a;
  }
};

// The block's sum (Add) or maximum (Max) of one value per thread, in every thread: a butterfly in
// each warp (every lane combines the same pairs, so all lanes hold the same bits), then the warps'
// results in warp order. A fixed order: the same bits on every run. scratch: [kWarps].
template <typename A, typename Op>
__device__ A block_reduce(A v, A* scratch, Op op) {
  for (int offset = 16; offset > 0; offset /= 2) v = op(v, __shfl_xor_sync(0xFFFFFFFFu, v, offset));
  if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = v;
  __syncthreads();
  A total = scratch[0];
  for (unsigned w = 1; w < kWarps; ++w) total = op(total, scratch[w]);
  __syncthreads();  // scratch is free again
  return total;
}

// The dynamic shared memory of every kernel, carved into acc_t<T> arrays.
extern __shared__ __align__(16) unsigned char shared_bytes[];

// Each shared array gets room for a whole number of 16-byte chunks. The compiler reads the last
// elements of a row (the remainder of an unrolled dot product) with one aligned 16-byte load that
// reaches up to 3 floats past the row's end: within the padding, those bytes are the array's own, not
// the next array's, which other threads are writing. (Without it compute-sanitizer's racecheck
// reported those reads, values never used, as hazards: LDS.128 against the scores' stores on an H200.)
template <typename A>
__host__ __device__ constexpr std::int64_t padded(std::int64_t n) {
  constexpr std::int64_t per_chunk = 16 / static_cast<std::int64_t>(sizeof(A));
  return (n + per_chunk - 1) / per_chunk * per_chunk;
}

// Block (b, h, t): lse[b, h, t] and out[b, t, h*Kv : h*Kv+Kv].
//   shared: q row [K], probabilities [S], scratch [kWarps] (each padded<A>)
template <typename T>
__global__ void __launch_bounds__(kThreads)
    attention_forward_kernel(AttentionShape a, const T* q, const T* k, const T* v, const std::int32_t* key_lengths,
                             acc_t<T> scale, Dropout<acc_t<T>> drop, acc_t<T>* lse, T* out) {
  using A = acc_t<T>;
  const std::int64_t K = a.key_size, Kv = a.value_size, tid = threadIdx.x;
  A* q_row = reinterpret_cast<A*>(shared_bytes);
  A* prob = q_row + padded<A>(K);
  A* scratch = prob + padded<A>(a.keys);
  const std::int64_t row = blockIdx.x;  // (b * H + h) * T + t
  const std::int64_t t = row % a.queries, bh = row / a.queries, b = bh / a.heads, h = bh % a.heads;
  const std::int64_t n = visible_keys(a, key_lengths[b], t);
  const T* qt = q + b * a.q_batch_stride + t * a.q_row_stride + h * K;
  for (std::int64_t i = tid; i < K; i += kThreads) q_row[i] = load(qt[i]);
  __syncthreads();
  // Scores, each dot product in index order (the CPU's bits).
  A local_max = -INFINITY;
  for (std::int64_t s = tid; s < n; s += kThreads) {
    const T* ks = k + b * a.k_batch_stride + s * a.k_row_stride + h * K;
    const A dot = row_dot(q_row, ks, K);
    prob[s] = dot * scale;
    local_max = prob[s] > local_max ? prob[s] : local_max;
  }
  const A max_score = block_reduce(local_max, scratch, Max());
  A local_sum = 0;
  for (std::int64_t s = tid; s < n; s += kThreads) {
    prob[s] = exp_acc(prob[s] - max_score);
    local_sum += prob[s];
  }
  const A sum = block_reduce(local_sum, scratch, Add());
  if (lse != nullptr && tid == 0) lse[row] = n > 0 ? max_score + log_acc(sum) : A(0);
  const std::int64_t first = row * a.keys;  // flat index of (b, h, t, 0) in [B, H, T, S]
  for (std::int64_t s = tid; s < n; s += kThreads) prob[s] = prob[s] / sum * drop.mask(first + s);
  __syncthreads();
  T* out_t = out + b * a.out_batch_stride + t * a.out_row_stride + h * Kv;
  const T* vb = v + b * a.v_batch_stride + h * Kv;
  for (std::int64_t i = tid; i < Kv; i += kThreads) {
    A acc = 0;
    // (unrolled: several value rows' loads in flight; the sum stays in key order)
#pragma unroll 4
    for (std::int64_t s = 0; s < n; ++s) {
      if (prob[s] == A(0)) continue;  // as the CPU: a dropped key adds nothing
      acc += prob[s] * load(vb[s * a.v_row_stride + i]);
    }
    out_t[i] = store<T>(acc);
  }
}

// Block (b, h, t): dq[b, t, h*K : h*K+K] and delta[b, h, t] = sum_s p * dprob (into the workspace,
// for the dk/dv kernel).
//   shared: q row [K], dout row [Kv], probabilities [S], dprob then dscore [S], scratch [kWarps]
//   (each padded<A>)
template <typename T>
__global__ void __launch_bounds__(kThreads)
    attention_dq_kernel(AttentionShape a, const T* q, const T* k, const T* v, const std::int32_t* key_lengths,
                        acc_t<T> scale, Dropout<acc_t<T>> drop, const acc_t<T>* lse, const T* dout, T* dq,
                        acc_t<T>* delta) {
  using A = acc_t<T>;
  const std::int64_t K = a.key_size, Kv = a.value_size, tid = threadIdx.x;
  A* q_row = reinterpret_cast<A*>(shared_bytes);
  A* do_row = q_row + padded<A>(K);
  A* prob = do_row + padded<A>(Kv);
  A* dprob = prob + padded<A>(a.keys);
  A* scratch = dprob + padded<A>(a.keys);
  const std::int64_t row = blockIdx.x;
  const std::int64_t t = row % a.queries, bh = row / a.queries, b = bh / a.heads, h = bh % a.heads;
  const std::int64_t n = visible_keys(a, key_lengths[b], t);
  const T* qt = q + b * a.q_batch_stride + t * a.q_row_stride + h * K;
  const T* do_t = dout + b * a.out_batch_stride + t * a.out_row_stride + h * Kv;
  for (std::int64_t i = tid; i < K; i += kThreads) q_row[i] = load(qt[i]);
  for (std::int64_t i = tid; i < Kv; i += kThreads) do_row[i] = load(do_t[i]);
  __syncthreads();
  const A log_sum = lse[row];
  const std::int64_t first = row * a.keys;
  A local = 0;
  for (std::int64_t s = tid; s < n; s += kThreads) {
    const T* ks = k + b * a.k_batch_stride + s * a.k_row_stride + h * K;
    const T* vs = v + b * a.v_batch_stride + s * a.v_row_stride + h * Kv;
    const A dot = row_dot(q_row, ks, K);
    const A p = exp_acc(dot * scale - log_sum);
    A dp = row_dot(do_row, vs, Kv);
    dp *= drop.mask(first + s);
    prob[s] = p;
    dprob[s] = dp;
    local += p * dp;
  }
  const A dot_sum = block_reduce(local, scratch, Add());
  if (tid == 0) delta[row] = dot_sum;
  for (std::int64_t s = tid; s < n; s += kThreads) dprob[s] = prob[s] * (dprob[s] - dot_sum) * scale;
  __syncthreads();
  T* dqt = dq + b * a.q_batch_stride + t * a.q_row_stride + h * K;
  const T* kb = k + b * a.k_batch_stride + h * K;
  for (std::int64_t i = tid; i < K; i += kThreads) {
    A acc = 0;
    for (std::int64_t s = 0; s < n; ++s) acc += dprob[s] * load(kb[s * a.k_row_stride + i]);
    dqt[i] = store<T>(acc);
  }
}

// Block (b, h, s): dk[b, s, h*K : h*K+K] and dv[b, s, h*Kv : h*Kv+Kv], summed over the queries that
// see key s in query order (the CPU's order).
//   shared: k row [K], v row [Kv], dropped probabilities [T], dscores [T] (each padded<A>)
template <typename T>
__global__ void __launch_bounds__(kThreads)
    attention_dkv_kernel(AttentionShape a, const T* q, const T* k, const T* v, const std::int32_t* key_lengths,
                         acc_t<T> scale, Dropout<acc_t<T>> drop, const acc_t<T>* lse, const T* dout,
                         const acc_t<T>* delta, T* dk, T* dv) {
  using A = acc_t<T>;
  const std::int64_t K = a.key_size, Kv = a.value_size, Tq = a.queries, tid = threadIdx.x;
  A* k_row = reinterpret_cast<A*>(shared_bytes);
  A* v_row = k_row + padded<A>(K);
  A* pd = v_row + padded<A>(Kv);
  A* ds = pd + padded<A>(Tq);
  const std::int64_t key = blockIdx.x;  // (b * H + h) * S + s
  const std::int64_t s = key % a.keys, bh = key / a.keys, b = bh / a.heads, h = bh % a.heads;
  // Query t sees key s when s < the key length and (causal) s <= query_offset + t.
  const std::int32_t length = key_lengths[b];
  const std::int64_t t_first = !(s < length) ? Tq : a.causal && s - a.query_offset > 0 ? s - a.query_offset : 0;
  const T* ks = k + b * a.k_batch_stride + s * a.k_row_stride + h * K;
  const T* vs = v + b * a.v_batch_stride + s * a.v_row_stride + h * Kv;
  for (std::int64_t i = tid; i < K; i += kThreads) k_row[i] = load(ks[i]);
  for (std::int64_t i = tid; i < Kv; i += kThreads) v_row[i] = load(vs[i]);
  __syncthreads();
  for (std::int64_t t = t_first + tid; t < Tq; t += kThreads) {
    const T* qt = q + b * a.q_batch_stride + t * a.q_row_stride + h * K;
    const T* do_t = dout + b * a.out_batch_stride + t * a.out_row_stride + h * Kv;
    A dot = 0;
    for (std::int64_t i = 0; i < K; ++i) dot += load(qt[i]) * k_row[i];
    const A p = exp_acc(dot * scale - lse[bh * Tq + t]);
    A dp = 0;
    for (std::int64_t i = 0; i < Kv; ++i) dp += load(do_t[i]) * v_row[i];
    const A mask = drop.mask((bh * Tq + t) * a.keys + s);
    dp *= mask;
    pd[t] = p * mask;
    ds[t] = p * (dp - delta[bh * Tq + t]) * scale;
  }
  __syncthreads();
  T* dks = dk + b * a.k_batch_stride + s * a.k_row_stride + h * K;
  T* dvs = dv + b * a.v_batch_stride + s * a.v_row_stride + h * Kv;
  const T* qb = q + b * a.q_batch_stride + h * K;
  const T* dob = dout + b * a.out_batch_stride + h * Kv;
  for (std::int64_t i = tid; i < K; i += kThreads) {
    A acc = 0;
    for (std::int64_t t = t_first; t < Tq; ++t) acc += ds[t] * load(qb[t * a.q_row_stride + i]);
    dks[i] = store<T>(acc);
  }
  for (std::int64_t i = tid; i < Kv; i += kThreads) {
    A acc = 0;
    for (std::int64_t t = t_first; t < Tq; ++t) acc += pd[t] * load(dob[t * a.out_row_stride + i]);
    dvs[i] = store<T>(acc);
  }
}

// The bytes of `elements` acc_t<T> values of shared memory; throws beyond what a block may have.
template <typename T>
std::size_t shared_bytes_for(const char* kernel, std::int64_t elements) {
  const std::size_t bytes = static_cast<std::size_t>(elements) * sizeof(acc_t<T>);
  if (bytes > kMaxSharedBytes) {
    throw Error(std::string("cuda::") + kernel + ": " + std::to_string(bytes) +
                " bytes of shared memory for one row (the keys or queries are too many for this simple kernel, "
                "kernels/attention.h)");
  }
  return bytes;
}

// One block per row (a grid's x dimension holds up to 2^31 - 1 blocks).
unsigned blocks(const char* kernel, std::int64_t rows) {
  if (rows > 0x7FFFFFFF)
    throw Error(std::string("cuda::") + kernel + ": " + std::to_string(rows) + " rows in one grid");
  return static_cast<unsigned>(rows);
}

}  // namespace

namespace {

EnvChoice& attention_kernel_choice() {
  static EnvChoice choice("DRAGOMAN_CUDA_ATTENTION",
                          {"auto", "naive", "tiled", "mma", "flash"});  // AttentionKernels' order
  return choice;
}

// Whether this call runs the tiled kernels (attention.h, attention_kernels()); asked after use_mma.
template <typename T>
bool use_tiled(const AttentionShape& a) {
  if constexpr (std::is_same_v<T, double>) {
    return false;
  } else {
    const AttentionKernels kernels = attention_kernels();
    if (kernels == AttentionKernels::naive || (kernels != AttentionKernels::tiled && a.queries < kTiledMinQueries))
      return false;
    return attention_detail::tiled_attention_takes<T>(a);
  }
}

// Whether this call runs the tensor-core kernels of one block a head: chosen (mma), or automatic
// (also flash's fallback) with enough queries; asked after use_flash.
template <typename T>
bool use_mma(const AttentionShape& a) {
  if constexpr (std::is_same_v<T, bf16> || std::is_same_v<T, f16>) {
    const AttentionKernels kernels = attention_kernels();
    if (kernels == AttentionKernels::naive || kernels == AttentionKernels::tiled) return false;
    if (kernels != AttentionKernels::mma && a.queries < kTiledMinQueries) return false;
    return attention_detail::mma_attention_takes<T>(a);
  } else {
    return false;
  }
}

// Whether this call runs the flash tensor-core kernels: only when chosen (flash) until they have run
// on a GPU (attention.h).
template <typename T>
bool use_flash(const AttentionShape& a) {
  if constexpr (std::is_same_v<T, bf16> || std::is_same_v<T, f16>) {
    return attention_kernels() == AttentionKernels::flash && attention_detail::flash_attention_takes<T>(a);
  } else {
    return false;
  }
}

}  // namespace

void set_attention_kernels(AttentionKernels kernels) { attention_kernel_choice().set(static_cast<int>(kernels)); }

template <typename T>
AttentionKernels attention_kernels_for(const AttentionShape& a) {
  if (use_flash<T>(a)) return AttentionKernels::flash;
  if (use_mma<T>(a)) return AttentionKernels::mma;
  return use_tiled<T>(a) ? AttentionKernels::tiled : AttentionKernels::naive;
}

AttentionKernels attention_kernels() { return static_cast<AttentionKernels>(attention_kernel_choice().get()); }

template <typename T>
void attention_forward(const AttentionShape& a, const T* q, const T* k, const T* v, const std::int32_t* key_lengths,
                       double scale, double dropout_p, std::uint64_t seed, std::uint64_t rng_stream, acc_t<T>* lse,
                       T* out, Stream stream) {
  const std::int64_t rows = a.batch * a.heads * a.queries;
  if (rows <= 0) return;
  if constexpr (!std::is_same_v<T, double>) {
    if (use_flash<T>(a)) {
      attention_detail::flash_attention_forward<T>(a, q, k, v, key_lengths, scale, dropout_p, seed, rng_stream, lse,
                                                   out, stream);
      return;
    }
    if (use_mma<T>(a)) {
      attention_detail::mma_attention_forward<T>(a, q, k, v, key_lengths, scale, dropout_p, seed, rng_stream, lse, out,
                                                 stream);
      return;
    }
    if (use_tiled<T>(a)) {
      attention_detail::tiled_attention_forward<T>(a, q, k, v, key_lengths, scale, dropout_p, seed, rng_stream, lse,
                                                   out, stream);
      return;
    }
  }
  using A = acc_t<T>;
  const std::size_t bytes =
      shared_bytes_for<T>("attention_forward", padded<A>(a.key_size) + padded<A>(a.keys) + padded<A>(kWarps));
  attention_forward_kernel<T><<<blocks("attention_forward", rows), kThreads, bytes, stream>>>(
      a, q, k, v, key_lengths, static_cast<acc_t<T>>(scale), dropout_of<acc_t<T>>(dropout_p, seed, rng_stream), lse,
      out);
  DRAGOMAN_CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void attention_backward(const AttentionShape& a, const T* q, const T* k, const T* v, const std::int32_t* key_lengths,
                        double scale, double dropout_p, std::uint64_t seed, std::uint64_t rng_stream,
                        const acc_t<T>* lse, const T* dout, T* dq, T* dk, T* dv, acc_t<T>* workspace, Stream stream) {
  if constexpr (!std::is_same_v<T, double>) {
    if (use_flash<T>(a)) {
      attention_detail::flash_attention_backward<T>(a, q, k, v, key_lengths, scale, dropout_p, seed, rng_stream, lse,
                                                    dout, dq, dk, dv, workspace, stream);
      return;
    }
    if (use_mma<T>(a)) {
      attention_detail::mma_attention_backward<T>(a, q, k, v, key_lengths, scale, dropout_p, seed, rng_stream, lse,
                                                  dout, dq, dk, dv, stream);
      return;
    }
    if (use_tiled<T>(a)) {
      attention_detail::tiled_attention_backward<T>(a, q, k, v, key_lengths, scale, dropout_p, seed, rng_stream, lse,
                                                    dout, dq, dk, dv, workspace, stream);
      return;
    }
  }
  const std::int64_t queries = a.batch * a.heads * a.queries, keys = a.batch * a.heads * a.keys;
  const acc_t<T> scale_acc = static_cast<acc_t<T>>(scale);
  const Dropout<acc_t<T>> drop = dropout_of<acc_t<T>>(dropout_p, seed, rng_stream);
  using A = acc_t<T>;
  const std::size_t dq_bytes =
      shared_bytes_for<T>("attention_backward",
                          padded<A>(a.key_size) + padded<A>(a.value_size) + 2 * padded<A>(a.keys) + padded<A>(kWarps));
  const std::size_t dkv_bytes = shared_bytes_for<T>(
      "attention_backward", padded<A>(a.key_size) + padded<A>(a.value_size) + 2 * padded<A>(a.queries));
  if (queries > 0) {
    attention_dq_kernel<T><<<blocks("attention_backward", queries), kThreads, dq_bytes, stream>>>(
        a, q, k, v, key_lengths, scale_acc, drop, lse, dout, dq, workspace);
    DRAGOMAN_CUDA_CHECK(cudaGetLastError());
  }
  if (keys > 0) {
    attention_dkv_kernel<T><<<blocks("attention_backward", keys), kThreads, dkv_bytes, stream>>>(
        a, q, k, v, key_lengths, scale_acc, drop, lse, dout, workspace, dk, dv);
    DRAGOMAN_CUDA_CHECK(cudaGetLastError());
  }
}

#define DRAGOMAN_INSTANTIATE(T)                                                                                        \
  template void attention_forward<T>(const AttentionShape&, const T*, const T*, const T*, const std::int32_t*, double, \
                                     double, std::uint64_t, std::uint64_t, acc_t<T>*, T*, Stream);                     \
  template void attention_backward<T>(const AttentionShape&, const T*, const T*, const T*, const std::int32_t*,        \
                                      double, double, std::uint64_t, std::uint64_t, const acc_t<T>*, const T*, T*, T*, \
                                      T*, acc_t<T>*, Stream);                                                          \
  template AttentionKernels attention_kernels_for<T>(const AttentionShape&);
DRAGOMAN_INSTANTIATE(float)
DRAGOMAN_INSTANTIATE(double)
DRAGOMAN_INSTANTIATE(bf16)
DRAGOMAN_INSTANTIATE(f16)
#undef DRAGOMAN_INSTANTIATE

}  // namespace dragoman::cuda
