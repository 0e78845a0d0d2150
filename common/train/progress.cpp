#include "common/train/progress.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>

#if defined(__unix__) || defined(__APPLE__)
#include <sys/ioctl.h>
#include <unistd.h>
#define COURSE_HAVE_TERMINAL_QUERIES 1
#endif

namespace course {

namespace {

bool stderr_is_terminal() {
#ifdef COURSE_HAVE_TERMINAL_QUERIES
  return isatty(STDERR_FILENO) == 1;
#else
  return false;
#endif
}

// Width of the terminal stderr writes to; 80 when it cannot be asked.
int terminal_width() {
#ifdef COURSE_HAVE_TERMINAL_QUERIES
  winsize ws{};
  if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
#endif
  return 80;
}

// "0:07", "12:34", "1:02:03".
std::string clock_text(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const long s = std::lround(seconds);
  char buf[32];
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", s / 3600, (s / 60) % 60, s % 60);
  else
    std::snprintf(buf, sizeof buf, "%ld:%02ld", s / 60, s % 60);
  return buf;
}

}  // namespace

ProgressBar::ProgressBar(std::string label, long total, bool enabled)
    : label_(std::move(label)), total_(std::max(total, 0L)), enabled_(enabled && stderr_is_terminal()) {}

ProgressBar::~ProgressBar() { finish(); }

std::string ProgressBar::render(const std::string& label, long done, long total, double elapsed_s,
                                const std::string& suffix, int width) {
  done = std::clamp(done, 0L, std::max(total, 0L));
  const double fraction = total > 0 ? static_cast<double>(done) / static_cast<double>(total) : 1.0;
  const double rate = elapsed_s > 0 ? static_cast<double>(done) / elapsed_s : 0.0;

  char numbers[128];
  std::snprintf(numbers, sizeof numbers, " %3d%%  %ld/%ld  %.0f/s  ETA %s", static_cast<int>(fraction * 100.0),
                done, total, rate,
                done >= total ? "0:00"
                : rate > 0    ? clock_text(static_cast<double>(total - done) / rate).c_str()
                              : "?");
  std::string tail = numbers;
  if (!suffix.empty()) tail += "  " + suffix;

  // The bar takes what is left of the line, between 10 and 30 cells. The
  // numbers are reserved at their widest (a 7-digit rate, an ETA of hours),
  // so the bar keeps its length while they grow during the epoch.
  const std::size_t count_digits = std::to_string(std::max(total, 0L)).size();
  const std::size_t widest_tail = 5 + 2 + 2 * count_digits + 1 + 2 + 9 + 2 + 4 + 7 +
                                  (suffix.empty() ? 0 : 2 + suffix.size());
  const int fixed = static_cast<int>(label.size() + std::max(tail.size(), widest_tail)) + 3;  // " [" and "]"
  const int cells = std::clamp(width - 1 - fixed, 10, 30);
  const int filled = static_cast<int>(fraction * cells);
  std::string line = label + " [" + std::string(static_cast<std::size_t>(filled), '#') +
                     std::string(static_cast<std::size_t>(cells - filled), '.') + "]" + tail;
  // Never wrap: a wrapped line cannot be redrawn in place with '\r'.
  if (width > 1 && static_cast<int>(line.size()) > width - 1) line.resize(static_cast<std::size_t>(width - 1));
  return line;
}

void ProgressBar::update(long done, const std::string& suffix) {
  if (!enabled_) return;
  const double now = timer_.seconds();
  if (done < total_ && last_draw_s_ >= 0 && now - last_draw_s_ < 0.1) return;
  last_draw_s_ = now;
  // '\r' back to the line start, the bar, then ESC[K to erase what a longer
  // previous bar left behind; one write, so the line never flickers half-drawn.
  const std::string text = "\r" + render(label_, done, total_, now, suffix, terminal_width()) + "\033[K";
  std::fwrite(text.data(), 1, text.size(), stderr);
  std::fflush(stderr);
  drawn_ = true;
}

void ProgressBar::finish() {
  if (!enabled_ || !drawn_) return;
  std::fputs("\r\033[K", stderr);
  std::fflush(stderr);
  drawn_ = false;
}

}  // namespace course
