// The MPI interface of a build without MPI (see mpi.h): every call is an Error saying so.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "base/error.h"
#include "train/mpi.h"

namespace dragoman::train::mpi {
namespace {

[[noreturn]] void no_mpi() {
  throw Error(
      "this build of dragoman has no MPI (install libopenmpi-dev, scripts/install-deps.sh, and rebuild) and cannot "
      "train across processes");
}

}  // namespace

bool built_with_mpi() { return false; }
void initialize(int, int) { no_mpi(); }
void all_reduce(void*, std::size_t, DType, Op) { no_mpi(); }
void broadcast(void*, std::size_t, int) { no_mpi(); }

void abort(const std::string& why) noexcept {
  std::fprintf(stderr, "error: %s\n", why.c_str());
  std::_Exit(1);
}

}  // namespace dragoman::train::mpi
