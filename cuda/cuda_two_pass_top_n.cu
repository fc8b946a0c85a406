#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/fault_hooks.h"
#include "cuda/cuda_check.h"
#include "cuda/cuda_two_pass_top_n.h"
#include "cuda/kernels/recommend/top_n_two_pass.cuh"

namespace sfac::cuda {
namespace {

// Device bytes a launch's per-query buffers may take: enough queries for several waves of the
// scan's blocks at every n it serves.
constexpr int64_t kLaunchBytes = int64_t{1} << 30;
// The warp-mma scan's queries a block; an SM holds two of its blocks or one of the warpgroup
// scan's (256 queries): a wave is 256 queries an SM either way.
constexpr int64_t kScanQueries = 128;
// The scan indexes a launch's survivors with 32-bit integers.
static_assert(kLaunchBytes / (8 * kernels::kTopNSurvivors) * kernels::kTopNSurvivors < (int64_t{1} << 31));
// Values whose products and sums stay far from float's overflow: beyond them the single-pass
// kernels serve.
constexpr double kLargestValue = 0x1p60;
constexpr double kLargestScore = 0x1p100;

// Device bytes a query takes in one launch: its sample exclusion mask, the survivors and their
// segments' counts, the finished list and its overflow slot (twice: one launch's lists download
// while the next launch runs).
int64_t per_query_bytes(int n, int64_t sample) {
  return (sample + 63) / 64 * 8 + int64_t{8} * kernels::kTopNSurvivors +
         4 * kernels::kTopNMaxSegments + 2 * (int64_t{8} * n + 4);
}

// A stream of the current device for the lists' downloads, and an event a list buffer that
// says when the launch writing it is done.
class DownloadStream {
 public:
  DownloadStream() {
    SFAC_CUDA_TRY(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    for (cudaEvent_t& e : written_) {
      const cudaError_t made = cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
      if (made != cudaSuccess) {
        release();  // the constructor throws: no destructor runs
        SFAC_CUDA_TRY(made);
      }
    }
  }
  ~DownloadStream() { release(); }
  DownloadStream(const DownloadStream&) = delete;
  DownloadStream& operator=(const DownloadStream&) = delete;

  // Buffer b's launch is all queued on `compute`.
  void written(int b, cudaStream_t compute) {
    SFAC_CUDA_TRY(cudaEventRecord(written_[b], compute));
  }
  // Copies count values of buffer b's `from` to host `to` once its launch is done; returns when
  // they are there.
  template <typename T>
  void download(int b, const T* from, T* to, size_t count) {
    SFAC_CUDA_TRY(cudaStreamWaitEvent(stream_, written_[b], 0));
    if (count > 0) {
      SFAC_CUDA_TRY(cudaMemcpyAsync(to, from, count * sizeof(T), cudaMemcpyDeviceToHost, stream_));
    }
    SFAC_CUDA_TRY(cudaStreamSynchronize(stream_));
  }

 private:
  void release() noexcept {
    for (cudaEvent_t& e : written_) {
      if (e != nullptr) cudaEventDestroy(e);
      e = nullptr;
    }
    if (stream_ != nullptr) {
      cudaStreamSynchronize(stream_);
      cudaStreamDestroy(stream_);
      stream_ = nullptr;
    }
  }

  cudaStream_t stream_ = nullptr;
  cudaEvent_t written_[2] = {nullptr, nullptr};
};

bool all_within(const std::vector<float>& values) {
  return std::all_of(values.begin(), values.end(),
                     [](float x) { return std::isfinite(x) && std::abs(x) <= kLargestValue; });
}

}  // namespace

bool TwoPassTopN::folds(int64_t rank, bool bf16) {
  return bf16 && kernels::top_n_folded_stride(rank) <= kernels::kTopNScanMaxStride;
}

int64_t TwoPassTopN::bytes_of(int64_t users, int64_t items, int64_t rank, bool bf16) {
  return int64_t{sizeof(float)} * users +
         (folds(rank, bf16) ? int64_t{sizeof(uint16_t)} * kernels::top_n_folded_stride(rank) * items
                            : 0);
}

std::unique_ptr<TwoPassTopN> TwoPassTopN::plan(const Model& model, bool exact_16bit, bool bf16,
                                               cudaStream_t stream) {
  if (!all_within(model.user_factors) || !all_within(model.item_factors)) return nullptr;
  if (model.has_biases &&
      (!all_within(model.user_bias) || !all_within(model.item_bias) ||
       !std::isfinite(model.global_mean) || std::abs(model.global_mean) > kLargestValue)) {
    return nullptr;
  }
  const int64_t k = model.rank;
  auto norm = [k](const std::vector<float>& rows, int64_t r) {
    double sum = 0.0;
    for (int64_t t = 0; t < k; ++t) sum += double{rows[r * k + t]} * rows[r * k + t];
    return std::sqrt(sum);
  };
  std::vector<double> item_norm(static_cast<size_t>(model.items));
  double y_max = 0.0, b_max = 0.0, x_mean = 0.0;
  for (int64_t i = 0; i < model.items; ++i) {
    item_norm[i] = norm(model.item_factors, i);
    y_max = std::max(y_max, item_norm[i]);
    if (model.has_biases) b_max = std::max(b_max, double{std::abs(model.item_bias[i])});
  }
  std::vector<float> margins(static_cast<size_t>(model.users));
  const bool folded = folds(k, bf16);
  // The 16-bit rows differ from the factors by at most delta relative (bfloat16 rounds to
  // nearest: 2^-9; taken twice over), so their products by delta (2 + delta). The host's
  // sequential sum is bounded by 2^-23 (two units of the last place) per term, each term at most
  // |x_t y_t|, whose sum is at most |x| |y|. The tensor cores' sums are bounded by 2^-21 (four
  // units) per term of the sum of the terms' magnitudes: the products' (at most `reach`), and
  // with folded scores also the bias's and a constant's three parts each, the constant being
  // the offset (the sample) or the threshold (the cut less the offset, the cut within the
  // scores' range less two margins), so at most 4 (reach + offset + bias) in all. The
  // additions of the bias part, or of the threshold back to a survivor's score, round each
  // score once or twice more (2^-21 of its parts).
  const double delta = exact_16bit ? 0.0 : 0x1p-8;
  const double relative = delta * (2.0 + delta) + k * 0x1p-23;
  for (int64_t u = 0; u < model.users; ++u) {
    const double x = norm(model.user_factors, u);
    x_mean += x / static_cast<double>(model.users);
    const double offset =
        model.has_biases ? std::abs(double{model.global_mean + model.user_bias[u]}) : 0.0;
    const double reach = x * y_max * (1.0 + delta) * (1.0 + delta) * (1.0 + k * 0x1p-20);
    const double parts = reach + offset + b_max;
    if (!(parts <= kLargestScore)) return nullptr;
    const double sums =
        folded ? (k + kernels::kTopNFoldedTerms) * 0x1p-21 * 4.0 * parts : k * 0x1p-21 * reach;
    const double bound = x * y_max * relative + sums + 0x1p-21 * parts + 0x1p-60;
    margins[u] = std::nextafter(static_cast<float>(bound * (1.0 + 0x1p-20)), INFINITY);
  }

  auto plan = std::unique_ptr<TwoPassTopN>(new TwoPassTopN());
  plan->items_ = model.items;
  // A user's best items are likely those with large biases and large norms (a typical user's
  // dot product with an item is a fraction of the norms' product).
  std::vector<double> key(static_cast<size_t>(model.items));
  for (int64_t i = 0; i < model.items; ++i) {
    key[i] = (model.has_biases ? double{model.item_bias[i]} : 0.0) + 0.25 * x_mean * item_norm[i];
  }
  plan->sample_order_.resize(static_cast<size_t>(model.items));
  std::iota(plan->sample_order_.begin(), plan->sample_order_.end(), 0);
  std::stable_sort(plan->sample_order_.begin(), plan->sample_order_.end(),
                   [&key](int32_t a, int32_t b) { return key[a] > key[b]; });
  plan->margins_ = DeviceBuffer<float>::copy_of(margins.data(), margins.size(), stream);
  plan->rank_ = k;
  plan->folded_ = folded;
  plan->warpgroup_ = folded && kernels::top_n_scan_warpgroup_available();
  int device = 0;
  SFAC_CUDA_TRY(cudaGetDevice(&device));
  SFAC_CUDA_TRY(cudaDeviceGetAttribute(&plan->sm_count_, cudaDevAttrMultiProcessorCount, device));
  SFAC_CUDA_TRY(cudaStreamSynchronize(stream));  // the host margins die at return
  return plan;
}

void TwoPassTopN::fold_items(const Model& model, const uint16_t* item_half, int64_t half_stride,
                             cudaStream_t stream) {
  if (!folded_) return;
  const int64_t columns = kernels::top_n_folded_columns(rank_);
  const int64_t stride = kernels::top_n_folded_stride(rank_);
  const int64_t width = stride - columns;
  // Tails [1, 1, 1, the bias's three parts, zeros] (kernels/recommend/top_n_two_pass.cuh).
  std::vector<uint16_t> tails(static_cast<size_t>(items_ * width), 0);
  for (int64_t i = 0; i < items_; ++i) {
    uint16_t parts[3];
    kernels::split_bfloat16x3(model.has_biases ? model.item_bias[i] : 0.0f, parts);
    uint16_t* tail = tails.data() + i * width;
    tail[0] = tail[1] = tail[2] = 0x3f80;  // bfloat16 1
    std::copy(parts, parts + 3, tail + 3);
  }
  folded_items_ = DeviceBuffer<uint16_t>(static_cast<size_t>(items_ * stride), stream);
  constexpr size_t kValue = sizeof(uint16_t);
  SFAC_CUDA_TRY(cudaMemcpy2DAsync(folded_items_.data(), stride * kValue, item_half,
                                  half_stride * kValue, columns * kValue, items_,
                                  cudaMemcpyDeviceToDevice, stream));
  SFAC_CUDA_TRY(cudaMemcpy2DAsync(folded_items_.data() + columns, stride * kValue, tails.data(),
                                  width * kValue, width * kValue, items_, cudaMemcpyHostToDevice,
                                  stream));
  SFAC_CUDA_TRY(cudaStreamSynchronize(stream));  // the host tails die at return
}

int64_t TwoPassTopN::sample_size(int n) const {
  // About a quarter of the survivors' room expected to survive where the items are alike (each
  // then ranks above the sample's n-th with chance about n / sample; the scan's cut is the n-th
  // of the best four each of 8 threads saw, which is further below it for n above 16, so those
  // take a larger sample), so that a query overflows only by a rare chance; at least 512, in
  // whole tiles of the scan.
  const int64_t factor = n <= 16 ? 4 : 6;
  const int64_t wanted =
      (factor * n * items_ + kernels::kTopNSurvivors - 1) / kernels::kTopNSurvivors;
  return (std::max<int64_t>(wanted, 512) + 127) / 128 * 128;
}

bool TwoPassTopN::serves(int n) const {
  return n <= kernels::kTopNTwoPassMaxN && 2 * sample_size(n) <= items_;
}

int64_t TwoPassTopN::wave_queries() const { return kScanQueries * 2 * sm_count_; }

int64_t TwoPassTopN::queries_per_launch(int64_t count, int n) const {
  const int64_t fitting =
      kLaunchBytes / per_query_bytes(n, sample_size(n)) / kScanQueries * kScanQueries;
  // About four launches a call, so that the last launch's download, the one no launch hides,
  // is small; each a whole number of waves of the scan's blocks where it can be.
  const int64_t wave = wave_queries();
  const int64_t quarter = ((count + 3) / 4 + wave - 1) / wave * wave;
  return std::min(count, std::max(kScanQueries, std::min(fitting, quarter)));
}

int64_t TwoPassTopN::scratch_bytes(int64_t count, int n) const {
  return int64_t{4} * (sample_size(n) + items_) + 4 +
         queries_per_launch(count, n) * per_query_bytes(n, sample_size(n));
}

std::vector<int64_t> TwoPassTopN::run(const TwoPassSides& sides, const int32_t* users,
                                      int64_t count, int n, const int64_t* exclude_offsets,
                                      const int32_t* exclude_cols, int32_t* out_items,
                                      float* out_scores, cudaStream_t stream) const {
  const int64_t sample = sample_size(n);
  std::vector<int32_t> sample_ids(sample_order_.begin(), sample_order_.begin() + sample);
  std::sort(sample_ids.begin(), sample_ids.end());  // rows gathered in address order
  const auto device_sample =
      DeviceBuffer<int32_t>::copy_of(sample_ids.data(), sample_ids.size(), stream);
  // Each item's place in the sample (-1: not in it), for the exclusions' sample masks; the host
  // copy lives as long as the call, as the sample's does.
  std::vector<int32_t> position;
  DeviceBuffer<int32_t> device_position;
  if (exclude_offsets != nullptr) {
    position.assign(static_cast<size_t>(items_), -1);
    for (int64_t j = 0; j < sample; ++j) position[sample_ids[j]] = static_cast<int32_t>(j);
    device_position = DeviceBuffer<int32_t>::copy_of(position.data(), position.size(), stream);
  }

  const int64_t per_launch = queries_per_launch(count, n);
  const int64_t words = (sample + 63) / 64;
  const auto lists = static_cast<size_t>(per_launch * n);
  const auto kept = static_cast<size_t>(per_launch * kernels::kTopNSurvivors);
  DeviceBuffer<uint64_t> masks(
      exclude_offsets != nullptr ? static_cast<size_t>(per_launch * words) : 0, stream);
  DeviceBuffer<float> survivor_scores(kept, stream);
  DeviceBuffer<int32_t> survivor_ids(kept, stream);
  DeviceBuffer<int32_t> counts(static_cast<size_t>(per_launch * kernels::kTopNMaxSegments), stream);
  // Two sets of lists: launch i writes set i % 2 while set (i - 1) % 2 downloads.
  DeviceBuffer<int32_t> ids[2] = {{lists, stream}, {lists, stream}};
  DeviceBuffer<float> scores[2] = {{lists, stream}, {lists, stream}};
  DeviceBuffer<int32_t> overflow[2] = {{static_cast<size_t>(per_launch) + 1, stream},
                                       {static_cast<size_t>(per_launch) + 1, stream}};
  DownloadStream downloads;

  std::vector<int64_t> left;
  std::vector<int32_t> overflowed(static_cast<size_t>(per_launch) + 1);
  // Downloads launch (q0, m)'s lists from set b, and notes its users left to the single pass.
  auto drain = [&](int b, int64_t q0, int64_t m) {
    downloads.download(b, ids[b].data(), out_items + q0 * n, static_cast<size_t>(m * n));
    downloads.download(b, scores[b].data(), out_scores + q0 * n, static_cast<size_t>(m * n));
    downloads.download(b, overflow[b].data(), overflowed.data(), 1);
    const int32_t overflow_count = overflowed[0];
    if (overflow_count > 0) {
      downloads.download(b, overflow[b].data(), overflowed.data(),
                         static_cast<size_t>(overflow_count) + 1);
      for (int32_t j = 1; j <= overflow_count; ++j) left.push_back(q0 + overflowed[j]);
    }
  };
  int64_t last_q0 = 0, last_m = 0;
  int last_b = 0;
  // The last launch's download is the one no launch hides: a call of several launches ends
  // with one of a single wave of the scan's blocks.
  const int64_t wave = wave_queries();
  for (int64_t q0 = 0, m = 0, launch = 0; q0 < count; q0 += m, ++launch) {
    const int64_t rest = count - q0;
    m = std::min(per_launch, rest);
    if (launch > 0 && m == rest && rest > wave && per_launch > wave) m = rest - wave;
    const int b = static_cast<int>(launch % 2);
    if (exclude_offsets != nullptr) {
      kernels::launch_top_n_sample_masks(users + q0, m, exclude_offsets, exclude_cols,
                                         device_position.data(), sample, masks.data(), stream);
    }
    kernels::TopNScanProblem scan{};
    scan.bf16 = sides.bf16;
    scan.query_factors = sides.user_half;
    scan.query_ids = users + q0;
    scan.queries = m;
    scan.candidate_factors = sides.item_half;
    scan.candidates = items_;
    scan.stride = sides.half_stride;
    scan.query_offset = sides.user_offsets;
    scan.candidate_bias = sides.item_biases;
    scan.folded_candidates = folded_items_.size() > 0 ? folded_items_.data() : nullptr;
    scan.rank = rank_;
    scan.sample_ids = device_sample.data();
    scan.sample = sample;
    scan.sample_masks = exclude_offsets != nullptr ? masks.data() : nullptr;
    scan.margins = margins_.data();
    scan.n = n;
    scan.survivor_scores = survivor_scores.data();
    scan.survivor_ids = survivor_ids.data();
    scan.counts = counts.data();
    scan.warpgroup = warpgroup_ && testing::warpgroup_top_n_scan_allowed();
    scan.segments = scan.warpgroup ? kernels::kTopNMaxSegments : 1;
    kernels::launch_top_n_scan(scan, stream);
    if (scan.warpgroup) testing::count_warpgroup_top_n_scan();

    SFAC_CUDA_TRY(cudaMemsetAsync(overflow[b].data(), 0, sizeof(int32_t), stream));
    kernels::TopNFinishProblem finish{};
    finish.query_ids = users + q0;
    finish.queries = m;
    finish.survivor_scores = survivor_scores.data();
    finish.survivor_ids = survivor_ids.data();
    finish.counts = counts.data();
    finish.segments = scan.segments;
    finish.query_factors = sides.user_factors;
    finish.candidate_factors = sides.item_factors;
    finish.stride = sides.stride;
    finish.rank = sides.rank;
    finish.query_offset = sides.user_offsets;
    finish.candidate_bias = sides.item_biases;
    finish.margins = margins_.data();
    finish.exclude_offsets = exclude_offsets;
    finish.exclude_cols = exclude_cols;
    finish.n = n;
    finish.out_ids = ids[b].data();
    finish.out_scores = scores[b].data();
    finish.overflow = overflow[b].data() + 1;
    finish.overflow_count = overflow[b].data();
    kernels::launch_top_n_finish(finish, stream);
    downloads.written(b, stream);

    // The previous launch's lists download while this one runs; its set is written again only
    // by the launch after this one, queued once they are here.
    if (launch > 0) drain(last_b, last_q0, last_m);
    last_q0 = q0, last_m = m, last_b = b;
  }
  if (last_m > 0) drain(last_b, last_q0, last_m);
  std::sort(left.begin(), left.end());
  return left;
}

}  // namespace sfac::cuda
