// A one-line progress bar for a terminal: redraws in place with \r; shows done/total, the
// elapsed time, an ETA and a caller-supplied status text. A background thread redraws it a few
// times a second so the clock keeps moving during long steps.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>

namespace sfac_cli {

class ProgressBar {
 public:
  // Draws "label 0/total [>   ]" at once. out should be a terminal (the caller checks isatty).
  ProgressBar(std::string label, int total, std::FILE* out);
  // Stops the redraws; ends the line if finish() was not called (e.g. on an error).
  ~ProgressBar();
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  // Marks `done` steps complete and sets the text shown after the bar.
  void update(int done, const std::string& status);
  // Final redraw and a newline; later calls do nothing.
  void finish();

  // "1:05", "12:03:09".
  static std::string format_duration(double seconds);

 private:
  using Clock = std::chrono::steady_clock;
  void draw_locked(bool final);
  void tick();

  std::FILE* out_;
  std::string label_;
  int total_;
  int done_ = 0;
  std::string status_;
  Clock::time_point start_, last_update_;
  double eta_at_update_ = -1.0;  // seconds left when done_ last changed; < 0 while unknown
  bool finished_ = false;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::thread ticker_;
};

}  // namespace sfac_cli
