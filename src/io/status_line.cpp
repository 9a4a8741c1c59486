// Progress on standard error (see status_line.h).
#include "io/status_line.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <mutex>
#include <utility>

namespace dragoman::io {
namespace {

struct Line {
  std::mutex mutex;
  std::string text;  // what is drawn (when drawn)
  bool drawn = false;
};

Line& line() {
  static Line l;
  return l;
}

// The terminal's width in columns (80 when it does not say).
int columns() {
  winsize size{};
  if (::ioctl(STDERR_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 0) return size.ws_col;
  return 80;
}

// `text` cut to `width` characters (UTF-8: continuation bytes are not characters).
std::string cut(const std::string& text, int width) {
  int chars = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if ((byte & 0xC0) != 0x80 && ++chars > width) return text.substr(0, i);
  }
  return text;
}

// (the caller holds the line's mutex)
void draw(const Line& l) {
  std::fprintf(stderr, "\r%s\033[K", l.text.c_str());
  std::fflush(stderr);
}

}  // namespace

bool StatusLine::on_terminal() {
  static const bool tty = ::isatty(STDERR_FILENO) != 0;
  return tty;
}

void StatusLine::show(const std::string& text) {
  if (!on_terminal()) return;
  Line& l = line();
  const std::lock_guard<std::mutex> lock(l.mutex);
  // One column short of the width: a line that fills it would wrap on some terminals, and the
  // next redraw would then start one row too low.
  l.text = cut(text, std::max(1, columns() - 1));
  l.drawn = true;
  draw(l);
}

void StatusLine::finish() {
  if (!on_terminal()) return;
  Line& l = line();
  const std::lock_guard<std::mutex> lock(l.mutex);
  if (l.drawn) std::fputc('\n', stderr);
  std::fflush(stderr);
  l.drawn = false;
  l.text.clear();
}

void StatusLine::write_above(const std::function<void()>& write) {
  if (!on_terminal()) {
    write();
    return;
  }
  Line& l = line();
  const std::lock_guard<std::mutex> lock(l.mutex);
  if (l.drawn) {
    std::fputs("\r\033[K", stderr);
    std::fflush(stderr);
  }
  write();
  if (l.drawn) draw(l);
}

std::string progress_bar(double fraction, int width) {
  if (!(fraction >= 0)) fraction = 0;  // (NaN too)
  fraction = std::min(fraction, 1.0);
  const int full = static_cast<int>(std::floor(fraction * width));
  return "[" + std::string(static_cast<std::size_t>(full), '#') +
         std::string(static_cast<std::size_t>(width - full), '.') + "]";
}

Progress::Progress(std::string label, std::string unit, std::int64_t total, Options options)
    : label_(std::move(label)),
      unit_(std::move(unit)),
      total_(total),
      tty_(options.on_terminal && StatusLine::on_terminal()),
      logs_(options.log_lines && !StatusLine::on_terminal()) {}

Progress::Progress(std::string label, std::string unit, std::int64_t total)
    : Progress(std::move(label), std::move(unit), total, Options{}) {}

std::string Progress::text(std::int64_t done, double seconds) const {
  const double rate = static_cast<double>(done) / std::max(seconds, 1e-9);
  std::string text = label_ + " ";
  if (total_ > 0) text += progress_bar(static_cast<double>(done) / static_cast<double>(total_), 20) + " ";
  text += std::to_string(done);
  if (total_ >= 0) text += "/" + std::to_string(total_);
  text += fmt::format(" {} | {:.1f} {}/s", unit_, rate, unit_);
  if (total_ >= 0 && rate > 0)
    text += " | ETA " + format_hms(static_cast<double>(std::max<std::int64_t>(0, total_ - done)) / rate);
  return text;
}

Progress::~Progress() {
  if (drawn_) StatusLine::finish();
}

void Progress::update(std::int64_t done) {
  done_ = done;
  if (!tty_ && !logs_) return;
  const double elapsed = seconds_since(start_);
  // On a terminal at once, then at most 5 times a second; log lines after 10 s, then every 10 s.
  const double since = last_ >= 0 ? elapsed - last_ : tty_ ? 1e9 : elapsed;
  if (since < (tty_ ? 0.2 : 10.0)) return;
  last_ = elapsed;
  if (tty_) {
    StatusLine::show(text(done, elapsed));
    drawn_ = true;
  } else {
    spdlog::info("{}", text(done, elapsed));
  }
}

void Progress::finish() {
  if (!drawn_) return;
  StatusLine::show(text(done_, seconds_since(start_)));
  StatusLine::finish();
  drawn_ = false;
}

}  // namespace dragoman::io
