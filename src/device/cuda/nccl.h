// NCCL for the data-parallel communicator (train/communicator.h), behind a CUDA-free header: one
// NCCL communicator per local GPU, created in one group over a world of `world` ranks, and the
// sum all-reduce of one buffer per GPU, each on its device's context stream (so it runs after the
// backward pass that wrote the gradients, and Adam after it, without a host wait). Called only
// inside `if constexpr (kWithCuda)` (train/communicator.cpp): the CPU-only build compiles no call.
#pragma once

#include <array>
#include <cstddef>
#include <memory>
#include <vector>

namespace dragoman::cuda {

// ncclUniqueId's bytes: made by one process (unique_nccl_id) and sent to the others (over MPI).
using NcclId = std::array<char, 128>;
NcclId unique_nccl_id();

class NcclComms {
 public:
  // Ranks first_rank .. first_rank + devices.size() - 1 of `world`, one per device of `devices`.
  NcclComms(const NcclId& id, int world, int first_rank, const std::vector<int>& devices);
  ~NcclComms();  // ncclCommDestroy (errors kept: deferred_error.h)
  NcclComms(const NcclComms&) = delete;
  NcclComms& operator=(const NcclComms&) = delete;

  // buffers[i]: `count` floats (or doubles) on devices[i]; each ends up holding the sum over all
  // ranks. Asynchronous on the context streams; an NCCL error (also an asynchronous one reported by
  // an earlier collective) is a dragoman::Error.
  void all_reduce_sum(const std::vector<void*>& buffers, std::size_t count, bool f64);
  // The sum of one range of device i's buffer, called from the thread that drives device i (each
  // communicator is used by one thread; every rank hands over the same ranges in the same order):
  // enqueued on a stream of its own that first waits for the work enqueued so far on device i's
  // context stream (an event), so the backward pass goes on while earlier ranges are summed.
  void all_reduce_sum_after_compute(std::size_t i, void* buffer, std::size_t count, bool f64);
  // Every context stream waits for the sums all_reduce_sum_after_compute enqueued on its device.
  void join_compute_streams();
  // ncclCommAbort on every communicator: collectives waiting for a failed peer return. Never throws.
  void abort() noexcept;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace dragoman::cuda
