// MPI (see mpi.h): OpenMPI from Debian.
#include "train/mpi.h"

#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>

#include "base/error.h"

namespace dragoman::train::mpi {
namespace {

void check(int status, const char* call) {
  if (status == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(status, text, &length);
  throw Error(std::string("MPI: ") + call + " failed: " + std::string(text, static_cast<std::size_t>(length)));
}

MPI_Datatype datatype(DType dtype) {
  if (dtype == DType::kF32) return MPI_FLOAT;
  if (dtype == DType::kF64) return MPI_DOUBLE;
  throw Error("MPI: all-reduce over " + std::string(dtype_name(dtype)) + " (expected F32 or F64)");
}

int count_of(std::size_t count) {
  if (count > static_cast<std::size_t>(std::numeric_limits<int>::max())) {
    throw Error("MPI: " + std::to_string(count) + " elements in one call (at most 2^31 - 1)");
  }
  return static_cast<int>(count);
}

void finalize_at_exit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

}  // namespace

bool built_with_mpi() { return true; }

void initialize(int rank, int size) {
  int initialized = 0;
  check(MPI_Initialized(&initialized), "MPI_Initialized");
  if (!initialized) {
    int provided = 0;
    check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    std::atexit(finalize_at_exit);
  }
  int world_rank = 0, world_size = 0;
  check(MPI_Comm_rank(MPI_COMM_WORLD, &world_rank), "MPI_Comm_rank");
  check(MPI_Comm_size(MPI_COMM_WORLD, &world_size), "MPI_Comm_size");
  if (world_rank != rank || world_size != size) {
    throw Error("MPI: the launcher's environment says process " + std::to_string(rank) + " of " + std::to_string(size) +
                ", MPI says " + std::to_string(world_rank) + " of " + std::to_string(world_size));
  }
}

void all_reduce(void* data, std::size_t count, DType dtype, Op op) {
  const MPI_Op mpi_op = op == Op::kSum ? MPI_SUM : op == Op::kMax ? MPI_MAX : MPI_MIN;
  check(MPI_Allreduce(MPI_IN_PLACE, data, count_of(count), datatype(dtype), mpi_op, MPI_COMM_WORLD), "MPI_Allreduce");
}

void broadcast(void* data, std::size_t bytes, int root) {
  check(MPI_Bcast(data, count_of(bytes), MPI_BYTE, root, MPI_COMM_WORLD), "MPI_Bcast");
}

void abort(const std::string& why) noexcept {
  std::fprintf(stderr, "error: %s\n", why.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::_Exit(1);
}

}  // namespace dragoman::train::mpi
