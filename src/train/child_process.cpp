// Work in a child process (see child_process.h).
#include "train/child_process.h"

#include <pthread.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <exception>
#include <string>
#include <thread>

#include "base/error.h"

namespace dragoman::train {
namespace {

// Everything the child wrote to the pipe (its error message, if any).
std::string read_all(int fd) {
  std::string text;
  char buffer[4096];
  while (true) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n > 0) {
      text.append(buffer, static_cast<std::size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      return text;
    }
  }
}

[[noreturn]] void run_child(const std::function<void()>& work, int message_fd, pid_t parent) {
  // Ctrl-C reaches the whole process group: the child just dies, the parent decides what to do.
  // (The parent blocks both in every thread and takes them on a thread of its own: the child, which
  // is a copy of the forking thread alone, unblocks them.)
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
  sigset_t stop_set;
  sigemptyset(&stop_set);
  sigaddset(&stop_set, SIGINT);
  sigaddset(&stop_set, SIGTERM);
  ::pthread_sigmask(SIG_UNBLOCK, &stop_set, nullptr);
  // A parent that dies (a second signal, kill -9) takes the child with it.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(1);  // it died before the line above
  int code = 0;
  try {
    work();
  } catch (const std::exception& e) {
    // At most what an empty pipe takes without blocking (the parent reads it after the child exits).
    const std::string message = std::string(e.what()).substr(0, 4000);
    [[maybe_unused]] const ssize_t written = ::write(message_fd, message.data(), message.size());
    code = 1;
  } catch (...) {
    code = 1;
  }
  ::_exit(code);  // no atexit handlers or stdio flushes of the parent's state
}

}  // namespace

bool run_in_child_process(const std::function<void()>& work, const std::atomic<int>* stop) {
  int fds[2];
  if (::pipe(fds) != 0) {
    work();
    return true;
  }
  // With SIGCHLD ignored (inherited from some launchers) the kernel would reap the child itself and
  // waitpid would fail: the default disposition while the child runs.
  struct DefaultSigchld {
    struct sigaction previous {};
    DefaultSigchld() {
      struct sigaction action {};
      action.sa_handler = SIG_DFL;
      sigemptyset(&action.sa_mask);
      ::sigaction(SIGCHLD, &action, &previous);
    }
    ~DefaultSigchld() { ::sigaction(SIGCHLD, &previous, nullptr); }
  } default_sigchld;
  const pid_t parent = ::getpid();
  const pid_t child = ::fork();
  if (child < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    work();
    return true;
  }
  if (child == 0) {
    ::close(fds[0]);
    run_child(work, fds[1], parent);
  }
  ::close(fds[1]);
  int status = 0;
  while (true) {
    const pid_t done = ::waitpid(child, &status, WNOHANG);
    if (done == child) break;
    if (done < 0 && errno != EINTR) {
      ::close(fds[0]);
      throw Error(std::string("waiting for a child process: ") + std::strerror(errno));
    }
    if (stop != nullptr && stop->load() != 0) {
      ::kill(child, SIGKILL);
      while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
      }
      ::close(fds[0]);
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  const std::string message = read_all(fds[0]);
  ::close(fds[0]);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return true;
  if (WIFSIGNALED(status) && (WTERMSIG(status) == SIGINT || WTERMSIG(status) == SIGTERM) && stop != nullptr) {
    // Ctrl-C reaches the child too; give the parent's handler a moment to have set the flag.
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  if (stop != nullptr && stop->load() != 0) return false;
  if (!message.empty()) throw Error(message);
  if (WIFSIGNALED(status)) {
    throw Error("the child process building it was killed by signal " + std::to_string(WTERMSIG(status)));
  }
  throw Error("the child process building it exited with code " + std::to_string(WEXITSTATUS(status)));
}

}  // namespace dragoman::train
