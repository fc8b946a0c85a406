// sfac_model_recommend and sfac_model_similar_items of a model copied to a CUDA context (the
// device's fused GEMM + per-row top-n) held to the same model on a CPU context, whose host code
// (src/core/ranking.cpp) defines the answer: ties by the lower item id, rows padded with
// -1 / -INFINITY, excluded and disallowed items never listed, the query item never its own
// neighbour. Factors that are multiples of 1/16 make every dot product exact in fp32 in any
// summation order (3xTF32 splits them without rounding), so there the lists must be bit for
// bit the CPU's; Gaussian factors and cosines agree up to rounding. Skipped without a device.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <numeric>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "capi/testing_api.h"
#include "model_queries.h"
#include "sfac_test.h"

#ifdef SFAC_TEST_CUDART
#include "cuda/kernels/recommend/top_n_two_pass.cuh"
#endif

using namespace sfac_test;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr int32_t kPoisonItem = 0x7f7f7f7f;

uint32_t crc32(const std::string& bytes) {
  uint32_t crc = 0xFFFFFFFFu;
  for (const char c : bytes) {
    crc ^= static_cast<unsigned char>(c);
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

// A model of `ctx` holding exactly `d`'s factors and biases. The API replaces factors but not
// biases, so this writes the binary model file of src/io/model_file.h (format 1) and loads it.
Model make_model(sfac_context* ctx, const ModelState& d, const std::string& path) {
  std::string bytes("SFACMDL\0", 8);
  auto put = [&bytes](auto v) { bytes.append(reinterpret_cast<const char*>(&v), sizeof v); };
  // Version 1, byte-order marker, float32, algorithm.
  for (const uint32_t v : {1u, 0x01020304u, 0u, static_cast<uint32_t>(d.algorithm)}) put(v);
  for (const int64_t v : {d.users, d.items, d.rank}) put(v);
  put(uint32_t{d.has_biases ? 1u : 0u});
  for (const double v : {0.1, 0.0}) put(v);  // lambda (read by fold-in), implicit alpha
  put(static_cast<uint32_t>(SFAC_REG_WEIGHTED));
  put(d.mean);
  for (const auto* v : {&d.x, &d.y, &d.user_bias, &d.item_bias}) {  // biases: empty without
    bytes.append(reinterpret_cast<const char*>(v->data()), v->size() * sizeof(float));
  }
  put(crc32(bytes));
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  sfac_model* raw = nullptr;
  EXPECT_EQ(sfac_model_load(ctx, path.c_str(), &raw), SFAC_OK) << sfac_last_error();
  return Model(raw);
}

struct Shape {
  int64_t users, items, rank;
};

// Factors from factor(); with biases, biases from bias() and a mean of mean + bias().
template <typename Factor, typename Bias>
ModelState random_data(Shape s, bool biases, float mean, Factor factor, Bias bias) {
  auto draws = [](int64_t count, auto draw) {
    std::vector<float> v(static_cast<size_t>(count));
    std::generate(v.begin(), v.end(), draw);
    return v;
  };
  ModelState d;
  d.users = s.users, d.items = s.items, d.rank = s.rank, d.has_biases = biases;
  d.x = draws(s.users * s.rank, factor);
  d.y = draws(s.items * s.rank, factor);
  if (!biases) return d;
  d.mean = mean + bias();
  d.user_bias = draws(s.users, bias);
  d.item_bias = draws(s.items, bias);
  return d;
}

// Factors that are multiples of `step` (1/16 or a coarser 1/4: fewer distinct values, more
// ties) in [-1/2, 1/2], item `zero_item` all zeros; with biases, biases in [-1, 1] and a mean
// near 3, multiples of 1/16. Item 1 repeats item 0 (factors and bias): a tie for every user.
// Products are multiples of 2^-8 below 1/4 in magnitude, so even at rank 512 every score
// (< 2^8) is a sum of fp32-exact terms with an fp32-exact result.
ModelState exact_data(std::mt19937_64& rng, Shape s, bool biases, float step,
                      int64_t zero_item = -1) {
  const int levels = static_cast<int>(0.5f / step);
  std::uniform_int_distribution<int> factor(-levels, levels), bias(-16, 16);
  ModelState d = random_data(
      s, biases, 3.0f, [&] { return static_cast<float>(factor(rng)) * step; },
      [&] { return static_cast<float>(bias(rng)) / 16.0f; });
  if (s.items > 1) std::copy_n(d.y.begin(), s.rank, d.y.begin() + s.rank);
  if (s.items > 1 && biases) d.item_bias[1] = d.item_bias[0];
  if (zero_item >= 0) std::fill_n(d.y.begin() + zero_item * s.rank, s.rank, 0.0f);
  return d;
}

// Dot products of about N(0, 1) (N(3.5, 0.5) with biases): nothing is exact.
ModelState gaussian_data(std::mt19937_64& rng, Shape s, bool biases) {
  std::normal_distribution<float> factor(0.0f, std::pow(static_cast<float>(s.rank), -0.25f)),
      bias(0.0f, 0.3f);
  return random_data(
      s, biases, 3.5f, [&] { return factor(rng); }, [&] { return bias(rng); });
}

// Seen items: user `none` none, user `all` every item, the others about one in five.
Triplets seen_items(std::mt19937_64& rng, Shape s, int64_t none, int64_t all) {
  Triplets t{s.users, s.items, {}, {}, {}};
  for (int64_t u = 0; u < s.users; ++u) {
    for (int64_t i = 0; i < s.items; ++i) {
      if (u == none || (u != all && rng() % 5 != 0)) continue;
      t.r.push_back(static_cast<int32_t>(u));
      t.c.push_back(static_cast<int32_t>(i));
      t.v.push_back(1.0f);
    }
  }
  return t;
}

// Which kernels device copies made in its scope may use for recommend: kAny (the two passes
// where they serve, else the single-pass 16-bit kernel on factors that are exactly 16-bit
// values, as exact data is, else the float32 one), kSinglePass (no two passes) or kFloat32.
enum class Kernels { kAny, kSinglePass, kFloat32 };

class KernelChoice {
 public:
  explicit KernelChoice(Kernels k)
      : before_16bit_(sfac_testing_allow_16bit_top_n(k != Kernels::kFloat32 ? 1 : 0)),
        before_two_pass_(sfac_testing_allow_two_pass_top_n(k == Kernels::kAny ? 1 : 0)) {}
  ~KernelChoice() {
    sfac_testing_allow_16bit_top_n(before_16bit_);
    sfac_testing_allow_two_pass_top_n(before_two_pass_);
  }
  KernelChoice(const KernelChoice&) = delete;
  KernelChoice& operator=(const KernelChoice&) = delete;

 private:
  int before_16bit_, before_two_pass_;
};

// Device copies made in its scope score with the float32 kernel only (on: no 16-bit kernel and
// no two passes).
class Float32KernelOnly {
 public:
  explicit Float32KernelOnly(bool on) : choice_(on ? Kernels::kFloat32 : Kernels::kAny) {}

 private:
  KernelChoice choice_;
};

// Whether the two passes' scan may use warpgroup mma (compute capability 9.0) in its scope; the
// warp-mma scan of other devices otherwise. Checks on leaving that the warpgroup scan ran
// exactly where it was allowed on such a device (the scope's calls fold scores: bfloat16 rows
// of rank <= 120).
class WarpgroupScan {
 public:
  explicit WarpgroupScan(bool allow)
      : allow_(allow),
        before_(sfac_testing_allow_warpgroup_top_n_scan(allow ? 1 : 0)),
        launches_(sfac_testing_warpgroup_top_n_scans()) {}
  ~WarpgroupScan() {
    sfac_testing_allow_warpgroup_top_n_scan(before_);
    const bool ran = sfac_testing_warpgroup_top_n_scans() > launches_;
    EXPECT_EQ(ran, allow_ && compute_9_0()) << "warpgroup scan allowed: " << allow_;
  }
  WarpgroupScan(const WarpgroupScan&) = delete;
  WarpgroupScan& operator=(const WarpgroupScan&) = delete;
  // Whether the scope's scans are the warpgroup scan's.
  bool runs() const { return allow_ && compute_9_0(); }

 private:
  static bool compute_9_0() {
#ifdef SFAC_TEST_CUDART
    int device = 0, major = 0, minor = 0;
    return cudaGetDevice(&device) == cudaSuccess &&
           cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) ==
               cudaSuccess &&
           cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) ==
               cudaSuccess &&
           major == 9 && minor == 0;
#else
    return false;
#endif
  }
  bool allow_;
  int before_;
  int64_t launches_;
};

// Users the two passes listed and left since the process started.
struct TwoPassCounts {
  int64_t listed = 0, left = 0;
  static TwoPassCounts now() {
    TwoPassCounts c;
    sfac_testing_two_pass_top_n_counts(&c.listed, &c.left);
    return c;
  }
};

// x rounded to the nearest bfloat16 (even on ties) or float16 value (magnitudes below float16's
// normal range become 0, so that every value is exactly a float16 one).
float round_16bit(float x, bool bf16) {
  if (bf16) {
    uint32_t bits;
    std::memcpy(&bits, &x, sizeof bits);
    bits = (bits + 0x7fffu + ((bits >> 16) & 1u)) & 0xffff0000u;
    std::memcpy(&x, &bits, sizeof x);
    return x;
  }
  if (std::abs(x) < 0x1p-14f) return 0.0f;
  int exponent = 0;
  const float mantissa = std::frexp(x, &exponent);  // in [0.5, 1): 11 significant bits kept
  return std::ldexp(std::nearbyint(std::ldexp(mantissa, 11)), exponent - 11);
}

// Outputs poisoned first (ids 0x7f7f7f7f, scores NaN), so that a call that writes nothing, or
// not every slot, cannot match an answer.
TopN poisoned(size_t size) {
  TopN t;
  t.items.assign(size, kPoisonItem);
  t.scores.assign(size, std::numeric_limits<float>::quiet_NaN());
  return t;
}

bool still_poisoned(const TopN& t) {
  return std::all_of(t.items.begin(), t.items.end(), [](int32_t i) { return i == kPoisonItem; }) &&
         std::all_of(t.scores.begin(), t.scores.end(), [](float f) { return std::isnan(f); });
}

sfac_status call_recommend(const sfac_model* m, const std::vector<int32_t>& users, int n,
                           const sfac_sparse* exclude, const std::vector<int32_t>* allowed,
                           TopN& out) {
  return sfac_model_recommend(m, static_cast<int64_t>(users.size()), users.data(), n, exclude,
                              allowed ? static_cast<int64_t>(allowed->size()) : 0,
                              allowed ? allowed->data() : nullptr, out.items.data(),
                              out.scores.data(), static_cast<int64_t>(out.items.size()));
}

TopN top_items(const sfac_model* m, const std::vector<int32_t>& users, int n,
               const sfac_sparse* exclude = nullptr,
               const std::vector<int32_t>* allowed = nullptr) {
  TopN out = poisoned(users.size() * n);
  SFAC_EXPECT_STATUS(SFAC_OK, call_recommend(m, users, n, exclude, allowed, out));
  return out;
}

TopN top_similar(const sfac_model* m, const std::vector<int32_t>& items, int n) {
  TopN out = poisoned(items.size() * n);
  SFAC_EXPECT_STATUS(
      SFAC_OK, sfac_model_similar_items(m, static_cast<int64_t>(items.size()), items.data(), n,
                                        out.items.data(), out.scores.data(),
                                        static_cast<int64_t>(out.items.size())));
  return out;
}

std::string format_row(const int32_t* items, const float* scores, int n) {
  std::ostringstream s;
  for (int j = 0; j < std::min(n, 10); ++j) s << items[j] << ":" << scores[j] << " ";
  if (n > 10) s << "...";
  return s.str();
}

// Bit for bit: on a difference, reports the first row that differs.
void expect_identical(const TopN& cpu, const TopN& gpu, int n) {
  ASSERT_EQ(gpu.items.size(), cpu.items.size());
  for (size_t r = 0; r * n < cpu.items.size(); ++r) {
    const size_t at = r * n;
    if (std::memcmp(&cpu.items[at], &gpu.items[at], n * sizeof(int32_t)) != 0 ||
        std::memcmp(&cpu.scores[at], &gpu.scores[at], n * sizeof(float)) != 0) {
      ADD_FAILURE() << "row " << r
                    << " differs\n  cpu: " << format_row(&cpu.items[at], &cpu.scores[at], n)
                    << "\n  gpu: " << format_row(&gpu.items[at], &gpu.scores[at], n);
      return;
    }
  }
}

bool padding_only(const TopN& t, size_t row, int n) {
  for (size_t at = row * n; at < (row + 1) * n; ++at) {
    if (t.items[at] != -1 || t.scores[at] != -kInf) return false;
  }
  return true;
}

// Equal scores next to each other in the CPU's lists (not padding).
int64_t adjacent_ties(const TopN& t, int n) {
  int64_t ties = 0;
  for (size_t at = 0; at + 1 < t.items.size(); ++at) {
    if ((at + 1) % n != 0 && t.items[at + 1] >= 0 && t.scores[at] == t.scores[at + 1]) ++ties;
  }
  return ties;
}

struct Tolerance {
  double relative, absolute;
  bool close(double a, double b) const {
    return std::abs(a - b) <= relative * std::max(std::abs(a), std::abs(b)) + absolute;
  }
};

// Lists of rounded scores: `cpu` holds n + 1 entries a row (so the score after the last one is
// known), `gpu` n. Every GPU score is within tolerance of the CPU's in its slot; where a CPU
// score is within tolerance of a neighbour the order may differ, and the GPU's item must then
// score (score_of(row, item), the CPU's own score) within tolerance of that slot; elsewhere the
// items are the CPU's. Returns the first difference, "" when none.
template <typename ScoreOf>
std::string first_difference(const TopN& cpu, const TopN& gpu, int n, int64_t items, Tolerance tol,
                             ScoreOf score_of) {
  for (size_t r = 0; r * n < gpu.items.size(); ++r) {
    const int32_t* ci = &cpu.items[r * (n + 1)];
    const float* cs = &cpu.scores[r * (n + 1)];
    const int32_t* gi = &gpu.items[r * n];
    const float* gs = &gpu.scores[r * n];
    std::set<int32_t> listed;
    std::ostringstream why;
    for (int j = 0; j < n && why.str().empty(); ++j) {
      if (ci[j] < 0) {
        if (gi[j] != -1 || gs[j] != -kInf) why << "slot " << j << " is not padding";
        continue;
      }
      const bool tied =
          (j > 0 && tol.close(cs[j - 1], cs[j])) || (ci[j + 1] >= 0 && tol.close(cs[j], cs[j + 1]));
      if (!tol.close(gs[j], cs[j])) {
        why << "slot " << j << " scores " << gs[j] << ", the cpu " << cs[j];
      } else if (gi[j] < 0 || gi[j] >= items || !listed.insert(gi[j]).second) {
        why << "slot " << j << " holds item " << gi[j] << " (invalid or repeated)";
      } else if (!tied && gi[j] != ci[j]) {
        why << "slot " << j << " holds item " << gi[j] << ", the cpu " << ci[j];
      } else if (tied && !tol.close(score_of(r, gi[j]), cs[j])) {
        why << "slot " << j << " holds item " << gi[j] << ", not tied with " << cs[j];
      }
    }
    if (!why.str().empty()) {
      return "row " + std::to_string(r) + ": " + why.str() +
             "\n  cpu: " + format_row(ci, cs, n + 1) + "\n  gpu: " + format_row(gi, gs, n);
    }
  }
  return "";
}

// Cosine of items queries[row] and `item` in fp64 from the factors (0 where either is zero).
auto cosine_of(const ModelState& d, const std::vector<int32_t>& queries) {
  return [&d, &queries](size_t row, int32_t item) {
    const double q = reference_dot(d.y, d.y, queries[row], queries[row], d.rank).value;
    const double j = reference_dot(d.y, d.y, item, item, d.rank).value;
    const double dot = reference_dot(d.y, d.y, queries[row], item, d.rank).value;
    return q > 0 && j > 0 ? dot / (std::sqrt(q) * std::sqrt(j)) : 0.0;
  };
}

// The CPU's score of (users[row], item), as its recommend computes it.
auto predicted(const sfac_model* cpu_model, const std::vector<int32_t>& users) {
  return [cpu_model, &users](size_t row, int32_t item) {
    float s = 0.0f;
    EXPECT_EQ(sfac_model_predict(cpu_model, 1, &users[row], &item, &s), SFAC_OK);
    return static_cast<double>(s);
  };
}

// The GPU's lists of `users` by the two passes against the CPU's: every row bit for bit, except
// at most `left` rows (users the two passes left to the single pass, with more near-equal
// scores than the scan keeps: rare on random data), which agree up to near-ties.
void expect_two_pass_lists(const sfac_model* cpu_model, const std::vector<int32_t>& users, int n,
                           const sfac_sparse* exclude, const TopN& gpu, int64_t left,
                           int64_t items) {
  const TopN cpu = top_items(cpu_model, users, n, exclude);
  ASSERT_EQ(gpu.items.size(), cpu.items.size());
  int64_t differing = 0;
  std::string first;
  for (size_t at = 0; at < cpu.items.size(); at += n) {
    if (std::memcmp(&cpu.items[at], &gpu.items[at], n * sizeof(int32_t)) != 0 ||
        std::memcmp(&cpu.scores[at], &gpu.scores[at], n * sizeof(float)) != 0) {
      if (differing++ == 0) {
        first = "row " + std::to_string(at / n) +
                "\n  cpu: " + format_row(&cpu.items[at], &cpu.scores[at], n) +
                "\n  gpu: " + format_row(&gpu.items[at], &gpu.scores[at], n);
      }
    }
  }
  EXPECT_LE(differing, left) << "rows the two passes listed differ from the CPU's, first " << first;
  if (differing > 0) {
    EXPECT_EQ(first_difference(top_items(cpu_model, users, n + 1, exclude), gpu, n, items,
                               Tolerance{1e-5, 1e-6}, predicted(cpu_model, users)),
              "");
  }
}

class CudaRanking : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string missing = backend_missing(SFAC_BACKEND_CUDA);
    if (!missing.empty()) GTEST_SKIP() << missing;
    cpu = make_cpu_context(4, test_seed());
    gpu = make_context(SFAC_BACKEND_CUDA, 0, test_seed());
    ASSERT_TRUE(cpu && gpu);
  }

  template <typename T>
  struct Both {
    T cpu, gpu;
  };
  // The same matrix on each context (a model takes only matrices of its own).
  Both<Sparse> matrices(const Triplets& t) {
    return {create_sparse(cpu.get(), t), create_sparse(gpu.get(), t)};
  }
  // The data as a model of the CPU context and that model's copy on the CUDA context.
  Both<Model> models(const ModelState& d) {
    Model on_cpu = make_model(cpu.get(), d, dir.file("model" + std::to_string(files++) + ".bin"));
    Model on_gpu = on_cpu ? copy_model(on_cpu.get(), gpu.get()) : nullptr;
    return {std::move(on_cpu), std::move(on_gpu)};
  }

  Context cpu, gpu;
  ScratchDir dir{"sfac-cuda-recommend"};
  int files = 0;
  std::mt19937_64 rng{test_seed() + 11};
};

using CudaRecommend = CudaRanking;
using CudaSimilarItems = CudaRanking;
class CudaRecommendExact : public CudaRanking, public ::testing::WithParamInterface<Shape> {};

}  // namespace

// Exact scores: every list is the CPU's bit for bit, ties (asserted to occur) broken by the
// lower id, for n below, at and above the catalogue, with exclusions (a user with none, a user
// who saw everything: all padding), an allow-list (unsorted, repeats), biases, repeated users,
// request and catalogue sizes that are not multiples of the 64 x 64 tiles, and a single user.
TEST_P(CudaRecommendExact, ListsAreTheCpusBitForBit) {
  const Shape s = GetParam();
  const float step = s.rank <= 3 ? 1.0f / 16 : 1.0f / 4;  // coarse values tie at large ranks
  const int64_t none = s.users > 1 ? 0 : -1, all = s.users > 1 ? s.users - 1 : -1;
  const Both<Sparse> excluded = matrices(seen_items(rng, s, none, all));
  std::vector<int32_t> many = random_ids(rng, 200, s.users);
  many.insert(many.begin() + 3, {many[0], many[0]});
  if (s.users > 1) many.insert(many.end(), {static_cast<int32_t>(none), static_cast<int32_t>(all)});
  const std::vector<int32_t> one = {many[1]};
  std::vector<int32_t> allowed = random_ids(rng, std::max<int64_t>(4, s.items / 3), s.items);
  allowed.push_back(allowed[0]);

  int64_t ties = 0;
  for (const Kernels kernels : {Kernels::kAny, Kernels::kSinglePass, Kernels::kFloat32}) {
    const KernelChoice kernel(kernels);
    for (const bool biases : {false, true}) {
      const Both<Model> m = models(exact_data(rng, s, biases, step));
      ASSERT_TRUE(m.cpu && m.gpu);
      for (const int n : {1, 10, 100, 128}) {
        for (int variant = 0; variant < 8; ++variant) {
          const bool exclude = variant & 1, allow = variant & 2, single = variant & 4;
          const std::vector<int32_t>& users = single ? one : many;
          SCOPED_TRACE(testing::Message() << "kernels " << static_cast<int>(kernels) << " biases "
                                          << biases << " n " << n << " exclude " << exclude
                                          << " allow-list " << allow << " users " << users.size());
          const TopN want = top_items(m.cpu.get(), users, n, exclude ? excluded.cpu.get() : nullptr,
                                      allow ? &allowed : nullptr);
          const TopN got = top_items(m.gpu.get(), users, n, exclude ? excluded.gpu.get() : nullptr,
                                     allow ? &allowed : nullptr);
          expect_identical(want, got, n);
          ties += adjacent_ties(want, n);
          for (size_t r = 0; exclude && r < users.size(); ++r) {
            EXPECT_TRUE(users[r] != all || padding_only(got, r, n)) << "row " << r << " saw all";
          }
        }
      }
    }
  }
  EXPECT_GT(ties, 0) << "the data should produce equal scores";
}

INSTANTIATE_TEST_SUITE_P(Shapes, CudaRecommendExact,
                         ::testing::Values(Shape{1000, 3000, 1}, Shape{1000, 3000, 3},
                                           Shape{1000, 3000, 32}, Shape{1000, 3000, 33},
                                           Shape{400, 700, 100}, Shape{400, 700, 128},
                                           Shape{100, 300, 512}, Shape{1, 7, 3}, Shape{70, 7, 33}),
                         [](const ::testing::TestParamInfo<Shape>& i) {
                           return "Users" + std::to_string(i.param.users) + "Items" +
                                  std::to_string(i.param.items) + "Rank" +
                                  std::to_string(i.param.rank);
                         });

// Rounded scores: the CPU's lists up to the order of items whose CPU scores are within 1e-5
// relative of each other.
TEST_F(CudaRecommend, GaussianFactorsAgreeUpToNearTies) {
  const Tolerance tol{1e-5, 1e-6};
  for (const Shape s : {Shape{1000, 2500, 8}, Shape{1000, 2500, 70}}) {
    const Both<Sparse> excluded = matrices(seen_items(rng, s, 0, -1));
    const Both<Model> m = models(gaussian_data(rng, s, s.rank > 8));
    ASSERT_TRUE(m.cpu && m.gpu);
    const std::vector<int32_t> users = random_ids(rng, 300, s.users);
    for (const int n : {10, 100}) {
      for (const bool exclude : {false, true}) {
        SCOPED_TRACE(testing::Message()
                     << "rank " << s.rank << " n " << n << " exclude " << exclude);
        const TopN want =
            top_items(m.cpu.get(), users, n + 1, exclude ? excluded.cpu.get() : nullptr);
        const TopN got = top_items(m.gpu.get(), users, n, exclude ? excluded.gpu.get() : nullptr);
        EXPECT_EQ(first_difference(want, got, n, s.items, tol, predicted(m.cpu.get(), users)), "");
      }
    }
  }
}

// Gaussian factors rounded to bfloat16 or float16 values take the 16-bit kernel: its scores sum
// exact products in another order than the CPU, so the lists agree up to near-ties.
TEST_F(CudaRecommend, SixteenBitFactorsAgreeUpToNearTies) {
  const Tolerance tol{1e-5, 1e-6};
  for (const bool bf16 : {true, false}) {
    for (const Shape s : {Shape{700, 2500, 16}, Shape{700, 2500, 100}, Shape{300, 1000, 128}}) {
      ModelState d = gaussian_data(rng, s, s.rank != 16);
      for (auto* v : {&d.x, &d.y}) {
        for (float& x : *v) x = round_16bit(x, bf16);
      }
      const Both<Sparse> excluded = matrices(seen_items(rng, s, 0, s.users - 1));
      const Both<Model> m = models(d);
      ASSERT_TRUE(m.cpu && m.gpu);
      const std::vector<int32_t> users = random_ids(rng, 300, s.users);
      std::vector<int32_t> allowed = random_ids(rng, 500, s.items);
      for (const int n : {10, 100}) {
        for (int variant = 0; variant < 4; ++variant) {
          const bool exclude = variant & 1, allow = variant & 2;
          SCOPED_TRACE(testing::Message() << "bf16 " << bf16 << " rank " << s.rank << " n " << n
                                          << " exclude " << exclude << " allow " << allow);
          const TopN want = top_items(m.cpu.get(), users, n + 1,
                                      exclude ? excluded.cpu.get() : nullptr,
                                      allow ? &allowed : nullptr);
          const TopN got = top_items(m.gpu.get(), users, n, exclude ? excluded.gpu.get() : nullptr,
                                     allow ? &allowed : nullptr);
          EXPECT_EQ(first_difference(want, got, n, s.items, tol, predicted(m.cpu.get(), users)),
                    "");
        }
      }
      const std::vector<int32_t> queries = random_ids(rng, 100, s.items);
      const TopN want = top_similar(m.cpu.get(), queries, 11);
      EXPECT_EQ(first_difference(want, top_similar(m.gpu.get(), queries, 10), 10, s.items,
                                 Tolerance{0.0, 1e-6}, cosine_of(d, queries)),
                "");
    }
  }
}

// The two passes (a sampled cut, a 16-bit scan, exact rescoring of the survivors): on Gaussian
// factors, float32 (which the scan rounds to bfloat16) or exactly bfloat16 or float16 values,
// the lists and scores are the CPU's bit for bit, with and without biases and exclusions (a
// user who saw nothing among them). A user who saw all but the last five items has fewer
// unseen items in the sample than n: every item survives the scan, and the single pass answers
// (scores rounded in another order: equal up to near-ties).
TEST_F(CudaRecommend, TwoPassListsAreTheCpusBitForBit) {
  const KernelChoice kernel(Kernels::kAny);
  const TwoPassCounts before = TwoPassCounts::now();
  int64_t asked = 0;
  int storage = 0;  // float32, bfloat16, float16 values in turn
  for (const bool warpgroup : {true, false}) {
    const WarpgroupScan scan(warpgroup);
    for (const Shape s : {Shape{400, 6000, 100}, Shape{400, 6000, 37}, Shape{300, 20000, 128},
                          Shape{500, 5000, 16}, Shape{300, 3000, 1}}) {
      Triplets seen{s.users, s.items, {}, {}, {}};
      for (int64_t u = 1; u < s.users; ++u) {
        for (int64_t i = 0; i < s.items; ++i) {
          if (u == 1 ? i >= s.items - 5 : rng() % 5 != 0) continue;
          seen.r.push_back(static_cast<int32_t>(u));
          seen.c.push_back(static_cast<int32_t>(i));
          seen.v.push_back(1.0f);
        }
      }
      const Both<Sparse> excluded = matrices(seen);
      std::vector<int32_t> users = random_ids(rng, 300, s.users);
      users.erase(std::remove(users.begin(), users.end(), 1), users.end());
      users.push_back(0);
      const std::vector<int32_t> saw_most = {1};
      for (const bool biases : {false, true}) {
        ModelState d = gaussian_data(rng, s, biases);
        const int values = storage++ % 3;
        for (auto* v : {&d.x, &d.y}) {
          for (float& x : *v) x = values == 0 ? x : round_16bit(x, values == 1);
        }
        const Both<Model> m = models(d);
        ASSERT_TRUE(m.cpu && m.gpu);
        for (const int n : {1, 10, 32}) {
          for (const bool exclude : {false, true}) {
            SCOPED_TRACE(testing::Message()
                         << "warpgroup scan " << warpgroup << " rank " << s.rank << " items "
                         << s.items << " values " << values << " biases " << biases << " n " << n
                         << " exclude " << exclude);
            const sfac_sparse* e_cpu = exclude ? excluded.cpu.get() : nullptr;
            const sfac_sparse* e_gpu = exclude ? excluded.gpu.get() : nullptr;
            const TwoPassCounts call = TwoPassCounts::now();
            const TopN got = top_items(m.gpu.get(), users, n, e_gpu);
            expect_two_pass_lists(m.cpu.get(), users, n, e_cpu, got,
                                  TwoPassCounts::now().left - call.left, s.items);
            EXPECT_EQ(first_difference(top_items(m.cpu.get(), saw_most, n + 1, e_cpu),
                                       top_items(m.gpu.get(), saw_most, n, e_gpu), n, s.items,
                                       Tolerance{1e-5, 1e-6}, predicted(m.cpu.get(), saw_most)),
                      "");
            asked += static_cast<int64_t>(users.size()) + 1;
          }
        }
      }
    }
  }
  const TwoPassCounts after = TwoPassCounts::now();
  const int64_t listed = after.listed - before.listed, left = after.left - before.left;
  EXPECT_EQ(listed + left, asked) << "every call here is one the two passes serve";
  EXPECT_GE(left, 2 * 5 * 2 * 2) << "the user who saw most items, with exclusions, n > 5";
  EXPECT_GT(listed, asked * 9 / 10);
}

// More users than one launch of the two passes takes (launches of whole waves of the scan's
// blocks, about a quarter of the users each, the last cut to one wave: 180,000 users are four
// or more launches on any device of up to 148 SMs, whose lists download while the next launch
// runs): every launch's lists land in their rows, the users left to the single pass counted in
// the right launch.
TEST_F(CudaRecommend, TwoPassListsOfManyLaunches) {
  const KernelChoice kernel(Kernels::kAny);
  const Shape s{180000, 2000, 8};
  ModelState d = gaussian_data(rng, s, true);
  for (auto* v : {&d.x, &d.y}) {
    for (float& x : *v) x = round_16bit(x, true);
  }
  const Both<Model> m = models(d);
  ASSERT_TRUE(m.cpu && m.gpu);
  const Both<Sparse> excluded = matrices(seen_items(rng, s, 5, 7));
  std::vector<int32_t> users(static_cast<size_t>(s.users));
  std::iota(users.begin(), users.end(), 0);
  std::shuffle(users.begin(), users.end(), rng);
  for (const bool warpgroup : {true, false}) {
    SCOPED_TRACE(testing::Message() << "warpgroup scan " << warpgroup);
    const WarpgroupScan scan(warpgroup);
    const TwoPassCounts before = TwoPassCounts::now();
    const TopN got = top_items(m.gpu.get(), users, 10, excluded.gpu.get());
    const TwoPassCounts after = TwoPassCounts::now();
    EXPECT_EQ(after.listed + after.left - before.listed - before.left, s.users);
    EXPECT_GE(after.left - before.left, 1) << "user 7 saw every item: fewer than n unseen";
    expect_two_pass_lists(m.cpu.get(), users, 10, excluded.cpu.get(), got, after.left - before.left,
                          s.items);
  }
}

#ifdef SFAC_TEST_CUDART
// What folded scores rest on, checked on the host (no device needed): the bfloat16 rounding is
// to nearest, ties to even, and three bfloat16 parts hold a float exactly wherever the parts
// stay in float's normal range (magnitudes from 2^-110 to 2^127), signed zeros included.
TEST(TopNFoldedTails, ThreeBfloat16PartsHoldAFloatExactly) {
  std::mt19937_64 g(test_seed() + 3);
  std::uniform_int_distribution<int> exponent(-110, 120);
  std::uniform_int_distribution<uint32_t> mantissa(0, (1u << 24) - 1);
  std::vector<float> values = {0.0f,          -0.0f,         1.0f,        -1.0f,
                               0x1.fffffep0f, 0x1.000002p0f, 0x1.00ffp0f, 0x1.0180p0f,
                               0x1.0080p0f,   0x1p100f,      -5000.125f};
  for (int i = 0; i < 200000; ++i) {
    const float m = static_cast<float>(mantissa(g) | (1u << 23)) * 0x1p-23f;  // [1, 2)
    values.push_back((g() & 1 ? -1.0f : 1.0f) * std::ldexp(m, exponent(g)));
  }
  for (const float x : values) {
    uint16_t parts[3];
    sfac::cuda::kernels::split_bfloat16x3(x, parts);
    double sum = 0.0;
    for (const uint16_t part : parts) {
      __nv_bfloat16_raw raw;
      raw.x = part;
      sum += __bfloat162float(__nv_bfloat16(raw));
    }
    ASSERT_EQ(sum, static_cast<double>(x)) << std::hexfloat << x;
    ASSERT_EQ(__bfloat162float(__float2bfloat16_rn(x)), round_16bit(x, true)) << std::hexfloat << x;
  }
}
#endif

// Offsets and biases far larger than the dot products (a mean of 5,000, biases of a few hundred,
// user biases of either sign): the scan's folded scores carry them and the cut through the
// tensor cores' sums in bfloat16 parts, and the lists are still the CPU's bit for bit, from the
// two passes, on float32 (rounded rows) and bfloat16 factors at ranks that fold with a tail of
// 8 values (100) and of 16 (8).
TEST_F(CudaRecommend, TwoPassFoldedScoresHoldWithLargeBiases) {
  const KernelChoice kernel(Kernels::kAny);
  for (const bool warpgroup : {true, false}) {
    const WarpgroupScan scan(warpgroup);
    for (const Shape s : {Shape{300, 5000, 100}, Shape{300, 5000, 8}}) {
      for (const bool bf16 : {false, true}) {
        ModelState d = gaussian_data(rng, s, true);
        d.mean += 5000.0f;
        for (auto* v : {&d.user_bias, &d.item_bias}) {
          for (float& b : *v) b *= 1000.0f;
        }
        if (bf16) {
          for (auto* v : {&d.x, &d.y}) {
            for (float& x : *v) x = round_16bit(x, true);
          }
        }
        const Both<Model> m = models(d);
        ASSERT_TRUE(m.cpu && m.gpu);
        const Both<Sparse> excluded = matrices(seen_items(rng, s, 0, -1));
        const std::vector<int32_t> users = random_ids(rng, 200, s.users);
        for (const bool exclude : {false, true}) {
          SCOPED_TRACE(testing::Message() << "warpgroup scan " << warpgroup << " rank " << s.rank
                                          << " bf16 " << bf16 << " exclude " << exclude);
          const TwoPassCounts before = TwoPassCounts::now();
          expect_identical(
              top_items(m.cpu.get(), users, 10, exclude ? excluded.cpu.get() : nullptr),
              top_items(m.gpu.get(), users, 10, exclude ? excluded.gpu.get() : nullptr), 10);
          const TwoPassCounts after = TwoPassCounts::now();
          EXPECT_EQ(after.listed - before.listed, static_cast<int64_t>(users.size()));
        }
      }
    }
  }
}

// Users with more near-equal scores than the scan keeps (half the catalogue repeats one item,
// with a bias that puts it first) are answered by the single pass; the lists are still the
// CPU's, the ties broken by the lower id.
TEST_F(CudaRecommend, TwoPassLeavesUsersWithManyTiesToTheSinglePass) {
  const KernelChoice kernel(Kernels::kAny);
  const Shape s{200, 4000, 24};
  ModelState d = exact_data(rng, s, true, 1.0f / 16);
  for (int64_t i = 1; i < s.items / 2; ++i) {
    std::copy_n(d.y.begin(), s.rank, d.y.begin() + i * s.rank);
  }
  for (int64_t i = 0; i < s.items / 2; ++i) d.item_bias[i] = 64.0f;
  const Both<Model> m = models(d);
  ASSERT_TRUE(m.cpu && m.gpu);
  const Both<Sparse> excluded = matrices(seen_items(rng, s, 0, -1));
  const std::vector<int32_t> users = random_ids(rng, 150, s.users);
  for (const bool exclude : {false, true}) {
    SCOPED_TRACE(testing::Message() << "exclude " << exclude);
    const TwoPassCounts before = TwoPassCounts::now();
    expect_identical(top_items(m.cpu.get(), users, 10, exclude ? excluded.cpu.get() : nullptr),
                     top_items(m.gpu.get(), users, 10, exclude ? excluded.gpu.get() : nullptr), 10);
    const TwoPassCounts after = TwoPassCounts::now();
    EXPECT_EQ(after.left - before.left, static_cast<int64_t>(users.size()));
    EXPECT_EQ(after.listed, before.listed);
  }
}

// The warpgroup scan gives each of the 4 threads that see a query's candidates its own 128
// survivor slots: 240 near-equal items that all fall to one of them (ids 0 and 1 mod 8) overflow
// that segment though the query's 512 slots are not full, and the query takes the single pass;
// the warp-mma scan's one segment keeps them. The lists are the CPU's either way.
TEST_F(CudaRecommend, TwoPassLeavesUsersWithAFullSegmentToTheSinglePass) {
  const KernelChoice kernel(Kernels::kAny);
  const Shape s{200, 4000, 24};
  ModelState d = exact_data(rng, s, true, 1.0f / 16);
  int64_t alike = 0;
  for (int64_t i = 0; alike < 240; ++i) {
    if (i % 8 >= 2) continue;
    std::copy_n(d.y.begin(), s.rank, d.y.begin() + i * s.rank);
    d.item_bias[i] = 64.0f;
    ++alike;
  }
  const Both<Model> m = models(d);
  ASSERT_TRUE(m.cpu && m.gpu);
  const Both<Sparse> excluded = matrices(seen_items(rng, s, 0, -1));
  const std::vector<int32_t> users = random_ids(rng, 150, s.users);
  for (const bool warpgroup : {false, true}) {
    const WarpgroupScan scan(warpgroup);
    for (const bool exclude : {false, true}) {
      SCOPED_TRACE(testing::Message() << "warpgroup " << warpgroup << ", exclude " << exclude);
      const TwoPassCounts before = TwoPassCounts::now();
      expect_identical(top_items(m.cpu.get(), users, 10, exclude ? excluded.cpu.get() : nullptr),
                       top_items(m.gpu.get(), users, 10, exclude ? excluded.gpu.get() : nullptr),
                       10);
      const TwoPassCounts after = TwoPassCounts::now();
      const int64_t left = scan.runs() ? static_cast<int64_t>(users.size()) : 0;
      EXPECT_EQ(after.left - before.left, left);
      EXPECT_EQ(after.listed - before.listed, static_cast<int64_t>(users.size()) - left);
    }
  }
}

// A device memory limit that holds the model and a single-pass call but not the two passes'
// survivors: the call takes the single pass (lists equal up to near-ties); with room, the two
// passes (bit for bit). The copy is 6,300 rows of 32 floats and of 32 16-bit values, the items'
// 16-bit rows again with their tails (the scan's folded scores: 32 values) and a margin a user
// (1,594,800 bytes); 100 users' single pass needs 8.4 KB, their two passes over 400 KB.
TEST_F(CudaRecommend, TwoPassGivesWayToTheSinglePassUnderALimit) {
  const KernelChoice kernel(Kernels::kAny);
  const Shape s{300, 6000, 24};
  const Both<Model> m = models(gaussian_data(rng, s, false));
  ASSERT_TRUE(m.cpu && m.gpu);
  const std::vector<int32_t> users = random_ids(rng, 100, s.users);
  for (const int64_t limit : {int64_t{1650000}, int64_t{4} << 20}) {
    SCOPED_TRACE(testing::Message() << "limit " << limit);
    SFAC_ASSERT_OK(sfac_context_set_device_memory_limit(gpu.get(), limit));
    const TwoPassCounts before = TwoPassCounts::now();
    const TopN got = top_items(m.gpu.get(), users, 10);
    const TwoPassCounts after = TwoPassCounts::now();
    if (limit < (int64_t{1} << 20) * 2) {
      EXPECT_EQ(after.listed, before.listed);
      EXPECT_EQ(first_difference(top_items(m.cpu.get(), users, 11), got, 10, s.items,
                                 Tolerance{1e-5, 1e-6}, predicted(m.cpu.get(), users)),
                "");
    } else {
      EXPECT_EQ(after.listed - before.listed, static_cast<int64_t>(users.size()));
      expect_identical(top_items(m.cpu.get(), users, 10), got, 10);
    }
  }
  SFAC_ASSERT_OK(sfac_context_set_device_memory_limit(gpu.get(), 0));
}

// Cosine on exact data: the norms' square roots round, so ids agree where neighbouring CPU
// scores are more than 1e-6 apart and scores within 1e-6; no item is its own neighbour; the
// all-zero item is similarity 0 to everything (its own list: the lowest other ids).
TEST_F(CudaSimilarItems, CosineIsTheCpusUpToRounding) {
  const Tolerance tol{0.0, 1e-6};
  for (const bool float32_only : {false, true})
  for (const Shape s :
       {Shape{2, 3000, 3}, Shape{2, 3000, 33}, Shape{2, 700, 128}, Shape{2, 7, 3}}) {
    const int32_t zero = static_cast<int32_t>(s.items / 2);
    const ModelState d = exact_data(rng, s, false, 1.0f / 16, zero);
    const Float32KernelOnly kernel(float32_only);
    const Both<Model> m = models(d);
    ASSERT_TRUE(m.cpu && m.gpu);
    std::vector<int32_t> queries = random_ids(rng, 150, s.items);
    queries.insert(queries.end(), {zero, queries[0], zero});
    for (const int n : {1, 10, 100, 128}) {
      SCOPED_TRACE(testing::Message() << "float32 kernel only " << float32_only << " items "
                                      << s.items << " rank " << s.rank << " n " << n);
      const TopN want = top_similar(m.cpu.get(), queries, n + 1);
      const TopN got = top_similar(m.gpu.get(), queries, n);
      EXPECT_EQ(first_difference(want, got, n, s.items, tol, cosine_of(d, queries)), "");
      for (size_t r = 0; r < queries.size(); ++r) {
        const auto row = got.items.begin() + r * n;
        for (int j = 0; j < n; ++j) {
          const int32_t item = row[j];
          EXPECT_NE(item, queries[r]) << "row " << r << " lists its own query";
          if (item == zero || (queries[r] == zero && item >= 0)) {
            EXPECT_EQ(got.scores[r * n + j], 0.0f) << "row " << r << ": the zero item's similarity";
          }
        }
        if (queries[r] == zero) {  // every score exactly 0: ties by the lower id, as on the CPU
          const auto cpu_row = want.items.begin() + r * (n + 1);
          EXPECT_EQ(std::vector<int32_t>(row, row + n), std::vector<int32_t>(cpu_row, cpu_row + n));
        }
      }
    }
  }
}

// n above what the device serves (128): the host answers, so bit for bit the CPU's.
TEST_F(CudaRecommend, LargeNIsTheCpusAnswer) {
  const Shape s{500, 1000, 16};
  const Both<Sparse> excluded = matrices(seen_items(rng, s, 0, s.users - 1));
  const ModelState d = exact_data(rng, s, true, 1.0f / 4);
  const Both<Model> m = models(d);
  ASSERT_TRUE(m.cpu && m.gpu);
  const std::vector<int32_t> users = random_ids(rng, 150, s.users);
  std::vector<int32_t> allowed = random_ids(rng, 400, s.items);
  for (const int n : {129, 200}) {
    SCOPED_TRACE(testing::Message() << "n " << n);
    expect_identical(top_items(m.cpu.get(), users, n), top_items(m.gpu.get(), users, n), n);
    expect_identical(top_items(m.cpu.get(), users, n, excluded.cpu.get(), &allowed),
                     top_items(m.gpu.get(), users, n, excluded.gpu.get(), &allowed), n);
    // Similar items too (user ids serve as item ids); cosines may round on either side.
    const TopN want = top_similar(m.cpu.get(), users, n + 1);
    EXPECT_EQ(first_difference(want, top_similar(m.gpu.get(), users, n), n, s.items,
                               Tolerance{0.0, 1e-6}, cosine_of(d, users)),
              "");
  }
}

// Ranking metrics from the device's lists and RMSE / MAE from the device's predictions: on
// exact data the lists are the CPU's, so the metrics are equal; the error sums add the same
// predictions in another order (fp64). k above 128 is the host's answer.
TEST_F(CudaRecommend, MetricsAreTheCpus) {
  const Shape s{700, 900, 33};
  Triplets test = seen_items(rng, s, 3, -1), seen = seen_items(rng, s, -1, 5);
  std::uniform_int_distribution<int> stars(1, 5);
  for (float& v : test.v) v = static_cast<float>(stars(rng));
  const Both<Sparse> truth = matrices(test), excluded = matrices(seen);
  for (const bool biases : {false, true}) {
    const Both<Model> m = models(exact_data(rng, s, biases, 1.0f / 16));
    ASSERT_TRUE(m.cpu && m.gpu);
    for (const int k : {1, 10, 100, 200}) {
      for (const bool exclude : {false, true}) {
        SCOPED_TRACE(testing::Message() << "biases " << biases << " k " << k << " exclude "
                                        << exclude);
        std::vector<double> want(4, -1.0), got(4, -2.0);
        SFAC_ASSERT_OK(sfac_model_ranking_metrics(m.cpu.get(), exclude ? excluded.cpu.get() : nullptr,
                                                  truth.cpu.get(), k, &want[0], &want[1],
                                                  &want[2], &want[3]));
        SFAC_ASSERT_OK(sfac_model_ranking_metrics(m.gpu.get(), exclude ? excluded.gpu.get() : nullptr,
                                                  truth.gpu.get(), k, &got[0], &got[1], &got[2],
                                                  &got[3]));
        EXPECT_EQ(got, want);
      }
    }
    double want_rmse = -1.0, want_mae = -1.0, rmse = -2.0, mae = -2.0;
    SFAC_ASSERT_OK(sfac_model_evaluate(m.cpu.get(), truth.cpu.get(), &want_rmse, &want_mae));
    SFAC_ASSERT_OK(sfac_model_evaluate(m.gpu.get(), truth.gpu.get(), &rmse, &mae));
    EXPECT_NEAR(rmse, want_rmse, 1e-12 * want_rmse);
    EXPECT_NEAR(mae, want_mae, 1e-12 * want_mae);
    // Ratings of the CPU context are evaluated on the host.
    SFAC_ASSERT_OK(sfac_model_evaluate(m.gpu.get(), truth.cpu.get(), &rmse, &mae));
    EXPECT_NEAR(rmse, want_rmse, 1e-12 * want_rmse);
  }
}

// A device memory limit below what a call needs: SFAC_ERR_OUT_OF_MEMORY naming the limit,
// nothing written, the model unchanged; within the limit (or without one) the calls succeed.
// A failed device allocation is the same status.
TEST_F(CudaRecommend, DeviceMemoryLimitIsAStatus) {
  const Shape s{300, 900, 24};
  const Both<Model> m = models(exact_data(rng, s, true, 1.0f / 16));
  ASSERT_TRUE(m.cpu && m.gpu);
  const Both<Sparse> truth = matrices(seen_items(rng, s, -1, -1));
  const ModelState before = model_state(m.gpu.get());
  const std::vector<int32_t> users = random_ids(rng, 50, s.users);
  const int64_t offsets[] = {0, 2};
  const int32_t items[] = {3, 8};
  const float ratings[] = {4.0f, 2.0f};
  std::vector<float> row(s.rank, 9.0f);
  auto fold_in = [&] {
    return sfac_model_recalculate_users(m.gpu.get(), 1, nullptr, offsets, items, ratings,
                                        row.data(), s.rank, nullptr);
  };
  for (const int64_t limit : {int64_t{1000}, int64_t{0}}) {
    SCOPED_TRACE(testing::Message() << "limit " << limit);
    SFAC_ASSERT_OK(sfac_context_set_device_memory_limit(gpu.get(), limit));
    int64_t read_back = -1;
    SFAC_ASSERT_OK(sfac_context_get_device_memory_limit(gpu.get(), &read_back));
    EXPECT_EQ(read_back, limit);
    TopN got = poisoned(users.size() * 5);
    double rmse = -1.0;
    if (limit > 0) {
      SFAC_EXPECT_ERROR(SFAC_ERR_OUT_OF_MEMORY, "device memory limit is 1000 bytes",
                        call_recommend(m.gpu.get(), users, 5, nullptr, nullptr, got));
      EXPECT_TRUE(still_poisoned(got));
      SFAC_EXPECT_ERROR(SFAC_ERR_OUT_OF_MEMORY, "device memory limit",
                        sfac_model_evaluate(m.gpu.get(), truth.gpu.get(), &rmse, nullptr));
      EXPECT_EQ(rmse, -1.0);
      SFAC_EXPECT_ERROR(SFAC_ERR_OUT_OF_MEMORY, "device memory limit", fold_in());
      EXPECT_EQ(row, std::vector<float>(s.rank, 9.0f));
    } else {
      expect_identical(top_items(m.cpu.get(), users, 5), top_items(m.gpu.get(), users, 5), 5);
      SFAC_EXPECT_STATUS(SFAC_OK, fold_in());
    }
    EXPECT_TRUE(model_state(m.gpu.get()) == before);
  }
  // The next device allocation fails: the call reports it, the one after succeeds.
  const std::vector<float> y = exact_data(rng, s, false, 1.0f / 16).y;
  SFAC_ASSERT_OK(sfac_model_set_item_factors(m.gpu.get(), y.data()));  // a new copy is made next
  SFAC_ASSERT_OK(sfac_model_set_item_factors(m.cpu.get(), y.data()));
  sfac_testing_fail_device_allocation(1);
  TopN got = poisoned(users.size() * 5);
  SFAC_EXPECT_STATUS(SFAC_ERR_OUT_OF_MEMORY,
                     call_recommend(m.gpu.get(), users, 5, nullptr, nullptr, got));
  EXPECT_EQ(sfac_testing_fail_device_allocation(0), 1);
  EXPECT_TRUE(still_poisoned(got));
  expect_identical(top_items(m.cpu.get(), users, 5), top_items(m.gpu.get(), users, 5), 5);
}

// The device copy follows the model: after set_item_factors / set_user_factors the lists are
// those of a CPU model with the new factors, and after a fold-in into an existing user those of
// a CPU model holding what the fold-in wrote (its row and bias).
TEST_F(CudaRecommend, FollowsFactorChanges) {
  const Shape s{300, 900, 24};
  const Both<Model> m = models(exact_data(rng, s, true, 1.0f / 16));
  ASSERT_TRUE(m.cpu && m.gpu);
  std::vector<int32_t> users = random_ids(rng, 120, s.users);
  const int n = 20;
  expect_identical(top_items(m.cpu.get(), users, n), top_items(m.gpu.get(), users, n), n);

  const ModelState changed = exact_data(rng, s, false, 1.0f / 16);
  SFAC_ASSERT_OK(sfac_model_set_item_factors(m.cpu.get(), changed.y.data()));
  SFAC_ASSERT_OK(sfac_model_set_item_factors(m.gpu.get(), changed.y.data()));
  expect_identical(top_items(m.cpu.get(), users, n), top_items(m.gpu.get(), users, n), n);
  SFAC_ASSERT_OK(sfac_model_set_user_factors(m.cpu.get(), changed.x.data()));
  SFAC_ASSERT_OK(sfac_model_set_user_factors(m.gpu.get(), changed.x.data()));
  expect_identical(top_items(m.cpu.get(), users, n), top_items(m.gpu.get(), users, n), n);

  const int32_t user = users[5];
  users.insert(users.end(), {user, user});
  const std::vector<int32_t> rated = {3, 14, 15, 92, 65};
  const std::vector<float> values = {5, 1, 4, 2, 3};
  std::vector<float> row(s.rank);
  SFAC_ASSERT_OK(sfac_model_recalculate_user(m.gpu.get(), user, 5, rated.data(), values.data(),
                                             row.data(), s.rank, nullptr));
  // The folded row is not exact: compare up to rounding.
  const Both<Model> expected = models(model_state(m.gpu.get()));
  ASSERT_TRUE(expected.cpu);
  const TopN want = top_items(expected.cpu.get(), users, n + 1);
  EXPECT_EQ(first_difference(want, top_items(m.gpu.get(), users, n), n, s.items,
                             Tolerance{1e-5, 1e-6}, predicted(expected.cpu.get(), users)),
            "");
}

// Bad arguments fail on the CUDA model with the CPU model's status and write nothing.
TEST_F(CudaRecommend, BadInputFailsAsOnTheCpuAndWritesNothing) {
  const Shape s{100, 200, 8};
  const Both<Model> m = models(exact_data(rng, s, true, 1.0f / 16));
  ASSERT_TRUE(m.cpu && m.gpu);
  const Both<Sparse> wrong_shape = matrices(Triplets{s.users + 1, s.items, {0, 3}, {1, 2}, {1, 1}});
  const std::vector<int32_t> good = {0, 1, 2}, too_high = {0, static_cast<int32_t>(s.users), 1},
                             negative = {0, -1, 1}, bad_item = {5, static_cast<int32_t>(s.items)};
  struct Case {
    const char* what;
    const std::vector<int32_t>* users;
    int n;
    bool wrong_exclude;
    const std::vector<int32_t>* allowed;
  };
  for (const Case& c :
       {Case{"user id = users", &too_high, 10, false, nullptr},
        Case{"user id -1", &negative, 10, false, nullptr}, Case{"n = 0", &good, 0, false, nullptr},
        Case{"exclude of the wrong shape", &good, 10, true, nullptr},
        Case{"allowed item out of range", &good, 10, false, &bad_item}}) {
    SCOPED_TRACE(c.what);
    TopN on_cpu = poisoned(good.size() * 10), on_gpu = poisoned(good.size() * 10);
    const sfac_status want =
        call_recommend(m.cpu.get(), *c.users, c.n,
                       c.wrong_exclude ? wrong_shape.cpu.get() : nullptr, c.allowed, on_cpu);
    const sfac_status got =
        call_recommend(m.gpu.get(), *c.users, c.n,
                       c.wrong_exclude ? wrong_shape.gpu.get() : nullptr, c.allowed, on_gpu);
    EXPECT_NE(want, SFAC_OK);
    EXPECT_EQ(got, want) << sfac_last_error();
    EXPECT_TRUE(still_poisoned(on_cpu) && still_poisoned(on_gpu));
  }
  for (const auto& [items, n] : {std::pair{&bad_item, 10}, std::pair{&good, 0}}) {
    SCOPED_TRACE(testing::Message() << "similar items, n " << n);
    TopN on_cpu = poisoned(20), on_gpu = poisoned(20);
    auto call = [&, items = items, n = n](const sfac_model* model, TopN& out) {
      return sfac_model_similar_items(model, 2, items->data(), n, out.items.data(),
                                      out.scores.data(), 20);
    };
    const sfac_status want = call(m.cpu.get(), on_cpu);
    EXPECT_NE(want, SFAC_OK);
    EXPECT_EQ(call(m.gpu.get(), on_gpu), want) << sfac_last_error();
    EXPECT_TRUE(still_poisoned(on_cpu) && still_poisoned(on_gpu));
  }
}
