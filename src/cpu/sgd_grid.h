// FPSGD's block grid for parallel SGD (Zhuang et al., LIBMF): users and items are cut into B
// contiguous ranges each, the samples are stored block by block (shuffled within a block), and
// threads work on blocks that share no user range and no item range. A block's factor rows are
// a small contiguous slice of P and of Q that stays in the core's cache while the block runs, and
// no two threads ever write the same row.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <numeric>
#include <random>
#include <vector>

namespace sfac::cpu {

// The B x B partition of [0, rows) x [0, cols) into contiguous ranges of near-equal length:
// row r lies in row range floor(r B / rows), that is i rows <= r B < (i + 1) rows; columns
// likewise. Block (i, j) has id i * B + j.
class BlockGrid {
 public:
  BlockGrid(int64_t rows, int64_t cols, int b) : rows_(rows), cols_(cols), b_(std::max(b, 1)) {}

  int size() const { return b_; }
  int blocks() const { return b_ * b_; }
  int row_part(int64_t row) const {
    return static_cast<int>(row * b_ / std::max<int64_t>(rows_, 1));
  }
  int col_part(int64_t col) const {
    return static_cast<int>(col * b_ / std::max<int64_t>(cols_, 1));
  }
  int block_of(int64_t row, int64_t col) const { return row_part(row) * b_ + col_part(col); }

  // Reorders `samples` (each with .user and .item) block by block, each block in a random order
  // from `rng`; returns the B*B + 1 block offsets into the reordered samples.
  template <class Sample, class Rng>
  std::vector<int64_t> arrange(std::vector<Sample>& samples, Rng& rng) const {
    std::vector<int64_t> offsets(static_cast<size_t>(blocks()) + 1, 0);
    for (const Sample& s : samples) ++offsets[static_cast<size_t>(block_of(s.user, s.item)) + 1];
    std::partial_sum(offsets.begin(), offsets.end(), offsets.begin());
    std::vector<Sample> sorted(samples.size());
    std::vector<int64_t> next(offsets.begin(), offsets.end() - 1);
    for (const Sample& s : samples) sorted[next[block_of(s.user, s.item)]++] = s;
    for (int k = 0; k < blocks(); ++k) {
      std::shuffle(sorted.begin() + offsets[k], sorted.begin() + offsets[k + 1], rng);
    }
    samples.swap(sorted);
    return offsets;
  }

 private:
  int64_t rows_, cols_;
  int b_;
};

// Hands out every block of a B x B grid exactly once per epoch, never two at a time that share
// a row range or a column range (LIBMF's scheduler, with "exactly once" instead of "least
// updated"). Blocks are offered in a fresh random order each epoch. Thread-safe; a thread that
// finds only conflicting blocks left waits for one to be released.
class BlockScheduler {
 public:
  BlockScheduler(int b, uint64_t seed)
      : b_(b),
        rng_(seed),
        row_busy_(static_cast<size_t>(b), 0),
        col_busy_(static_cast<size_t>(b), 0) {}

  // Makes every block pending again. Call between epochs, with no block held.
  void start_epoch() {
    pending_.resize(static_cast<size_t>(b_) * b_);
    std::iota(pending_.begin(), pending_.end(), 0);
    std::shuffle(pending_.begin(), pending_.end(), rng_);
  }

  // A pending block sharing no row or column range with a held one, now held; -1 once every
  // block of the epoch has been handed out.
  int acquire() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      if (pending_.empty()) return -1;
      for (size_t n = 0; n < pending_.size(); ++n) {
        const int block = pending_[n];
        const int row = block / b_, col = block % b_;
        if (row_busy_[row] || col_busy_[col]) continue;
        row_busy_[row] = col_busy_[col] = 1;
        pending_.erase(pending_.begin() + static_cast<std::ptrdiff_t>(n));
        return block;
      }
      released_.wait(lock);
    }
  }

  void release(int block) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      row_busy_[block / b_] = col_busy_[block % b_] = 0;
    }
    released_.notify_all();
  }

 private:
  int b_;
  std::mt19937_64 rng_;
  std::mutex mutex_;
  std::condition_variable released_;
  std::vector<int> pending_;
  std::vector<char> row_busy_, col_busy_;
};

}  // namespace sfac::cpu
