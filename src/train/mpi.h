// The MPI calls of the data-parallel communicator (train/communicator.h), behind a header without
// MPI types: the CPU workers' all-reduce across processes and the bootstrap of NCCL. A build without
// MPI (no OpenMPI found by CMake) links no_mpi.cpp, whose functions throw an Error saying so.
// Only the thread that drives the training loop calls these (MPI_THREAD_FUNNELED).
#pragma once

#include <cstddef>
#include <string>

#include "base/dtype.h"

namespace dragoman::train::mpi {

bool built_with_mpi();
// MPI_Init_thread once per process (MPI_Finalize at exit); checks that MPI's world is `size`
// processes with this one at `rank`, as the launcher's environment said.
void initialize(int rank, int size);
// In place over all processes: sum, max or min of `count` elements of `dtype` (F32 or F64).
enum class Op { kSum, kMax, kMin };
void all_reduce(void* data, std::size_t count, DType dtype, Op op);
// `bytes` bytes from process `root` to all.
void broadcast(void* data, std::size_t bytes, int root);
// Prints `why` and ends every process of the launch (MPI_Abort). Never returns.
[[noreturn]] void abort(const std::string& why) noexcept;

}  // namespace dragoman::train::mpi
