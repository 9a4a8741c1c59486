// How the workers of a data-parallel run (DESIGN.md "Data parallelism") exchange gradients and
// decisions. A run has world_size() workers in processes() processes; this process holds
// local_size() of them (one thread each, one device each), with global ranks first_rank() ..
// first_rank() + local_size() - 1. Every process runs the same devices list, so the world is
// processes x local devices, and process p's worker i has rank p * local_size() + i.
//
// Four implementations, chosen by make_communicator():
//   local: CPU workers in one process (--devices cpu:4); sums in rank order, so the result does
//          not depend on anything but the inputs (deterministic, like the CPU kernels);
//   MPI:   CPU workers across processes launched by mpirun/srun (OpenMPI), MPI_Allreduce over the
//          process sums (each process first sums its own workers in rank order);
//   NCCL:  GPU workers, one communicator per GPU, across processes bootstrapped over MPI;
//   one GPU: a single GPU in a single process exchanges nothing (no NCCL bootstrap).
// Collectives are called by the one thread of each process that drives the loop (never by
// several threads at once).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "device/device.h"

namespace dragoman::train {

// Where this process stands among the processes of an MPI launch (rank 0 of 1 when not launched
// by MPI). Read from the launcher's environment (OpenMPI's OMPI_COMM_WORLD_*, PMI/PMIx's, Slurm's).
struct ProcessGroup {
  int rank = 0;
  int size = 1;
  // The group of this process's launch; {0, 1} without one. A size above 1 in a build without MPI
  // is an Error saying so.
  static ProcessGroup from_environment();
};

enum class ReduceOp { kSum, kMax, kMin };

class Communicator {
 public:
  Communicator(int local_size, ProcessGroup processes);
  virtual ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int world_size() const { return local_size_ * processes_.size; }
  int local_size() const { return local_size_; }
  int first_rank() const { return processes_.rank * local_size_; }
  int process_rank() const { return processes_.rank; }
  int processes() const { return processes_.size; }

  // `buffers`: one per local worker (same numel and dtype, f32 or f64, dense, each on its worker's
  // device). Afterwards every buffer of every worker holds the element-wise sum over all workers.
  // (Tensors are handles: the vector holds views of the workers' buffers.)
  virtual void all_reduce_sum(std::vector<Tensor> buffers) = 0;
  // The same sum, started during the backward pass (overlaps_backward()): begin_ranges takes the
  // buffers; each local worker then hands over ranges of its buffer as they become final
  // (range_ready, from its own thread, every worker the same ranges in the same order), and a range
  // is summed once every local worker has handed it over; after finish_ranges (this thread, all
  // workers done) the buffers hold the sums (on GPUs: work later enqueued on the workers' streams
  // sees them). Without overlap these do nothing but all_reduce_sum in finish_ranges.
  virtual bool overlaps_backward() const { return false; }
  virtual void begin_ranges(std::vector<Tensor> buffers) { pending_ = std::move(buffers); }
  virtual void range_ready(std::size_t /*worker*/, std::int64_t /*begin*/, std::int64_t /*end*/) {}
  virtual void finish_ranges() { all_reduce_sum(std::move(pending_)); }
  // Across processes: the element-wise reduction of a few host values (every process gets it).
  virtual std::vector<double> all_reduce_host(std::vector<double> values, ReduceOp op) = 0;
  // After a failure in this process: ends the other processes too (MPI_Abort; NCCL's abort), so
  // nothing waits for a worker that will never come. Never returns when there are other processes.
  virtual void abort(const std::string& why) noexcept;

 private:
  int local_size_;
  ProcessGroup processes_;
  std::vector<Tensor> pending_;  // begin_ranges' buffers, without overlap
};

// The communicator for `local_devices` (all CPU, or all CUDA devices, each at most once) in
// `processes`: local for CPU workers in one process, MPI for CPU workers across processes, NCCL
// for GPUs. An Error names what this build or launch lacks.
std::unique_ptr<Communicator> make_communicator(const std::vector<Device>& local_devices,
                                                const ProcessGroup& processes);

}  // namespace dragoman::train
