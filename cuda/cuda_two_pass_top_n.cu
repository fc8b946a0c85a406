#include <algorithm>
#include <cmath>
#include <numeric>

#include "cuda/cuda_check.h"
#include "cuda/cuda_two_pass_top_n.h"
#include "cuda/kernels/recommend/top_n_two_pass.cuh"

namespace sfac::cuda {
namespace {

// Device bytes a launch's per-query buffers may take: enough queries for several waves of the
// scan's blocks at every n it serves.
constexpr int64_t kLaunchBytes = int64_t{1} << 30;
constexpr int64_t kScanQueries = 128;  // the scan's queries a block
// The scan indexes a launch's survivors with 32-bit integers.
static_assert(kLaunchBytes / (8 * kernels::kTopNSurvivors) * kernels::kTopNSurvivors < (int64_t{1} << 31));
// Values whose products and sums stay far from float's overflow: beyond them the single-pass
// kernels serve.
constexpr double kLargestValue = 0x1p60;
constexpr double kLargestScore = 0x1p100;

// Device bytes a query takes in one launch: its sample exclusion mask, the survivors and their
// count, the finished list, its overflow slot.
int64_t per_query_bytes(int n, int64_t sample) {
  return (sample + 63) / 64 * 8 + int64_t{8} * kernels::kTopNSurvivors + 4 + int64_t{8} * n + 4;
}

bool all_within(const std::vector<float>& values) {
  return std::all_of(values.begin(), values.end(),
                     [](float x) { return std::isfinite(x) && std::abs(x) <= kLargestValue; });
}

}  // namespace

std::unique_ptr<TwoPassTopN> TwoPassTopN::plan(const Model& model, bool exact_16bit,
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
  // The 16-bit rows differ from the factors by at most delta relative (bfloat16 rounds to
  // nearest: 2^-9; taken twice over), so their products by delta (2 + delta). The tensor cores'
  // sums are bounded by 2^-21 (four units of the last place) per term, the host's sequential sum
  // by 2^-23 (two units) per term; the two additions of the bias part round each score once
  // more (2^-21 of its parts). Each term is at most |x_t y_t|, whose sum is at most |x| |y|.
  const double delta = exact_16bit ? 0.0 : 0x1p-8;
  const double relative =
      delta * (2.0 + delta) + k * 0x1p-21 * (1.0 + delta) * (1.0 + delta) + k * 0x1p-23;
  for (int64_t u = 0; u < model.users; ++u) {
    const double x = norm(model.user_factors, u);
    x_mean += x / static_cast<double>(model.users);
    const double offset =
        model.has_biases ? std::abs(double{model.global_mean + model.user_bias[u]}) : 0.0;
    const double reach = x * y_max * (1.0 + delta) * (1.0 + delta) * (1.0 + k * 0x1p-20);
    if (!(reach + offset + b_max <= kLargestScore)) return nullptr;
    const double bound = x * y_max * relative + 0x1p-21 * (reach + offset + b_max) + 0x1p-60;
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
  SFAC_CUDA_TRY(cudaStreamSynchronize(stream));  // the host margins die at return
  return plan;
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

int64_t TwoPassTopN::queries_per_launch(int64_t count, int n) const {
  const int64_t fitting =
      kLaunchBytes / per_query_bytes(n, sample_size(n)) / kScanQueries * kScanQueries;
  return std::min(count, std::max(kScanQueries, fitting));
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
  DeviceBuffer<int32_t> ids(lists, stream);
  DeviceBuffer<float> scores(lists, stream);
  DeviceBuffer<float> survivor_scores(kept, stream);
  DeviceBuffer<int32_t> survivor_ids(kept, stream);
  DeviceBuffer<int32_t> counts(static_cast<size_t>(per_launch), stream);
  DeviceBuffer<int32_t> overflow(static_cast<size_t>(per_launch) + 1, stream);  // count first

  std::vector<int64_t> left;
  std::vector<int32_t> overflowed;
  for (int64_t q0 = 0; q0 < count; q0 += per_launch) {
    const int64_t m = std::min(per_launch, count - q0);
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
    scan.sample_ids = device_sample.data();
    scan.sample = sample;
    scan.sample_masks = exclude_offsets != nullptr ? masks.data() : nullptr;
    scan.margins = margins_.data();
    scan.n = n;
    scan.survivor_scores = survivor_scores.data();
    scan.survivor_ids = survivor_ids.data();
    scan.counts = counts.data();
    kernels::launch_top_n_scan(scan, stream);

    SFAC_CUDA_TRY(cudaMemsetAsync(overflow.data(), 0, sizeof(int32_t), stream));
    kernels::TopNFinishProblem finish{};
    finish.query_ids = users + q0;
    finish.queries = m;
    finish.survivor_scores = survivor_scores.data();
    finish.survivor_ids = survivor_ids.data();
    finish.counts = counts.data();
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
    finish.out_ids = ids.data();
    finish.out_scores = scores.data();
    finish.overflow = overflow.data() + 1;
    finish.overflow_count = overflow.data();
    kernels::launch_top_n_finish(finish, stream);

    ids.download(out_items + q0 * n, static_cast<size_t>(m * n));
    scores.download(out_scores + q0 * n, static_cast<size_t>(m * n));
    int32_t overflow_count = 0;
    overflow.download(&overflow_count, 1);
    if (overflow_count > 0) {
      overflowed.resize(static_cast<size_t>(overflow_count) + 1);
      overflow.download(overflowed.data(), overflowed.size());
      for (int32_t j = 1; j <= overflow_count; ++j) left.push_back(q0 + overflowed[j]);
    }
  }
  std::sort(left.begin(), left.end());
  return left;
}

}  // namespace sfac::cuda
