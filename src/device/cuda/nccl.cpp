// NCCL communicators (see nccl.h).
#include "device/cuda/nccl.h"

#include <cstring>
#include <string>

#include "base/error.h"
#include "device/cuda/check.h"
#include "device/cuda/context.h"

namespace dragoman::cuda {

static_assert(sizeof(ncclUniqueId) == sizeof(NcclId), "ncclUniqueId is 128 bytes");

NcclId unique_nccl_id() {
  ncclUniqueId id;
  DRAGOMAN_NCCL_CHECK(ncclGetUniqueId(&id));
  NcclId bytes;
  std::memcpy(bytes.data(), &id, sizeof id);
  return bytes;
}

struct NcclComms::State {
  std::vector<int> devices;
  std::vector<ncclComm_t> comms;
  // Per device: the stream the overlapped sums run on, and the events that order it with the
  // context stream (computed -> summed, summed -> used).
  std::vector<cudaStream_t> streams;
  std::vector<cudaEvent_t> computed, summed;
};

namespace {

// An earlier collective's asynchronous error (a failed peer, a network error) as an Error.
void check_async(ncclComm_t comm) {
  ncclResult_t async = ncclSuccess;
  DRAGOMAN_NCCL_CHECK(ncclCommGetAsyncError(comm, &async));
  if (async != ncclSuccess) {
    throw_cuda_error("an earlier NCCL collective (ncclCommGetAsyncError)", ncclGetErrorString(async), __FILE__,
                     __LINE__);
  }
}

}  // namespace

NcclComms::NcclComms(const NcclId& id, int world, int first_rank, const std::vector<int>& devices)
    : state_(std::make_unique<State>()) {
  ncclUniqueId unique;
  std::memcpy(&unique, id.data(), sizeof unique);
  state_->devices = devices;
  state_->comms.assign(devices.size(), nullptr);
  // One group: the communicators of one process are created together (NCCL's multi-GPU idiom).
  DRAGOMAN_NCCL_CHECK(ncclGroupStart());
  for (std::size_t i = 0; i < devices.size(); ++i) {
    const DeviceGuard guard(devices[i]);
    DRAGOMAN_NCCL_CHECK(ncclCommInitRank(&state_->comms[i], world, unique, first_rank + static_cast<int>(i)));
  }
  DRAGOMAN_NCCL_CHECK(ncclGroupEnd());
  for (const int device : devices) {
    const DeviceGuard guard(device);
    cudaStream_t stream = nullptr;
    DRAGOMAN_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    state_->streams.push_back(stream);
    for (auto* events : {&state_->computed, &state_->summed}) {
      cudaEvent_t event = nullptr;
      DRAGOMAN_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
      events->push_back(event);
    }
  }
}

NcclComms::~NcclComms() {
  for (ncclComm_t comm : state_->comms) {
    if (comm == nullptr) continue;
    const ncclResult_t status = ncclCommDestroy(comm);
    if (status != ncclSuccess) defer_cuda_error("ncclCommDestroy", ncclGetErrorString(status), __FILE__, __LINE__);
  }
  for (std::size_t i = 0; i < state_->streams.size(); ++i) {
    const DeviceGuard guard(state_->devices[i]);
    DRAGOMAN_CUDA_CHECK_NOTHROW(cudaEventDestroy(state_->computed[i]));
    DRAGOMAN_CUDA_CHECK_NOTHROW(cudaEventDestroy(state_->summed[i]));
    DRAGOMAN_CUDA_CHECK_NOTHROW(cudaStreamDestroy(state_->streams[i]));
  }
}

void NcclComms::all_reduce_sum(const std::vector<void*>& buffers, std::size_t count, bool f64) {
  if (buffers.size() != state_->comms.size()) throw Error("NcclComms::all_reduce_sum: one buffer per device");
  for (ncclComm_t comm : state_->comms) check_async(comm);
  DRAGOMAN_NCCL_CHECK(ncclGroupStart());
  for (std::size_t i = 0; i < buffers.size(); ++i) {
    const DeviceGuard guard(state_->devices[i]);
    DRAGOMAN_NCCL_CHECK(ncclAllReduce(buffers[i], buffers[i], count, f64 ? ncclFloat64 : ncclFloat32, ncclSum,
                                      state_->comms[i], stream_of(state_->devices[i])));
  }
  DRAGOMAN_NCCL_CHECK(ncclGroupEnd());
}

void NcclComms::all_reduce_sum_after_compute(std::size_t i, void* buffer, std::size_t count, bool f64) {
  if (i >= state_->comms.size()) throw Error("NcclComms::all_reduce_sum_after_compute: no device " + std::to_string(i));
  check_async(state_->comms[i]);
  const DeviceGuard guard(state_->devices[i]);
  DRAGOMAN_CUDA_CHECK(cudaEventRecord(state_->computed[i], stream_of(state_->devices[i])));
  DRAGOMAN_CUDA_CHECK(cudaStreamWaitEvent(state_->streams[i], state_->computed[i], 0));
  DRAGOMAN_NCCL_CHECK(ncclAllReduce(buffer, buffer, count, f64 ? ncclFloat64 : ncclFloat32, ncclSum, state_->comms[i],
                                    state_->streams[i]));
}

void NcclComms::join_compute_streams() {
  for (std::size_t i = 0; i < state_->comms.size(); ++i) {
    const DeviceGuard guard(state_->devices[i]);
    DRAGOMAN_CUDA_CHECK(cudaEventRecord(state_->summed[i], state_->streams[i]));
    DRAGOMAN_CUDA_CHECK(cudaStreamWaitEvent(stream_of(state_->devices[i]), state_->summed[i], 0));
  }
}

void NcclComms::abort() noexcept {
  for (ncclComm_t& comm : state_->comms) {
    if (comm != nullptr) (void)ncclCommAbort(comm);
    comm = nullptr;
  }
}

}  // namespace dragoman::cuda
