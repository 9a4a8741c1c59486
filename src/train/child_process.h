// Runs a long, self-contained piece of work (building a SentencePiece vocabulary) in a forked child
// process, so that SIGINT/SIGTERM can stop it at once: the library doing the work has no way to be
// cancelled, but a child process can be killed. The child shares nothing with the parent after
// the fork; its results must be files.
#pragma once

#include <atomic>
#include <functional>

namespace dragoman::train {

// Runs `work` in a child process and waits for it, checking `stop` (may be nullptr) every 50 ms.
// Returns true when the work finished; false when `stop` became non-zero (the child is killed and
// reaped first). An exception thrown by `work` is rethrown here as dragoman::Error with its message;
// a child that dies otherwise is an Error naming the signal or exit code. If fork() fails, `work`
// runs in this process (and cannot be interrupted).
bool run_in_child_process(const std::function<void()>& work, const std::atomic<int>* stop);

}  // namespace dragoman::train
