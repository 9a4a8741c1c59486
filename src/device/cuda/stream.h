// The CUDA stream as kernel headers and ops see it: an opaque handle, so that headers declaring
// CUDA kernels (src/kernels/<name>.h) need no CUDA header and compile in the CPU-only build (where
// no op instantiates a call to them: ops/dispatch.h's on_device). The handle is the runtime's own
// type (cudaStream_t is `CUstream_st*`), so a cudaStream_t passes as a Stream without a cast.
//
// Naming: in Dragoman "stream" means a CUDA stream. The Philox counter stream of the random
// kernels (base/philox.h) is called `rng_stream` on the CUDA side.
#pragma once

struct CUstream_st;  // the CUDA runtime's opaque stream (driver_types.h)

namespace dragoman::cuda {

// A CUDA stream; nullptr is the legacy default stream. Work of one device goes to its context's
// stream (device/cuda/context.h).
using Stream = CUstream_st*;

}  // namespace dragoman::cuda
