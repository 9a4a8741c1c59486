// The host emulation's runtime (emulated_cuda.h): one launch at a time, a block's threads as
// std::threads meeting at barriers with a bounded wait.
#include "emulated_cuda/emulated_cuda.h"

#include <array>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <new>
#include <thread>
#include <vector>

thread_local EmulatedDim3 threadIdx;
thread_local EmulatedDim3 blockIdx;

namespace dragoman::emulation {
namespace {

constexpr auto kPatience = std::chrono::seconds(60);

// n threads meet: each waits until the last arrives (generation counting, reusable at once).
class Barrier {
 public:
  explicit Barrier(int n) : n_(n) {}
  // The last to arrive runs `complete` (under the barrier's lock, every other thread waiting).
  void arrive_and_wait(const char* call, const std::function<void()>& complete = {}) {
    std::unique_lock<std::mutex> lock(mutex_);
    const std::uint64_t generation = generation_;
    if (++arrived_ == n_) {
      if (complete) complete();
      arrived_ = 0;
      ++generation_;
      ready_.notify_all();
      return;
    }
    if (!ready_.wait_for(lock, kPatience, [&] { return generation_ != generation; })) {
      std::fprintf(stderr, "emulated CUDA: %s: %d of %d threads arrived in 60 s (a call some threads skip?)\n", call,
                   arrived_, n_);
      std::abort();
    }
  }

 private:
  std::mutex mutex_;
  std::condition_variable ready_;
  const int n_;
  int arrived_ = 0;
  std::uint64_t generation_ = 0;
};

struct SharedDeleter {
  void operator()(unsigned char* p) const { ::operator delete(p, std::align_val_t(128)); }
};

// The running launch.
struct Launch {
  Launch(unsigned threads, std::size_t bytes)
      : shared(static_cast<unsigned char*>(::operator new(bytes, std::align_val_t(128)))),
        shared_bytes(bytes),
        block(static_cast<int>(threads)),
        slots(threads / 32),
        wmma_calls(threads, 0) {
    for (unsigned w = 0; w < threads / 32; ++w) warps.push_back(std::make_unique<Barrier>(32));
  }
  std::unique_ptr<unsigned char, SharedDeleter> shared;  // exact size: a sanitizer sees overruns
  std::size_t shared_bytes;
  Barrier block;
  std::vector<std::unique_ptr<Barrier>> warps;
  // warp_exchange's values, a warp's lanes, in two sets used by turns: a lane writes a set again
  // only after the warp has met once more, by when every lane has read it.
  std::vector<std::array<std::array<float, 32>, 2>> slots;
  std::vector<std::uint64_t> wmma_calls;  // each thread's WMMA calls so far
};

Launch* running = nullptr;
std::size_t limit = 227 * 1024;

int warp() { return static_cast<int>(threadIdx.x) / 32; }

// WMMA's calls are warp-wide: at every barrier each lane of a warp has made as many as the others.
void check_wmma_calls(unsigned first_warp, unsigned warps) {
  for (unsigned w = first_warp; w < first_warp + warps; ++w) {
    for (unsigned l = 1; l < 32; ++l) {
      if (running->wmma_calls[32 * w + l] != running->wmma_calls[32 * w]) {
        std::fprintf(stderr, "emulated CUDA: lane %u of warp %u made %llu WMMA calls, lane 0 %llu (block %u)\n", l, w,
                     static_cast<unsigned long long>(running->wmma_calls[32 * w + l]),
                     static_cast<unsigned long long>(running->wmma_calls[32 * w]), blockIdx.x);
        std::abort();
      }
    }
  }
}

}  // namespace

unsigned char* dynamic_shared() { return running->shared.get(); }
int lane() { return static_cast<int>(threadIdx.x) % 32; }
void warp_sync(const char* call) {
  const auto w = static_cast<unsigned>(warp());
  running->warps[w]->arrive_and_wait(call, [w] { check_wmma_calls(w, 1); });
}
void block_sync() {
  running->block.arrive_and_wait("__syncthreads",
                                 [] { check_wmma_calls(0, static_cast<unsigned>(running->warps.size())); });
}
void count_wmma_call() { ++running->wmma_calls[threadIdx.x]; }

thread_local unsigned exchanges = 0;  // the calling thread's warp_exchange calls in this launch

float warp_exchange(float x, int offset) {
  std::array<float, 32>& slots = running->slots[static_cast<std::size_t>(warp())][exchanges++ % 2];
  slots[static_cast<std::size_t>(lane())] = x;
  warp_sync("__shfl_xor_sync");
  return slots[static_cast<std::size_t>(lane() ^ offset)];
}

void require(bool ok, const char* call, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "emulated CUDA: %s: %s (block %u, thread %u)\n", call, what, blockIdx.x, threadIdx.x);
  std::abort();
}

void require_shared(const void* p, std::size_t bytes, const char* call) {
  const auto* at = static_cast<const unsigned char*>(p);
  const unsigned char* base = running->shared.get();
  require(at >= base && at + bytes <= base + running->shared_bytes, call,
          "a tile outside the block's dynamic shared memory");
}

void run_blocks(std::int64_t blocks, unsigned threads, std::size_t shared_bytes, const std::function<void()>& body) {
  if (blocks <= 0) return;
  require(threads > 0 && threads % 32 == 0, "launch", "threads a multiple of 32");
  Launch launch(threads, shared_bytes);
  running = &launch;
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      threadIdx.x = t;
      exchanges = 0;
      for (std::int64_t b = 0; b < blocks; ++b) {
        blockIdx.x = static_cast<unsigned>(b);
        if (t == 0) std::memset(launch.shared.get(), 0xFF, shared_bytes);  // NaN in float, bf16 and f16
        block_sync();
        body();
        block_sync();
      }
    });
  }
  for (std::thread& thread : pool) thread.join();
  running = nullptr;
}

std::size_t shared_limit() { return limit; }
void set_shared_limit(std::size_t bytes) { limit = bytes; }

}  // namespace dragoman::emulation
