// The CUDA interface of a CPU-only build: every function declared by the CUDA-free headers of
// kernels/cuda/ exists and throws "cuda::NAME: this build has no CUDA", so ops and core/ call the
// CUDA side without #ifdef. Linked into dragoman_core only when the build has no CUDA (the CUDA
// build compiles the real definitions into dragoman_cuda instead). device_count() is 0 and
// release_contexts() does nothing, because there is nothing to count or release. A new function
// in a CUDA-free header gets its stub here.
#include <string>
#include <utility>

#include "base/error.h"
#include "kernels/cuda/adam.h"
#include "kernels/cuda/attention.h"
#include "device/cuda/cast.h"
#include "device/cuda/context.h"
#include "device/cuda/copy.h"
#include "kernels/cuda/cross_entropy.h"
#include "kernels/cuda/elementwise.h"
#include "kernels/cuda/embedding.h"
#include "kernels/cuda/gather.h"
#include "kernels/cuda/gemm.h"
#include "kernels/cuda/layer_norm.h"
#include "device/cuda/memory.h"
#include "device/cuda/nccl.h"
#include "device/cuda/pinned.h"
#include "device/cuda/readback.h"
#include "kernels/cuda/random.h"
#include "device/cuda/runtime_info.h"
#include "kernels/cuda/top_k.h"

namespace dragoman::cuda {
namespace {

[[noreturn]] void no_cuda(const char* name) {
  throw Error(std::string("cuda::") + name + ": this build has no CUDA (rebuild with -DDRAGOMAN_CUDA=ON)");
}

}  // namespace

// nccl.h
NcclId unique_nccl_id() { no_cuda("unique_nccl_id"); }
struct NcclComms::State {};
NcclComms::NcclComms(const NcclId&, int, int, const std::vector<int>&) { no_cuda("NcclComms"); }
NcclComms::~NcclComms() = default;
void NcclComms::all_reduce_sum(const std::vector<void*>&, std::size_t, bool) { no_cuda("NcclComms"); }
void NcclComms::all_reduce_sum_after_compute(std::size_t, void*, std::size_t, bool) { no_cuda("NcclComms"); }
void NcclComms::join_compute_streams() { no_cuda("NcclComms"); }
void NcclComms::abort() noexcept {}

// gather.h
void gather_row_prefixes(const void*, std::int64_t, void*, std::int64_t, const std::int32_t*, std::int64_t,
                         std::int64_t, Stream) {
  no_cuda("gather_row_prefixes");
}
void scatter_row_prefixes(const void*, std::int64_t, void*, std::int64_t, const std::int32_t*, std::int64_t,
                          std::int64_t, Stream) {
  no_cuda("scatter_row_prefixes");
}

// top_k.h
void top_k_rows(const float*, std::int64_t, std::int64_t, std::int64_t, std::int32_t, std::int32_t, std::int32_t,
                float*, std::int32_t*, float*, Stream) {
  no_cuda("top_k_rows");
}

// runtime_info.h
int device_count() { return 0; }
std::string no_device_reason() { return "a build without CUDA"; }
std::string runtime_info() { return "CUDA: no (CPU-only build)\n"; }
std::string device_name(int) { no_cuda("device_name"); }
std::string cublas_version() { no_cuda("cublas_version"); }

// context.h
DeviceGuard::DeviceGuard(int) { no_cuda("DeviceGuard"); }
DeviceGuard::~DeviceGuard() = default;
const Context& context(int) { no_cuda("context"); }
void synchronize(int) { no_cuda("synchronize"); }
void release_contexts() {}
bool built_with_cuda() { return false; }

// memory.h
void* device_malloc(int, std::size_t) { no_cuda("device_malloc"); }
void device_free(int, void*) { no_cuda("device_free"); }
void* pinned_malloc(std::size_t) { no_cuda("pinned_malloc"); }
void pinned_free(void*) { no_cuda("pinned_free"); }
void copy_async(void*, const void*, std::size_t, Stream) { no_cuda("copy_async"); }
void copy_2d_async(void*, std::size_t, const void*, std::size_t, std::size_t, std::size_t, Stream) {
  no_cuda("copy_2d_async");
}
void copy_peer_async(void*, int, const void*, int, std::size_t, Stream) { no_cuda("copy_peer_async"); }
void memset_async(void*, int, std::size_t, Stream) { no_cuda("memset_async"); }
void stream_synchronize(Stream) { no_cuda("stream_synchronize"); }

// pinned.h (a PinnedBuffer can only be empty here)
PinnedBuffer::~PinnedBuffer() = default;
PinnedBuffer::PinnedBuffer(PinnedBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), capacity_(std::exchange(other.capacity_, 0)) {}
PinnedBuffer& PinnedBuffer::operator=(PinnedBuffer&& other) noexcept {
  data_ = std::exchange(other.data_, nullptr);
  capacity_ = std::exchange(other.capacity_, 0);
  return *this;
}
void PinnedBuffer::reserve(std::size_t) { no_cuda("PinnedBuffer::reserve"); }
void PinnedBuffer::release() noexcept {}

// readback.h (a Readback can never start here)
Readback::~Readback() = default;
void Readback::start(const void*, std::size_t, int) { no_cuda("Readback::start"); }
const void* Readback::wait() { no_cuda("Readback::wait"); }

// copy.h
void copy_strided(const void*, const std::int64_t*, void*, const std::int64_t*, const std::int64_t*, int, std::size_t,
                  Stream) {
  no_cuda("copy_strided");
}

// cast.h
template <typename From, typename To>
void cast(const From*, To*, std::size_t, Stream) {
  no_cuda("cast");
}
template void cast<float, bf16>(const float*, bf16*, std::size_t, Stream);
template void cast<float, f16>(const float*, f16*, std::size_t, Stream);
template void cast<bf16, float>(const bf16*, float*, std::size_t, Stream);
template void cast<f16, float>(const f16*, float*, std::size_t, Stream);

// random.h
void uniform_fill(float*, std::size_t, std::uint64_t, std::uint64_t, std::uint64_t, Stream) { no_cuda("uniform_fill"); }

// gemm.h
template <typename T, typename C>
void gemm(bool, bool, std::int64_t, std::int64_t, std::int64_t, acc_t<T>, const T*, std::int64_t, const T*,
          std::int64_t, acc_t<T>, C*, std::int64_t, int) {
  no_cuda("gemm");
}
template <typename T>
void gemm_bias(bool, bool, std::int64_t, std::int64_t, std::int64_t, const T*, std::int64_t, const T*, std::int64_t,
               const T*, T*, int, bool) {
  no_cuda("gemm_bias");
}
template <typename T>
bool gemm_bias_grad(std::int64_t, std::int64_t, std::int64_t, const T*, std::int64_t, const T*, std::int64_t, acc_t<T>*,
                    std::int64_t, acc_t<T>*, int) {
  no_cuda("gemm_bias_grad");
}
template <typename T>
bool gemm_bias_relu_mask(bool, bool, std::int64_t, std::int64_t, std::int64_t, const T*, std::int64_t, const T*,
                         std::int64_t, const T*, T*, void*, int) {
  no_cuda("gemm_bias_relu_mask");
}
template <typename T>
bool gemm_drelu(bool, bool, std::int64_t, std::int64_t, std::int64_t, const T*, std::int64_t, const T*, std::int64_t,
                T*, const void*, int) {
  no_cuda("gemm_drelu");
}
GradEpilogues grad_epilogues() { no_cuda("grad_epilogues"); }
void set_grad_epilogues(GradEpilogues) { no_cuda("set_grad_epilogues"); }
template <typename T>
void gemm_strided_batched(bool, bool, std::int64_t, std::int64_t, std::int64_t, acc_t<T>, const T*, std::int64_t,
                          std::int64_t, const T*, std::int64_t, std::int64_t, acc_t<T>, T*, std::int64_t, std::int64_t,
                          std::int64_t, int) {
  no_cuda("gemm_strided_batched");
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

// cross_entropy.h
template <typename T>
void log_softmax(T*, std::int64_t, std::int64_t, Stream) {
  no_cuda("log_softmax");
}
template <typename T>
void cross_entropy_forward(T*, const std::int32_t*, std::int64_t, std::int64_t, std::int32_t, double, double*, double*,
                           double*, Stream) {
  no_cuda("cross_entropy_forward");
}
template <typename T>
void cross_entropy_fused(T*, const std::int32_t*, std::int64_t, std::int64_t, std::int32_t, double, double*, double*,
                         double*, Stream, double) {
  no_cuda("cross_entropy_fused");
}
#define DRAGOMAN_INSTANTIATE(T)                                                                                     \
  template void log_softmax<T>(T*, std::int64_t, std::int64_t, Stream);                                             \
  template void cross_entropy_forward<T>(T*, const std::int32_t*, std::int64_t, std::int64_t, std::int32_t, double, \
                                         double*, double*, double*, Stream);                                        \
  template void cross_entropy_fused<T>(T*, const std::int32_t*, std::int64_t, std::int64_t, std::int32_t, double,   \
                                       double*, double*, double*, Stream, double);
DRAGOMAN_INSTANTIATE(float)
DRAGOMAN_INSTANTIATE(bf16)
DRAGOMAN_INSTANTIATE(f16)
#undef DRAGOMAN_INSTANTIATE

// elementwise.h
template <typename T>
void add(const T*, const T*, T*, std::int64_t, Stream) {
  no_cuda("add");
}
template <typename T>
void accumulate(T*, const T*, std::int64_t, Stream) {
  no_cuda("accumulate");
}
template <typename T>
void scale(T*, acc_t<T>, std::int64_t, Stream) {
  no_cuda("scale");
}
template <typename T>
void relu_forward(const T*, T*, std::int64_t, Stream) {
  no_cuda("relu_forward");
}
template <typename T>
void relu_backward(const T*, const T*, T*, std::int64_t, Stream) {
  no_cuda("relu_backward");
}
template <typename T>
void swish_forward(const T*, T*, std::int64_t, Stream) {
  no_cuda("swish_forward");
}
template <typename T>
void swish_backward(const T*, const T*, T*, std::int64_t, Stream) {
  no_cuda("swish_backward");
}
template <typename T>
void bias_add(T*, const T*, std::int64_t, std::int64_t, Stream) {
  no_cuda("bias_add");
}
template <typename T>
void bias_backward(const T*, acc_t<T>*, std::int64_t, std::int64_t, acc_t<T>*, Stream) {
  no_cuda("bias_backward");
}
template <typename T>
void dropout(const T*, T*, std::int64_t, double, std::uint64_t, std::uint64_t, Stream) {
  no_cuda("dropout");
}
template <typename T>
void dropout_add(const T*, const T*, T*, std::int64_t, double, std::uint64_t, std::uint64_t, Stream) {
  no_cuda("dropout_add");
}
template <typename T>
void sum_squares(const T*, std::int64_t, double*, double*, Stream) {
  no_cuda("sum_squares");
}
void norm_factor(const double*, double, double, double*, Stream) { no_cuda("norm_factor"); }

// layer_norm.h
template <typename T>
void layer_norm_forward(const T*, const T*, const T*, T*, acc_t<T>*, acc_t<T>*, std::int64_t, std::int64_t, double,
                        Stream) {
  no_cuda("layer_norm_forward");
}
template <typename T>
void layer_norm_backward(const T*, const T*, const T*, const acc_t<T>*, const acc_t<T>*, T*, acc_t<T>*, acc_t<T>*,
                         std::int64_t, std::int64_t, acc_t<T>*, Stream, const DxDropout<T>&) {
  no_cuda("layer_norm_backward");
}

// attention.h
void set_attention_kernels(AttentionKernels) { no_cuda("set_attention_kernels"); }
AttentionKernels attention_kernels() { no_cuda("attention_kernels"); }
template <typename T>
void attention_forward(const AttentionShape&, const T*, const T*, const T*, const std::int32_t*, double, double,
                       std::uint64_t, std::uint64_t, acc_t<T>*, T*, Stream) {
  no_cuda("attention_forward");
}
template <typename T>
void attention_backward(const AttentionShape&, const T*, const T*, const T*, const std::int32_t*, double, double,
                        std::uint64_t, std::uint64_t, const acc_t<T>*, const T*, T*, T*, T*, acc_t<T>*, Stream) {
  no_cuda("attention_backward");
}

// embedding.h
template <typename T>
void embedding_forward(const std::int32_t*, const T*, const T*, T*, std::int64_t, std::int64_t, std::int64_t,
                       std::int64_t, double, Stream) {
  no_cuda("embedding_forward");
}
std::size_t embedding_backward_workspace(std::int64_t, std::int64_t) { no_cuda("embedding_backward_workspace"); }
template <typename T>
void embedding_backward(const std::int32_t*, const T*, acc_t<T>*, acc_t<T>*, std::int64_t, std::int64_t, std::int64_t,
                        std::int64_t, double, std::int64_t, void*, Stream) {
  no_cuda("embedding_backward");
}

#define DRAGOMAN_INSTANTIATE(T)                                                                                        \
  template void add<T>(const T*, const T*, T*, std::int64_t, Stream);                                                  \
  template void accumulate<T>(T*, const T*, std::int64_t, Stream);                                                     \
  template void scale<T>(T*, acc_t<T>, std::int64_t, Stream);                                                          \
  template void relu_forward<T>(const T*, T*, std::int64_t, Stream);                                                   \
  template void relu_backward<T>(const T*, const T*, T*, std::int64_t, Stream);                                        \
  template void swish_forward<T>(const T*, T*, std::int64_t, Stream);                                                  \
  template void swish_backward<T>(const T*, const T*, T*, std::int64_t, Stream);                                       \
  template void bias_add<T>(T*, const T*, std::int64_t, std::int64_t, Stream);                                         \
  template void bias_backward<T>(const T*, acc_t<T>*, std::int64_t, std::int64_t, acc_t<T>*, Stream);                  \
  template void dropout<T>(const T*, T*, std::int64_t, double, std::uint64_t, std::uint64_t, Stream);                  \
  template void dropout_add<T>(const T*, const T*, T*, std::int64_t, double, std::uint64_t, std::uint64_t, Stream);    \
  template void sum_squares<T>(const T*, std::int64_t, double*, double*, Stream);                                      \
  template void layer_norm_forward<T>(const T*, const T*, const T*, T*, acc_t<T>*, acc_t<T>*, std::int64_t,            \
                                      std::int64_t, double, Stream);                                                   \
  template void layer_norm_backward<T>(const T*, const T*, const T*, const acc_t<T>*, const acc_t<T>*, T*, acc_t<T>*,  \
                                       acc_t<T>*, std::int64_t, std::int64_t, acc_t<T>*, Stream, const DxDropout<T>&); \
  template void attention_forward<T>(const AttentionShape&, const T*, const T*, const T*, const std::int32_t*, double, \
                                     double, std::uint64_t, std::uint64_t, acc_t<T>*, T*, Stream);                     \
  template void attention_backward<T>(const AttentionShape&, const T*, const T*, const T*, const std::int32_t*,        \
                                      double, double, std::uint64_t, std::uint64_t, const acc_t<T>*, const T*, T*, T*, \
                                      T*, acc_t<T>*, Stream);                                                          \
  template void embedding_forward<T>(const std::int32_t*, const T*, const T*, T*, std::int64_t, std::int64_t,          \
                                     std::int64_t, std::int64_t, double, Stream);                                      \
  template void embedding_backward<T>(const std::int32_t*, const T*, acc_t<T>*, acc_t<T>*, std::int64_t, std::int64_t, \
                                      std::int64_t, std::int64_t, double, std::int64_t, void*, Stream);
DRAGOMAN_INSTANTIATE(float)
DRAGOMAN_INSTANTIATE(double)
DRAGOMAN_INSTANTIATE(bf16)
DRAGOMAN_INSTANTIATE(f16)
#undef DRAGOMAN_INSTANTIATE

// adam.h
template <typename T>
void adam_step(T*, const T*, T*, T*, std::int64_t, const cpu::AdamHyper&, const double*, Stream) {
  no_cuda("adam_step");
}
template void adam_step<float>(float*, const float*, float*, float*, std::int64_t, const cpu::AdamHyper&,
                               const double*, Stream);
template void adam_step<double>(double*, const double*, double*, double*, std::int64_t, const cpu::AdamHyper&,
                                const double*, Stream);
template <typename M>
void adam_step(float*, const float*, float*, float*, std::int64_t, const cpu::AdamHyper&, M*, const double*, Stream) {
  no_cuda("adam_step");
}
template void adam_step<bf16>(float*, const float*, float*, float*, std::int64_t, const cpu::AdamHyper&, bf16*,
                              const double*, Stream);
template void adam_step<f16>(float*, const float*, float*, float*, std::int64_t, const cpu::AdamHyper&, f16*,
                             const double*, Stream);

}  // namespace dragoman::cuda
