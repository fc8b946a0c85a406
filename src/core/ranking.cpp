// Scoring operations of a model: predict, top-n recommendation, similar items, ranking metrics.
#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <functional>
#include <limits>
#include <memory>
#include <vector>

#include "core/error.h"
#include "core/model_ops.h"
#include "core/resident_model.h"
#include "host/blas_threads.h"

namespace sfac {
namespace {

// Every score goes through here, so predict and recommend return the same numbers. The order
// of the sums is fixed, so that other implementations can reproduce the scores bit for bit (the
// CUDA top-n scores its candidates again this way, cuda/kernels/recommend/top_n_finish.cu):
// eight partial sums, term t into sum t mod 8, each in increasing t, added pairwise as
// ((s0 + s4) + (s2 + s6)) + ((s1 + s5) + (s3 + s7)). Independent sums vectorize without
// reordering, and this file is compiled without contracting products and sums into fused
// multiply-adds (CMakeLists.txt).
inline float dot(const float* x, const float* y, int64_t rank) {
  float s[8] = {};
  int64_t t = 0;
  for (; t + 8 <= rank; t += 8) {
    for (int j = 0; j < 8; ++j) s[j] += x[t + j] * y[t + j];
  }
  for (int j = 0; t < rank; ++t, ++j) s[j] += x[t] * y[t];
  return ((s[0] + s[4]) + (s[2] + s[6])) + ((s[1] + s[5]) + (s[3] + s[7]));
}

// The bias part of user u's scores that does not depend on the item (added in the order
// Model::predict uses: (global + user) + item).
inline float user_offset(const Model& m, int64_t u) {
  return m.has_biases ? m.global_mean + m.user_bias[u] : 0.0f;
}

inline float score(const Model& m, int64_t u, int64_t i, float offset) {
  const float d = dot(m.user(u), m.item(i), m.rank);
  return m.has_biases ? d + (offset + m.item_bias[i]) : d;
}

struct Candidate {
  float score;
  int32_t item;
};

// Best first: the higher score, and among equal scores the lower item id, so that lists are
// deterministic. Scores are never NaN here (see add()), which keeps this a strict weak order.
inline bool better(const Candidate& a, const Candidate& b) {
  return a.score > b.score || (a.score == b.score && a.item < b.item);
}

// A score as lists rank it: NaN (only possible when factors overflow) ranks last.
inline float ranked(float s) { return std::isnan(s) ? -std::numeric_limits<float>::infinity() : s; }

inline void add(std::vector<Candidate>& out, float s, int32_t item) {
  out.push_back({ranked(s), item});
}

// Moves the best min(n, size) candidates to the front in order (a heap-based partial sort:
// O(C log n)), writes them and pads the row to n with -1 / -INFINITY.
void write_top(std::vector<Candidate>& c, int n, int32_t* items, float* scores) {
  const size_t m = std::min(static_cast<size_t>(n), c.size());
  std::partial_sort(c.begin(), c.begin() + static_cast<std::ptrdiff_t>(m), c.end(), better);
  for (size_t j = 0; j < m; ++j) {
    items[j] = c[j].item;
    scores[j] = c[j].score;
  }
  std::fill(items + m, items + n, -1);
  std::fill(scores + m, scores + n, -std::numeric_limits<float>::infinity());
}

// The pattern of an exclude or test matrix: the matrix's own arrays where it keeps them on the
// host, else downloaded once per call. Columns of each row are sorted (canonical CSR), which the
// candidate loops below rely on.
class HostPattern {
 public:
  // m null: a matrix of empty rows.
  explicit HostPattern(const SparseMatrix* m) {
    if (m != nullptr && !m->host_pattern(&offsets_, &cols_)) {
      own_offsets_.resize(static_cast<size_t>(m->rows()) + 1);
      own_cols_.resize(static_cast<size_t>(m->nnz()));
      m->download_csr(own_offsets_.data(), own_cols_.data(), nullptr);
      offsets_ = own_offsets_.data();
      cols_ = own_cols_.data();
    }
  }
  HostPattern(const HostPattern&) = delete;
  HostPattern& operator=(const HostPattern&) = delete;
  bool empty() const { return offsets_ == nullptr; }
  // Row r's columns; an absent matrix has empty rows.
  const int32_t* begin(int64_t r) const { return empty() ? nullptr : cols_ + offsets_[r]; }
  const int32_t* end(int64_t r) const { return empty() ? nullptr : cols_ + offsets_[r + 1]; }
  int64_t count(int64_t r) const { return empty() ? 0 : offsets_[r + 1] - offsets_[r]; }

 private:
  const int64_t* offsets_ = nullptr;
  const int32_t* cols_ = nullptr;
  std::vector<int64_t> own_offsets_;
  std::vector<int32_t> own_cols_;
};

void require_model_shape(const SparseMatrix& s, const Model& m, const char* name) {
  SFAC_REQUIRE(s.rows() == m.users && s.cols() == m.items, SFAC_ERR_SHAPE_MISMATCH, name, " is ",
               s.rows(), " x ", s.cols(), " but the model has ", m.users, " users x ", m.items,
               " items");
}

// Candidates of user u: every item (allowed == nullptr) or the sorted distinct `allowed`, minus
// the sorted excluded items [skip, skip_end). Both walks are merges: no per-user bitmap.
void score_candidates(const Model& m, int64_t u, const std::vector<int32_t>* allowed,
                      const int32_t* skip, const int32_t* skip_end, std::vector<Candidate>& out) {
  out.clear();
  const float offset = user_offset(m, u);
  auto consider = [&](int32_t i) {
    while (skip != skip_end && *skip < i) ++skip;
    if (skip != skip_end && *skip == i) return;
    add(out, score(m, u, i, offset), i);
  };
  if (allowed) {
    for (int32_t i : *allowed) consider(i);
  } else {
    for (int64_t i = 0; i < m.items; ++i) consider(static_cast<int32_t>(i));
  }
}

// Top-n of many queries over every candidate, with the scores of a block of queries from one
// sgemm a chunk of candidates instead of a dot product each: users against items for recommend
// (RecommendSide), items against items or users against users for similar (SimilarSide). The
// sgemm sums in another order than dot(), so its scores only choose candidates: a query keeps
// the candidates whose sgemm score is within twice the bound of that difference (`margin`) of
// its running n-th best, and only those are scored again exactly, which orders the list: lists
// and scores are those of the candidate-by-candidate walk (and of predict). Let e be the n-th
// best exact score: the n candidates at or above it have sgemm scores >= e - margin, so the n-th
// best sgemm score T >= e - margin; and T <= e + margin (else n candidates would score above e
// exactly), so every candidate of the list scores >= T - 2 margin.
constexpr int64_t kUserBlock = 64;    // queries a sgemm
constexpr int64_t kItemChunk = 1024;  // candidates a sgemm (a query block's scores: 256 KB)

// |x| in double: the blocked top-n's margins bound dot products by norms.
inline double row_norm(const float* x, int64_t rank) {
  double sum = 0.0;
  for (int64_t t = 0; t < rank; ++t) sum += double(x[t]) * x[t];
  return std::sqrt(sum);
}

// Users against items: score() with the user's offset, the user's excluded items skipped.
class RecommendSide {
 public:
  RecommendSide(const Model& m, const HostPattern& skip) : m_(m), skip_(skip) {
    for (int64_t i = 0; i < m.items; ++i) {
      item_norm_ = std::max(item_norm_, row_norm(m.item(i), m.rank));
      if (m.has_biases) item_bias_ = std::max(item_bias_, double(std::abs(m.item_bias[i])));
    }
  }
  int64_t rank() const { return m_.rank; }
  int64_t candidates() const { return m_.items; }
  const float* query_row(int64_t u) const { return m_.user(u); }
  const float* candidate_rows(int64_t c0) const { return m_.item(c0); }
  // Whether the candidates leave finite margins (factors or biases near float's range are left
  // to the walk).
  bool applies() const { return m_.rank > 0 && item_norm_ < 1e30 && item_bias_ < 1e30; }

  // The state of a block's query j (user u); its margin, and whether it takes the walk.
  float prepare(int64_t j, int64_t u, bool* walk) {
    const double dots = row_norm(m_.user(u), m_.rank) * item_norm_;  // bounds |dot|
    offset_[j] = user_offset(m_, u);
    const double biases = std::abs(double(offset_[j])) + item_bias_;
    user_[j] = u;
    cursor_[j] = skip_.begin(u);
    *walk = !(dots < 1e30 && biases < 1e30);
    // Both sums of rank products err by at most rank u |x| |y| (u = 2^-24); the bias additions
    // round once more each, relative to the score's magnitude.
    return static_cast<float>(2.0 * (double(m_.rank) + 2.0) * 0x1p-24 * dots +
                              (dots + biases) * 0x1p-22);
  }
  float value(int64_t j, int32_t item, float dot) const {
    return m_.has_biases ? dot + (offset_[j] + m_.item_bias[item]) : dot;
  }
  // Items come in increasing order within a block's walk: the cursor only moves forward.
  bool skipped(int64_t j, int32_t item) {
    const int32_t* end = skip_.end(user_[j]);
    while (cursor_[j] != end && *cursor_[j] < item) ++cursor_[j];
    return cursor_[j] != end && *cursor_[j] == item;
  }
  float exact(int64_t j, int32_t item) const {
    return ranked(score(m_, user_[j], item, offset_[j]));
  }
  void walk(int64_t j, std::vector<Candidate>& out) const {
    score_candidates(m_, user_[j], nullptr, skip_.begin(user_[j]), skip_.end(user_[j]), out);
  }

 private:
  const Model& m_;
  const HostPattern& skip_;
  double item_norm_ = 0.0, item_bias_ = 0.0;
  float offset_[kUserBlock];
  int64_t user_[kUserBlock];
  const int32_t* cursor_[kUserBlock];
};

// Rows of one side against the same side's rows (the query itself never listed): the dot
// product, or the cosine dot / (norm_q norm_c), 0 where that denominator is 0.
class SimilarSide {
 public:
  SimilarSide(const Model& m, bool users, bool cosine, const std::vector<float>& norms)
      : m_(m), users_(users), cosine_(cosine), norms_(norms) {
    const int64_t rows = candidates();
    for (int64_t i = 0; i < rows && fits_; ++i) {
      const double norm = row_norm(row(i), m.rank);
      row_norm_ = std::max(row_norm_, norm);
      // Cosines of rows with norms far from 1 divide by denominators that may leave float's
      // normal range: those models take the walk.
      if (cosine && norm != 0.0 && !(norm > 1e-15 && norm < 1e15)) fits_ = false;
    }
  }
  int64_t rank() const { return m_.rank; }
  int64_t candidates() const { return users_ ? m_.users : m_.items; }
  const float* query_row(int64_t q) const { return row(q); }
  const float* candidate_rows(int64_t c0) const { return row(c0); }
  bool applies() const { return m_.rank > 0 && fits_ && row_norm_ < 1e30; }

  float prepare(int64_t j, int64_t q, bool* walk) {
    query_[j] = q;
    const double dots = row_norm(row(q), m_.rank) * row_norm_;
    *walk = !(dots < 1e30);
    const double sums = 2.0 * (double(m_.rank) + 2.0) * 0x1p-24;  // both orders' sum errors
    // A cosine divides both dot products by the same denominator, at least about |q| |c|
    // (norms from dot(), relative error below (rank + 4) u), and rounds once more.
    return static_cast<float>(cosine_ ? (sums + 0x1p-22) * 1.1 : sums * dots * 1.01);
  }
  float value(int64_t j, int32_t c, float dot) const { return similarity(query_[j], c, dot); }
  bool skipped(int64_t j, int32_t c) const { return c == query_[j]; }
  float exact(int64_t j, int32_t c) const { return score_of(query_[j], c); }
  void walk(int64_t j, std::vector<Candidate>& out) const { walk_query(query_[j], out); }

  // Every other row of the side against row q, scored one by one (also the host's answer where
  // the blocks do not apply).
  void walk_query(int64_t q, std::vector<Candidate>& out) const {
    out.clear();
    const int64_t rows = candidates();
    for (int64_t c = 0; c < rows; ++c) {
      if (c != q) add(out, score_of(q, static_cast<int32_t>(c)), static_cast<int32_t>(c));
    }
  }

 private:
  const float* row(int64_t i) const { return users_ ? m_.user(i) : m_.item(i); }
  // The dot product of rows q and c as the similarity ranks it.
  float similarity(int64_t q, int32_t c, float dot) const {
    if (!cosine_) return dot;
    const float denominator = norms_[q] * norms_[c];
    return denominator > 0.0f ? dot / denominator : 0.0f;
  }
  float score_of(int64_t q, int32_t c) const {
    return ranked(similarity(q, c, sfac::dot(row(q), row(c), m_.rank)));
  }

  const Model& m_;
  bool users_, cosine_;
  const std::vector<float>& norms_;
  double row_norm_ = 0.0;
  bool fits_ = true;
  int64_t query_[kUserBlock];
};

template <typename Side>
class BlockedTopN {
 public:
  // A query's running list never holds more than every candidate.
  BlockedTopN(Side& side, int n)
      : side_(side), n_(n), kept_(static_cast<int>(std::min<int64_t>(n, side.candidates()))) {}

  // Queries queries[0 .. count) (at most kUserBlock) into their rows of out_ids / out_scores.
  // Scratch: `rows` kUserBlock x rank, `scores` kUserBlock x kItemChunk floats, `lists` and
  // `candidates` kUserBlock entries each (reused across calls). `side` holds the block's query
  // state: one BlockedTopN (and side) a thread.
  void run(const int32_t* queries, int64_t count, int32_t* out_ids, float* out_scores,
           std::vector<float>& rows, std::vector<float>& scores,
           std::vector<std::vector<float>>& lists,
           std::vector<std::vector<Candidate>>& candidates) {
    const int64_t rank = side_.rank(), total = side_.candidates();
    float margin[kUserBlock], threshold[kUserBlock];
    bool walk[kUserBlock];  // margins past float's comfort: the candidate-by-candidate walk
    for (int64_t j = 0; j < count; ++j) {
      std::copy_n(side_.query_row(queries[j]), rank, rows.begin() + j * rank);
      margin[j] = side_.prepare(j, queries[j], &walk[j]);
      threshold[j] = walk[j] ? std::numeric_limits<float>::infinity()
                             : -std::numeric_limits<float>::infinity();
      lists[j].clear();
      candidates[j].clear();
    }
    for (int64_t c0 = 0; c0 < total; c0 += kItemChunk) {
      const int64_t chunk = std::min(kItemChunk, total - c0);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(count),
                  static_cast<int>(chunk), static_cast<int>(rank), 1.0f, rows.data(),
                  static_cast<int>(rank), side_.candidate_rows(c0), static_cast<int>(rank), 0.0f,
                  scores.data(), static_cast<int>(kItemChunk));
      for (int64_t j = 0; j < count; ++j) {
        const float* s = scores.data() + j * kItemChunk;
        std::vector<float>& list = lists[j];  // a min-heap of the best n sgemm scores
        for (int64_t i = 0; i < chunk; ++i) {
          const auto c = static_cast<int32_t>(c0 + i);
          const float v = side_.value(j, c, s[i]);
          if (!(v >= threshold[j]) || side_.skipped(j, c)) continue;
          candidates[j].push_back({v, c});
          if (static_cast<int>(list.size()) < kept_) {
            list.push_back(v);
            std::push_heap(list.begin(), list.end(), std::greater<float>());
          } else if (v > list.front()) {
            std::pop_heap(list.begin(), list.end(), std::greater<float>());
            list.back() = v;
            std::push_heap(list.begin(), list.end(), std::greater<float>());
          }
          if (static_cast<int>(list.size()) == kept_) {
            threshold[j] = list.front() - 2.0f * margin[j];
          }
        }
      }
    }
    for (int64_t j = 0; j < count; ++j) {
      // The survivors of the final threshold, scored exactly; then the list as the walk makes it.
      std::vector<Candidate>& c = candidates[j];
      if (walk[j]) {
        side_.walk(j, c);
      } else {
        size_t survivors = 0;
        for (const Candidate& e : c) {
          if (e.score >= threshold[j]) {
            c[survivors].item = e.item;
            c[survivors++].score = side_.exact(j, e.item);
          }
        }
        c.resize(survivors);
      }
      write_top(c, n_, out_ids + j * n_, out_scores + j * n_);
    }
  }

 private:
  Side& side_;
  int n_, kept_;
};

// Top-n lists of queries[0 .. count) by blocks of kUserBlock queries, one Side (made by
// make_side()) and its BlockedTopN a thread.
template <typename MakeSide>
void blocked_top_n(MakeSide make_side, int64_t rank, int64_t count, const int32_t* queries,
                   int64_t candidates, int n, int32_t* out_ids, float* out_scores,
                   int num_threads) {
  const int64_t blocks = (count + kUserBlock - 1) / kUserBlock;
  const int threads = static_cast<int>(std::min<int64_t>(std::max(num_threads, 1), blocks));
  // Scratch per thread, allocated before the parallel region; a query's candidates may still
  // grow (ties), so a block's exception is kept and raised after the region.
  using Side = decltype(make_side());
  struct Scratch {
    std::unique_ptr<Side> side;
    std::vector<float> rows, scores;
    std::vector<std::vector<float>> lists;
    std::vector<std::vector<Candidate>> candidates;
    std::exception_ptr failure;
  };
  std::vector<Scratch> scratch(static_cast<size_t>(threads));
  for (Scratch& s : scratch) {
    s.side = std::make_unique<Side>(make_side());
    s.rows.resize(static_cast<size_t>(kUserBlock * rank));
    s.scores.resize(static_cast<size_t>(kUserBlock * kItemChunk));
    s.lists.resize(kUserBlock);
    s.candidates.resize(kUserBlock);
    for (auto& l : s.lists) l.reserve(static_cast<size_t>(std::min<int64_t>(n, candidates)));
    for (auto& c : s.candidates) {
      c.reserve(static_cast<size_t>(std::min<int64_t>(candidates, 4 * int64_t{n} + 64)));
    }
  }
  // Each sgemm is one block's: BLAS threads would compete with the queries' threads.
  host::ScopedBlasThreads single(1);
#pragma omp parallel num_threads(threads)
  {
    Scratch& s = scratch[static_cast<size_t>(omp_get_thread_num())];
    BlockedTopN<Side> blocked(*s.side, n);
#pragma omp for schedule(dynamic, 1)
    for (int64_t b = 0; b < blocks; ++b) {
      if (s.failure) continue;
      const int64_t r0 = b * kUserBlock;
      try {
        blocked.run(queries + r0, std::min(kUserBlock, count - r0), out_ids + r0 * n,
                    out_scores + r0 * n, s.rows, s.scores, s.lists, s.candidates);
      } catch (...) {
        s.failure = std::current_exception();
      }
    }
  }
  for (const Scratch& s : scratch) {
    if (s.failure) std::rethrow_exception(s.failure);
  }
}

// One candidate buffer per thread, allocated before the parallel region so that nothing in it
// can throw.
std::vector<std::vector<Candidate>> thread_buffers(int num_threads, int64_t capacity) {
  std::vector<std::vector<Candidate>> buffers(static_cast<size_t>(std::max(num_threads, 1)));
  for (auto& b : buffers) b.reserve(static_cast<size_t>(capacity));
  return buffers;
}

void require_top_n(int n, int64_t count) {
  SFAC_REQUIRE(n >= 1, SFAC_ERR_INVALID_ARGUMENT, "n = ", n, " must be >= 1");
  SFAC_REQUIRE(count <= std::numeric_limits<int64_t>::max() / n, SFAC_ERR_INVALID_ARGUMENT,
               "count * n = ", count, " * ", n, " overflows");
}

// The host's top-n lists of users[0 .. count) into their rows of out_items / out_scores; allow:
// the allowed items, sorted and distinct, or null for every item.
void host_top_n(const Model& model, int64_t count, const int32_t* users, int n,
                const HostPattern& skip, const std::vector<int32_t>* allow, int32_t* out_items,
                float* out_scores, int num_threads) {
  if (!allow) {
    // The item norms are one pass over the items: made once, copied to each thread's side.
    const RecommendSide side(model, skip);
    if (side.applies()) {
      blocked_top_n([&side] { return side; }, model.rank, count, users, model.items, n, out_items,
                    out_scores, num_threads);
      return;
    }
  }
  const int threads = static_cast<int>(std::min<int64_t>(std::max(num_threads, 1), count));
  auto buffers = thread_buffers(threads, allow ? static_cast<int64_t>(allow->size()) : model.items);
#pragma omp parallel num_threads(threads)
  {
    std::vector<Candidate>& buffer = buffers[static_cast<size_t>(omp_get_thread_num())];
#pragma omp for schedule(dynamic, 16)
    for (int64_t r = 0; r < count; ++r) {
      const int64_t u = users[r];
      score_candidates(model, u, allow, skip.begin(u), skip.end(u), buffer);
      write_top(buffer, n, out_items + r * n, out_scores + r * n);
    }
  }
}

}  // namespace

void predict(const Model& model, int64_t count, const int32_t* users, const int32_t* items,
             float* scores, int num_threads) {
  require_array(users, "users", count, "count");
  require_array(items, "items", count, "count");
  require_array(scores, "scores", count, "count");
  require_ids(users, count, model.users, "users", "users");
  require_ids(items, count, model.items, "items", "items");
#pragma omp parallel for num_threads(num_threads) schedule(static) if (count > 4096)
  for (int64_t e = 0; e < count; ++e) {
    scores[e] = score(model, users[e], items[e], user_offset(model, users[e]));
  }
}

void recommend(const Model& model, int64_t count, const int32_t* users, int n,
               const SparseMatrix* exclude, int64_t allowed_count, const int32_t* allowed_items,
               int32_t* out_items, float* out_scores, int num_threads, Backend* backend) {
  require_array(users, "users", count, "count");
  require_top_n(n, count);
  require_array(out_items, "out_items", count, "count");
  require_array(out_scores, "out_scores", count, "count");
  if (exclude) require_model_shape(*exclude, model, "exclude");
  require_array(allowed_items, "allowed_items", allowed_count, "allowed_count");
  require_ids(users, count, model.users, "users", "users");
  require_ids(allowed_items, allowed_count, model.items, "allowed_items", "items");
  if (count == 0) return;

  // Sorted and deduplicated: a repeated allowed item is one candidate, and the merge with the
  // (sorted) excluded items needs the order.
  std::vector<int32_t> allowed;
  if (allowed_items) {
    allowed.assign(allowed_items, allowed_items + allowed_count);
    std::sort(allowed.begin(), allowed.end());
    allowed.erase(std::unique(allowed.begin(), allowed.end()), allowed.end());
  }
  const std::vector<int32_t>* allow = allowed_items ? &allowed : nullptr;
  // An empty allow-list leaves only padding, which is not worth a trip to the device.
  if (backend && !(allow && allowed.empty())) {
    RecommendRequest request{count, users, n, exclude, nullptr, 0, out_items, out_scores};
    if (allow) {
      request.allowed = allowed.data();
      request.allowed_count = static_cast<int64_t>(allowed.size());
    }
    const std::shared_ptr<ResidentModel> resident = model.resident.get(*backend, model);
    if (resident && resident->recommend(request)) return;
  }
  const HostPattern skip(exclude);
  host_top_n(model, count, users, n, skip, allow, out_items, out_scores, num_threads);
}

void similar(const Model& model, sfac_axis side, sfac_similarity similarity, int64_t count,
             const int32_t* ids, int n, int32_t* out_ids, float* out_scores, int num_threads,
             Backend* backend, const char* ids_name, const char* out_name) {
  SFAC_REQUIRE(side == SFAC_AXIS_ROWS || side == SFAC_AXIS_COLS, SFAC_ERR_INVALID_ARGUMENT,
               "side = ", static_cast<int>(side),
               " is not SFAC_AXIS_ROWS (users) or _COLS (items)");
  SFAC_REQUIRE(similarity == SFAC_SIMILARITY_COSINE || similarity == SFAC_SIMILARITY_INNER_PRODUCT,
               SFAC_ERR_INVALID_ARGUMENT, "similarity = ", static_cast<int>(similarity),
               " is not an sfac_similarity");
  const bool users = side == SFAC_AXIS_ROWS;
  const bool cosine = similarity == SFAC_SIMILARITY_COSINE;
  const int64_t rows = users ? model.users : model.items;
  require_array(ids, ids_name, count, "count");
  require_top_n(n, count);
  require_array(out_ids, out_name, count, "count");
  require_array(out_scores, "out_scores", count, "count");
  require_ids(ids, count, rows, ids_name, users ? "users" : "items");
  if (count == 0) return;
  if (backend) {
    const SimilarRequest request{users, cosine, count, ids, n, out_ids, out_scores};
    const std::shared_ptr<ResidentModel> resident = model.resident.get(*backend, model);
    if (resident && resident->similar(request)) return;
  }

  const int64_t rank = model.rank;
  auto row = [&](int64_t i) { return users ? model.user(i) : model.item(i); };
  std::vector<float> norms(cosine ? static_cast<size_t>(rows) : 0);
#pragma omp parallel for num_threads(num_threads) schedule(static) if (rows > 4096)
  for (int64_t i = 0; i < static_cast<int64_t>(norms.size()); ++i) {
    norms[i] = std::sqrt(dot(row(i), row(i), rank));
  }
  const SimilarSide rows_side(model, users, cosine, norms);
  if (rows_side.applies()) {
    blocked_top_n([&rows_side] { return rows_side; }, rank, count, ids, rows, n, out_ids,
                  out_scores, num_threads);
    return;
  }
  const int threads = static_cast<int>(std::min<int64_t>(std::max(num_threads, 1), count));
  auto buffers = thread_buffers(threads, rows);
#pragma omp parallel num_threads(threads)
  {
    std::vector<Candidate>& buffer = buffers[static_cast<size_t>(omp_get_thread_num())];
#pragma omp for schedule(dynamic, 16)
    for (int64_t r = 0; r < count; ++r) {
      rows_side.walk_query(ids[r], buffer);
      write_top(buffer, n, out_ids + r * n, out_scores + r * n);
    }
  }
}

RankingMetrics ranking_metrics(const Model& model, const SparseMatrix* exclude,
                               const SparseMatrix& test, int k, int num_threads, Backend* backend) {
  SFAC_REQUIRE(k >= 1, SFAC_ERR_INVALID_ARGUMENT, "k = ", k, " must be >= 1");
  if (exclude) require_model_shape(*exclude, model, "exclude");
  require_model_shape(test, model, "test");

  const HostPattern truth(&test);
  // Lists never hold more than all items; k itself stays the precision denominator.
  const int top_k = static_cast<int>(std::min<int64_t>(k, model.items));
  if (top_k == 0) return {};  // no items, hence no test nonzeros
  // discount[p] = 1 / log2(p + 2); ideal[j] = DCG of j hits at the top.
  std::vector<double> discount(static_cast<size_t>(top_k));
  std::vector<double> ideal(static_cast<size_t>(top_k) + 1, 0.0);
  for (int p = 0; p < top_k; ++p) {
    discount[p] = 1.0 / std::log2(p + 2.0);
    ideal[p + 1] = ideal[p] + discount[p];
  }
  // Per-user results, summed in user order afterwards: the averages do not depend on how
  // OpenMP schedules the users.
  struct PerUser {
    double precision = 0.0, recall = 0.0, ndcg = 0.0, map = 0.0;
  };
  std::vector<PerUser> per_user(static_cast<size_t>(model.users));
  // User u's metrics from its top-k list.
  auto measure = [&](int64_t u, const int32_t* top) {
    const int64_t relevant = truth.count(u);
    int64_t hits = 0;
    double dcg = 0.0, precision_sum = 0.0;
    for (int p = 0; p < top_k && top[p] >= 0; ++p) {
      if (!std::binary_search(truth.begin(u), truth.end(u), top[p])) continue;
      ++hits;
      dcg += discount[p];
      precision_sum += static_cast<double>(hits) / (p + 1);
    }
    const int64_t best = std::min<int64_t>(top_k, relevant);  // relevant <= items
    PerUser& out = per_user[u];
    out.precision = static_cast<double>(hits) / k;
    out.recall = static_cast<double>(hits) / static_cast<double>(relevant);
    out.ndcg = dcg / ideal[best];
    out.map = precision_sum / static_cast<double>(best);
  };

  // The test users' top-k lists, a bounded number of users at a time: from the model's backend
  // where it serves them (a device), else from the host.
  std::vector<int32_t> users;
  for (int64_t u = 0; u < model.users; ++u) {
    if (truth.count(u) > 0) users.push_back(static_cast<int32_t>(u));
  }
  std::shared_ptr<ResidentModel> resident =
      backend && !users.empty() ? model.resident.get(*backend, model) : nullptr;
  std::unique_ptr<HostPattern> skip;  // made once the host is needed
  constexpr int64_t kUsersPerCall = int64_t{1} << 16;
  const auto total = static_cast<int64_t>(users.size());
  const int64_t chunk = std::min(total, kUsersPerCall);
  std::vector<int32_t> items(static_cast<size_t>(chunk * top_k));
  std::vector<float> scores(items.size());
  for (int64_t u0 = 0; u0 < total; u0 += chunk) {
    const int64_t m = std::min(chunk, total - u0);
    const RecommendRequest request{m, users.data() + u0, top_k,        exclude, nullptr,
                                   0, items.data(),      scores.data()};
    if (resident && !resident->recommend(request)) resident.reset();  // the host from here on
    if (!resident) {
      if (!skip) skip = std::make_unique<HostPattern>(exclude);
      host_top_n(model, m, users.data() + u0, top_k, *skip, nullptr, items.data(), scores.data(),
                 num_threads);
    }
#pragma omp parallel for num_threads(num_threads) schedule(static)
    for (int64_t r = 0; r < m; ++r) measure(users[u0 + r], items.data() + r * top_k);
  }
  RankingMetrics sum;
  for (int64_t u = 0; u < model.users; ++u) {
    if (truth.count(u) == 0) continue;
    sum.precision += per_user[u].precision;
    sum.recall += per_user[u].recall;
    sum.ndcg += per_user[u].ndcg;
    sum.map += per_user[u].map;
  }
  if (users.empty()) return {};
  const auto n = static_cast<double>(users.size());
  return {sum.precision / n, sum.recall / n, sum.ndcg / n, sum.map / n};
}

}  // namespace sfac
