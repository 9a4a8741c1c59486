// Data-parallel communicators (see communicator.h).
#include "train/communicator.h"

#include <charconv>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "base/error.h"
#include "device/cuda/nccl.h"
#include "train/mpi.h"

namespace dragoman::train {
namespace {

std::optional<int> environment_int(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return std::nullopt;
  int number = 0;
  const char* end = value + std::strlen(value);
  const auto [stop, error] = std::from_chars(value, end, number);
  if (error != std::errc() || stop != end || number < 0) {
    throw Error(std::string("the launcher's environment variable ") + name + "='" + value + "' is not a number");
  }
  return number;
}

void require_cpu_dense(const std::vector<Tensor>& buffers) {
  if (buffers.empty()) throw Error("communicator: no buffers");
  for (const Tensor& b : buffers) {
    if (!b.device().is_cpu() || !b.is_contiguous() || b.dtype() != buffers[0].dtype() ||
        b.numel() != buffers[0].numel() || (b.dtype() != DType::kF32 && b.dtype() != DType::kF64)) {
      throw Error("communicator: expected dense CPU f32/f64 buffers of one size, got " + b.describe());
    }
  }
}

// Elements [begin, end) of buffers[0] = their sum over the buffers, in rank order.
template <typename T>
void sum_in_rank_order(std::vector<Tensor>& buffers, std::int64_t begin, std::int64_t end) {
  std::vector<const T*> inputs;
  for (std::size_t r = 1; r < buffers.size(); ++r) inputs.push_back(buffers[r].data<T>());
  T* out = buffers[0].data<T>();
#pragma omp parallel for schedule(static)
  for (std::int64_t i = begin; i < end; ++i) {
    T sum = out[i];
    for (const T* in : inputs) sum += in[i];
    out[i] = sum;
  }
}

// Elements [begin, end) of buffers[0] = the sum of all, in rank order (CPU, f32 or f64; checked).
void sum_local_into_first(std::vector<Tensor>& buffers, std::int64_t begin, std::int64_t end) {
  if (buffers.size() == 1) return;
  if (buffers[0].dtype() == DType::kF32) {
    sum_in_rank_order<float>(buffers, begin, end);
  } else {
    sum_in_rank_order<double>(buffers, begin, end);
  }
}

void copy_first_to_others(std::vector<Tensor>& buffers, std::int64_t begin, std::int64_t end) {
  const std::size_t element = dtype_size(buffers[0].dtype());
  for (std::size_t r = 1; r < buffers.size(); ++r) {
    std::memcpy(static_cast<char*>(buffers[r].raw_data()) + begin * element,
                static_cast<const char*>(buffers[0].raw_data()) + begin * element,
                static_cast<std::size_t>(end - begin) * element);
  }
}

mpi::Op mpi_op(ReduceOp op) {
  return op == ReduceOp::kSum ? mpi::Op::kSum : op == ReduceOp::kMax ? mpi::Op::kMax : mpi::Op::kMin;
}

// CPU workers in one process. During the backward pass, the worker that hands over a range last
// sums it (in rank order) while the others go on with their backward passes.
class LocalCommunicator : public Communicator {
 public:
  explicit LocalCommunicator(int local_size) : Communicator(local_size, ProcessGroup{}) {}
  void all_reduce_sum(std::vector<Tensor> buffers) override {
    require_cpu_dense(buffers);
    sum_local_into_first(buffers, 0, buffers[0].numel());
    copy_first_to_others(buffers, 0, buffers[0].numel());
  }
  bool overlaps_backward() const override { return local_size() > 1; }
  void begin_ranges(std::vector<Tensor> buffers) override {
    require_cpu_dense(buffers);
    buffers_ = std::move(buffers);
    arrivals_.clear();
  }
  void range_ready(std::size_t, std::int64_t begin, std::int64_t end) override {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      if (++arrivals_[begin] < local_size()) return;
    }
    sum_local_into_first(buffers_, begin, end);
    copy_first_to_others(buffers_, begin, end);
  }
  void finish_ranges() override {
    std::int64_t summed = 0;
    for (const auto& [begin, count] : arrivals_) summed += count == local_size() ? 1 : 0;
    if (summed != static_cast<std::int64_t>(arrivals_.size()) || arrivals_.empty()) {
      throw Error("communicator: a worker did not hand over every gradient range");
    }
    buffers_.clear();
  }
  std::vector<double> all_reduce_host(std::vector<double> values, ReduceOp) override { return values; }

 private:
  std::mutex mutex_;
  std::vector<Tensor> buffers_;
  std::map<std::int64_t, int> arrivals_;  // range start -> workers that handed it over
};

// CPU workers across processes: each process sums its workers in rank order, MPI sums the processes.
class MpiCommunicator : public Communicator {
 public:
  MpiCommunicator(int local_size, const ProcessGroup& processes) : Communicator(local_size, processes) {}
  void all_reduce_sum(std::vector<Tensor> buffers) override {
    require_cpu_dense(buffers);
    const std::int64_t n = buffers[0].numel();
    sum_local_into_first(buffers, 0, n);
    mpi::all_reduce(buffers[0].raw_data(), static_cast<std::size_t>(n), buffers[0].dtype(), mpi::Op::kSum);
    copy_first_to_others(buffers, 0, n);
  }
  std::vector<double> all_reduce_host(std::vector<double> values, ReduceOp op) override {
    mpi::all_reduce(values.data(), values.size(), DType::kF64, mpi_op(op));
    return values;
  }
  void abort(const std::string& why) noexcept override { mpi::abort(why); }
};

// One GPU in one process: its gradient already is the sum, so nothing is exchanged, and no NCCL
// communicator is bootstrapped (a run on one GPU does not depend on sockets inside the machine).
class SingleGpuCommunicator : public Communicator {
 public:
  SingleGpuCommunicator() : Communicator(1, ProcessGroup{}) {}
  void all_reduce_sum(std::vector<Tensor> buffers) override {
    if (buffers.size() != 1 || buffers[0].device().is_cpu()) {
      throw Error("communicator: expected the one GPU's buffer, got " + std::to_string(buffers.size()) + " buffers");
    }
  }
  std::vector<double> all_reduce_host(std::vector<double> values, ReduceOp) override { return values; }
};

// GPU workers: NCCL between the GPUs (of all processes); MPI for the host values and the bootstrap.
// Comms is cuda::NcclComms: a template, so that only a build with CUDA instantiates it.
template <typename Comms>
class NcclCommunicator : public Communicator {
 public:
  NcclCommunicator(const std::vector<Device>& devices, const ProcessGroup& processes)
      : Communicator(static_cast<int>(devices.size()), processes) {
    cuda::NcclId id{};
    if (processes.rank == 0) id = cuda::unique_nccl_id();
    if (processes.size > 1) mpi::broadcast(id.data(), id.size(), 0);
    std::vector<int> indices;
    for (const Device& d : devices) indices.push_back(d.index);
    comms_ = std::make_unique<Comms>(id, world_size(), first_rank(), indices);
  }
  void all_reduce_sum(std::vector<Tensor> buffers) override {
    comms_->all_reduce_sum(pointers(buffers), static_cast<std::size_t>(buffers[0].numel()),
                           buffers[0].dtype() == DType::kF64);
  }
  // Each range is summed on a stream of its own once its GPU's backward kernels reach it.
  bool overlaps_backward() const override { return true; }
  void begin_ranges(std::vector<Tensor> buffers) override {
    ranges_ = pointers(buffers);
    f64_ = buffers[0].dtype() == DType::kF64;
  }
  void range_ready(std::size_t worker, std::int64_t begin, std::int64_t end) override {
    const std::size_t element = f64_ ? sizeof(double) : sizeof(float);
    comms_->all_reduce_sum_after_compute(worker, static_cast<char*>(ranges_[worker]) + begin * element,
                                         static_cast<std::size_t>(end - begin), f64_);
  }
  void finish_ranges() override { comms_->join_compute_streams(); }
  std::vector<double> all_reduce_host(std::vector<double> values, ReduceOp op) override {
    if (processes() > 1) mpi::all_reduce(values.data(), values.size(), DType::kF64, mpi_op(op));
    return values;
  }
  void abort(const std::string& why) noexcept override {
    comms_->abort();
    if (processes() > 1) mpi::abort(why);
  }

 private:
  static std::vector<void*> pointers(std::vector<Tensor>& buffers) {
    std::vector<void*> result;
    for (Tensor& b : buffers) {
      if (b.device().is_cpu() || !b.is_contiguous() || b.numel() != buffers[0].numel() ||
          b.dtype() != buffers[0].dtype() || (b.dtype() != DType::kF32 && b.dtype() != DType::kF64)) {
        throw Error("communicator: expected dense GPU f32/f64 buffers of one size, got " + b.describe());
      }
      result.push_back(b.raw_data());
    }
    return result;
  }

  std::unique_ptr<Comms> comms_;
  std::vector<void*> ranges_;  // begin_ranges' buffers
  bool f64_ = false;
};

// The NCCL communicator where the build has CUDA ("this build has no CUDA" elsewhere).
template <typename Comms = cuda::NcclComms>
std::unique_ptr<Communicator> nccl_communicator(const std::vector<Device>& devices, const ProcessGroup& processes) {
  if constexpr (kWithCuda) {
    return std::make_unique<NcclCommunicator<Comms>>(devices, processes);
  } else {
    throw_no_cuda("communicator for " + devices[0].str());
  }
}

}  // namespace

ProcessGroup ProcessGroup::from_environment() {
  // OpenMPI's mpirun, then PMI (MPICH, Slurm's PMI2), then Slurm's srun.
  const std::pair<const char*, const char*> launchers[] = {{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
                                                           {"PMI_RANK", "PMI_SIZE"},
                                                           {"SLURM_PROCID", "SLURM_STEP_NUM_TASKS"}};
  for (const auto& [rank_name, size_name] : launchers) {
    const std::optional<int> rank = environment_int(rank_name), size = environment_int(size_name);
    if (!rank || !size) continue;
    if (*size < 1 || *rank >= *size) {
      throw Error(std::string("the launcher's environment says process ") + std::to_string(*rank) + " of " +
                  std::to_string(*size) + " (" + rank_name + ", " + size_name + ")");
    }
    return {*rank, *size};
  }
  return {};
}

Communicator::Communicator(int local_size, ProcessGroup processes) : local_size_(local_size), processes_(processes) {}
Communicator::~Communicator() = default;
void Communicator::abort(const std::string&) noexcept {}

std::unique_ptr<Communicator> make_communicator(const std::vector<Device>& local_devices,
                                                const ProcessGroup& processes) {
  if (local_devices.empty()) throw Error("communicator: no devices");
  if (processes.size > 1) mpi::initialize(processes.rank, processes.size);  // an Error without MPI
  if (!local_devices[0].is_cpu() && local_devices.size() == 1 && processes.size == 1) {
    return std::make_unique<SingleGpuCommunicator>();
  }
  if (!local_devices[0].is_cpu()) return nccl_communicator(local_devices, processes);
  if (processes.size > 1) return std::make_unique<MpiCommunicator>(static_cast<int>(local_devices.size()), processes);
  return std::make_unique<LocalCommunicator>(static_cast<int>(local_devices.size()));
}

}  // namespace dragoman::train
