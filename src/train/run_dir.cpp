// Run directory files (see run_dir.h).
#include "train/run_dir.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <regex>
#include <sstream>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "io/atomic_file.h"
#include "io/read_file.h"

namespace dragoman::train {

namespace fs = std::filesystem;

namespace {

std::string checkpoint_file(const std::string& run_dir, std::int64_t step, CheckpointKind kind, const char* suffix) {
  char name[96];
  std::snprintf(name, sizeof name, "%s-%08lld%s", kind == CheckpointKind::kRegular ? "checkpoint" : "interrupted",
                static_cast<long long>(step), suffix);
  return (fs::path(run_dir) / "checkpoints" / name).string();
}

// The complete checkpoints of one kind (model and state file both present), ascending.
std::vector<std::int64_t> complete_steps(const std::string& run_dir, CheckpointKind kind) {
  std::vector<std::int64_t> steps;
  const fs::path dir = fs::path(run_dir) / "checkpoints";
  if (!fs::exists(dir)) return steps;
  const std::regex pattern(kind == CheckpointKind::kRegular ? R"(checkpoint-(\d+)\.safetensors)"
                                                            : R"(interrupted-(\d+)\.safetensors)");
  for (const auto& entry : fs::directory_iterator(dir)) {
    std::smatch m;
    const std::string name = entry.path().filename().string();
    if (std::regex_match(name, m, pattern)) {
      const std::int64_t step = std::stoll(m[1].str());
      if (fs::exists(checkpoint_state_path(run_dir, step, kind))) steps.push_back(step);
    }
  }
  std::sort(steps.begin(), steps.end());
  return steps;
}

}  // namespace

std::string checkpoint_model_path(const std::string& run_dir, std::int64_t step, CheckpointKind kind) {
  return checkpoint_file(run_dir, step, kind, ".safetensors");
}

std::string ema_model_path(const std::string& model_path) {
  const std::string suffix = ".safetensors";
  if (model_path.size() < suffix.size() || model_path.compare(model_path.size() - suffix.size(), suffix.size(), suffix))
    return model_path + ".ema";
  return model_path.substr(0, model_path.size() - suffix.size()) + ".ema" + suffix;
}

std::string checkpoint_state_path(const std::string& run_dir, std::int64_t step, CheckpointKind kind) {
  return checkpoint_file(run_dir, step, kind, ".state.safetensors");
}

std::vector<std::int64_t> checkpoint_steps(const std::string& run_dir) {
  return complete_steps(run_dir, CheckpointKind::kRegular);
}

std::vector<CheckpointRef> resumable_checkpoints(const std::string& run_dir) {
  std::vector<CheckpointRef> all;
  for (const CheckpointKind kind : {CheckpointKind::kRegular, CheckpointKind::kInterrupted}) {
    for (const std::int64_t step : complete_steps(run_dir, kind)) all.push_back({step, kind});
  }
  std::sort(all.begin(), all.end(), [](const CheckpointRef& a, const CheckpointRef& b) {
    if (a.step != b.step) return a.step > b.step;
    return a.kind == CheckpointKind::kRegular && b.kind != CheckpointKind::kRegular;
  });
  return all;
}

void set_aside_damaged_checkpoint(const std::string& run_dir, const CheckpointRef& checkpoint) {
  for (const std::string& path : {checkpoint_model_path(run_dir, checkpoint.step, checkpoint.kind),
                                  checkpoint_state_path(run_dir, checkpoint.step, checkpoint.kind)}) {
    std::error_code ignored;
    fs::rename(path, path + ".damaged", ignored);
  }
}

void link_atomically(const std::string& target, const std::string& link) {
  const std::string temporary = link + ".tmp-link";
  fs::remove(temporary);
  fs::create_hard_link(target, temporary);
  fs::rename(temporary, link);
}

void truncate_metrics(const std::string& path, std::int64_t step) {
  if (!fs::exists(path)) return;
  const std::vector<char> bytes = io::read_file(path);
  std::istringstream in(std::string(bytes.begin(), bytes.end()));
  std::string line, kept;
  while (std::getline(in, line)) {
    try {
      if (nlohmann::json::parse(line).value("step", std::int64_t{0}) > step) continue;
    } catch (const nlohmann::json::exception&) {
      continue;  // a torn last line
    }
    kept += line + "\n";
  }
  io::write_file_atomically(path, kept);
}

RunLock::RunLock(const std::string& run_dir) {
  const std::string path = (fs::path(run_dir) / "train.lock").string();
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) throw Error("cannot open the lock file " + path + ": " + std::strerror(errno));
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    std::string holder;
    if (error == EWOULDBLOCK) {
      const std::vector<char> bytes = io::read_file(path);
      holder.assign(bytes.begin(), bytes.end());
      while (!holder.empty() && (holder.back() == '\n' || holder.back() == ' ')) holder.pop_back();
    }
    ::close(fd_);
    fd_ = -1;
    if (error != EWOULDBLOCK) throw Error("cannot lock " + path + ": " + std::strerror(error));
    throw Error("run directory " + run_dir + " is in use by another `dragoman train` (" +
                (holder.empty() ? std::string("holder unknown") : holder) +
                "); wait for it to finish or stop it, or use another --run");
  }
  char host[256] = "unknown host";
  ::gethostname(host, sizeof host - 1);
  const std::time_t now = std::time(nullptr);
  char when[64];
  std::strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", std::localtime(&now));
  const std::string holder = "pid " + std::to_string(::getpid()) + " on " + host + ", started " + when + "\n";
  if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, holder.data(), holder.size(), 0) < 0) {
    // The lock holds without the note; only the message of a second trainer is less helpful.
  }
}

RunLock::~RunLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the flock
}

}  // namespace dragoman::train
