// Data-parallel communicators (see communicator.h).
#include "train/communicator.h"

#include <charconv>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <utility>

#include "core/error.h"
#include "kernels/cuda/nccl.h"
#include "train/mpi.h"

namespace dragoman {
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

template <typename T>
void sum_in_rank_order(std::vector<Tensor>& buffers) {
  const std::int64_t n = buffers[0].numel();
  std::vector<const T*> inputs;
  for (std::size_t r = 1; r < buffers.size(); ++r) inputs.push_back(buffers[r].data<T>());
  T* out = buffers[0].data<T>();
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < n; ++i) {
    T sum = out[i];
    for (const T* in : inputs) sum += in[i];
    out[i] = sum;
  }
}

// buffers[0] = the sum of all, in rank order (CPU, f32 or f64).
void sum_local_into_first(std::vector<Tensor>& buffers) {
  require_cpu_dense(buffers);
  if (buffers.size() == 1) return;
  if (buffers[0].dtype() == DType::kF32) {
    sum_in_rank_order<float>(buffers);
  } else {
    sum_in_rank_order<double>(buffers);
  }
}

void copy_first_to_others(std::vector<Tensor>& buffers) {
  for (std::size_t r = 1; r < buffers.size(); ++r) {
    std::memcpy(buffers[r].raw_data(), buffers[0].raw_data(), buffers[0].nbytes());
  }
}

mpi::Op mpi_op(ReduceOp op) {
  return op == ReduceOp::kSum ? mpi::Op::kSum : op == ReduceOp::kMax ? mpi::Op::kMax : mpi::Op::kMin;
}

// CPU workers in one process.
class LocalCommunicator : public Communicator {
 public:
  explicit LocalCommunicator(int local_size) : Communicator(local_size, ProcessGroup{}) {}
  void all_reduce_sum(std::vector<Tensor> buffers) override {
    sum_local_into_first(buffers);
    copy_first_to_others(buffers);
  }
  std::vector<double> all_reduce_host(std::vector<double> values, ReduceOp) override { return values; }
};

// CPU workers across processes: each process sums its workers in rank order, MPI sums the processes.
class MpiCommunicator : public Communicator {
 public:
  MpiCommunicator(int local_size, const ProcessGroup& processes) : Communicator(local_size, processes) {}
  void all_reduce_sum(std::vector<Tensor> buffers) override {
    sum_local_into_first(buffers);
    mpi::all_reduce(buffers[0].raw_data(), static_cast<std::size_t>(buffers[0].numel()), buffers[0].dtype(),
                    mpi::Op::kSum);
    copy_first_to_others(buffers);
  }
  std::vector<double> all_reduce_host(std::vector<double> values, ReduceOp op) override {
    mpi::all_reduce(values.data(), values.size(), DType::kF64, mpi_op(op));
    return values;
  }
  void abort(const std::string& why) noexcept override { mpi::abort(why); }
};

// GPU workers: NCCL between the GPUs (of all processes); MPI for the host values and the bootstrap.
class NcclCommunicator : public Communicator {
 public:
  NcclCommunicator(const std::vector<Device>& devices, const ProcessGroup& processes)
      : Communicator(static_cast<int>(devices.size()), processes) {
    cuda::NcclId id{};
    if (processes.rank == 0) id = cuda::unique_nccl_id();
    if (processes.size > 1) mpi::broadcast(id.data(), id.size(), 0);
    std::vector<int> indices;
    for (const Device& d : devices) indices.push_back(d.index);
    comms_ = std::make_unique<cuda::NcclComms>(id, world_size(), first_rank(), indices);
  }
  void all_reduce_sum(std::vector<Tensor> buffers) override {
    std::vector<void*> pointers;
    for (Tensor& b : buffers) {
      if (b.device().is_cpu() || !b.is_contiguous() || b.numel() != buffers[0].numel() ||
          b.dtype() != buffers[0].dtype() || (b.dtype() != DType::kF32 && b.dtype() != DType::kF64)) {
        throw Error("communicator: expected dense GPU f32/f64 buffers of one size, got " + b.describe());
      }
      pointers.push_back(b.raw_data());
    }
    comms_->all_reduce_sum(pointers, static_cast<std::size_t>(buffers[0].numel()), buffers[0].dtype() == DType::kF64);
  }
  std::vector<double> all_reduce_host(std::vector<double> values, ReduceOp op) override {
    if (processes() > 1) mpi::all_reduce(values.data(), values.size(), DType::kF64, mpi_op(op));
    return values;
  }
  void abort(const std::string& why) noexcept override {
    comms_->abort();
    if (processes() > 1) mpi::abort(why);
  }

 private:
  std::unique_ptr<cuda::NcclComms> comms_;
};

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
  if (!local_devices[0].is_cpu()) return std::make_unique<NcclCommunicator>(local_devices, processes);
  if (processes.size > 1) return std::make_unique<MpiCommunicator>(static_cast<int>(local_devices.size()), processes);
  return std::make_unique<LocalCommunicator>(static_cast<int>(local_devices.size()));
}

}  // namespace dragoman
