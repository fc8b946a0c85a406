#include "progress_bar.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <utility>

namespace sfac_cli {
namespace {

int terminal_columns(std::FILE* out) {
  winsize size{};
  if (::ioctl(::fileno(out), TIOCGWINSZ, &size) == 0 && size.ws_col > 0) return size.ws_col;
  return 80;
}

}  // namespace

ProgressBar::ProgressBar(std::string label, int total, std::FILE* out)
    : out_(out), label_(std::move(label)), total_(std::max(total, 0)) {
  start_ = last_update_ = Clock::now();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    draw_locked(false);
  }
  ticker_ = std::thread([this] { tick(); });
}

ProgressBar::~ProgressBar() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!finished_) {
      // Interrupted (an error is about to be printed): keep the last state, end the line.
      std::fputc('\n', out_);
      std::fflush(out_);
      finished_ = true;
    }
  }
  wake_.notify_all();
  if (ticker_.joinable()) ticker_.join();
}

void ProgressBar::update(int done, const std::string& status) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (finished_) return;
  const auto now = Clock::now();
  done_ = std::clamp(done, 0, total_);
  status_ = status;
  last_update_ = now;
  if (done_ > 0) {
    const double elapsed = std::chrono::duration<double>(now - start_).count();
    eta_at_update_ = elapsed / done_ * (total_ - done_);
  }
  draw_locked(false);
}

void ProgressBar::finish() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (finished_) return;
    draw_locked(true);
    finished_ = true;
  }
  wake_.notify_all();
  if (ticker_.joinable()) ticker_.join();
}

std::string ProgressBar::format_duration(double seconds) {
  const long long s = std::llround(std::max(seconds, 0.0));
  char text[32];
  if (s >= 3600) {
    std::snprintf(text, sizeof text, "%lld:%02lld:%02lld", s / 3600, s / 60 % 60, s % 60);
  } else {
    std::snprintf(text, sizeof text, "%lld:%02lld", s / 60, s % 60);
  }
  return text;
}

void ProgressBar::tick() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!finished_) {
    wake_.wait_for(lock, std::chrono::milliseconds(250));
    if (!finished_) draw_locked(false);
  }
}

void ProgressBar::draw_locked(bool final) {
  const auto now = Clock::now();
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const int digits = static_cast<int>(std::to_string(total_).size());
  char head[64];
  std::snprintf(head, sizeof head, "%s %*d/%d ", label_.c_str(), digits, done_, total_);
  char percent[16];
  std::snprintf(percent, sizeof percent, " %3d%%", total_ > 0 ? 100 * done_ / total_ : 100);
  std::string tail = std::string(percent) + "  " + format_duration(elapsed);
  if (!final) {
    const double since = std::chrono::duration<double>(now - last_update_).count();
    tail += "  ETA " + (eta_at_update_ < 0 ? "--:--" : format_duration(eta_at_update_ - since));
  }
  // The bar's width depends only on the terminal's, so it does not jump when the text after it
  // changes: room is kept for " 100%  1:23  ETA 4:56" and a typical status
  // ("loss 0.1234  val_rmse 0.1234").
  constexpr int kTailRoom = 24 + 32;
  const int columns = terminal_columns(out_);
  const int fixed = static_cast<int>(std::string(head).size()) + 2 + kTailRoom;  // "[" "]"
  const int bar = std::clamp(columns - 1 - fixed, 10, 30);
  if (!status_.empty()) tail += "  " + status_;
  // The line must never wrap, or \r would redraw only its last row: one column is kept free.
  const int filled = total_ > 0 ? bar * done_ / total_ : bar;
  std::string line = head;
  line += '[';
  line.append(static_cast<size_t>(filled), '=');
  if (filled < bar) {
    line += '>';
    line.append(static_cast<size_t>(bar - filled - 1), ' ');
  }
  line += ']';
  line += tail;
  if (static_cast<int>(line.size()) > columns - 1) line.resize(static_cast<size_t>(columns - 1));
  // \r back to column 0, the line, then erase whatever a longer earlier line left behind.
  std::fprintf(out_, "\r%s\x1b[K%s", line.c_str(), final ? "\n" : "");
  std::fflush(out_);
}

}  // namespace sfac_cli
