// Every enumeration that crosses the C boundary: an integer the enumeration does not list (a
// value a newer library adds, or a wrong one) is answered with a status and a message, leaves
// the output untouched, and is defined behaviour (the header gives the enumerations the
// underlying type int in C++; the sanitizer build checks enum loads).
#include <climits>
#include <string>
#include <type_traits>
#include <vector>

#include "sfac_test.h"

using namespace sfac_test;

namespace {

template <typename E>
constexpr bool based_on_int = std::is_same_v<std::underlying_type_t<E>, int>;
static_assert(based_on_int<sfac_status> && based_on_int<sfac_backend> &&
              based_on_int<sfac_sparse_flags> && based_on_int<sfac_axis> &&
              based_on_int<sfac_bals_flags> && based_on_int<sfac_dtype> &&
              based_on_int<sfac_file_format> && based_on_int<sfac_read_flags> &&
              based_on_int<sfac_sddmm_mode> && based_on_int<sfac_sddmm_algorithm> &&
              based_on_int<sfac_algorithm> && based_on_int<sfac_option> &&
              based_on_int<sfac_regularization> && based_on_int<sfac_solver> &&
              based_on_int<sfac_reorder> && based_on_int<sfac_feedback>);

// Values no enumeration lists; each goes through memory on its way to the call, so that the
// sanitizer build sees it loaded as the enumeration.
const std::vector<int> kUnlisted = {-1, 99, 4096, INT_MAX, INT_MIN};

template <typename E>
E as(int value) {
  volatile E e = static_cast<E>(value);
  return e;
}

class Enums : public ::testing::Test {
 protected:
  Context ctx = make_cpu_context(1);
  Sparse pattern = create_sparse(ctx.get(), Triplets{3, 4, {0, 1, 2}, {0, 3, 1}, {1, 2, 3}});
};

TEST_F(Enums, StatusStringsOfUnknownStatuses) {
  for (int v : kUnlisted) EXPECT_STREQ(sfac_status_string(as<sfac_status>(v)), "unknown status");
}

TEST_F(Enums, UnknownBackendDtypeFormatAxisAndFeedbackAreInvalidArguments) {
  for (int v : kUnlisted) {
    SCOPED_TRACE(v);
    sfac_context* c = nullptr;
    SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "backend",
                      sfac_context_create(as<sfac_backend>(v), 0, 1, 0, &c));
    EXPECT_EQ(c, nullptr);

    sfac_dense* dense = nullptr;
    SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "dtype",
                      sfac_dense_create(ctx.get(), 2, 2, as<sfac_dtype>(v), nullptr, &dense));
    EXPECT_EQ(dense, nullptr);

    sfac_sparse* read = nullptr;
    SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "file format",
                      sfac_read_sparse(ctx.get(), "unused.txt", as<sfac_file_format>(v), 0, &read,
                                       nullptr, nullptr));
    EXPECT_EQ(read, nullptr);

    std::vector<int32_t> order(4, -7);
    SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "axis",
                      sfac_sparse_degree_order(pattern.get(), as<sfac_axis>(v), order.data(),
                                               static_cast<int64_t>(order.size())));
    EXPECT_EQ(order, std::vector<int32_t>(4, -7));

    sfac_sparse* ratings = nullptr;
    SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "feedback",
                      sfac_synthesize_ratings(ctx.get(), as<sfac_feedback>(v), 10, 10, 20, 2, 0.1,
                                              0.0, &ratings, nullptr, nullptr));
    EXPECT_EQ(ratings, nullptr);
  }
}

TEST_F(Enums, UnknownSddmmModeAndAlgorithmAreInvalidArguments) {
  for (int v : kUnlisted) {
    SCOPED_TRACE(v);
    sfac_sddmm_plan* plan = nullptr;
    SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "algorithm",
                      sfac_sddmm_plan_create(ctx.get(), pattern.get(), 4,
                                             as<sfac_sddmm_algorithm>(v), &plan));
    EXPECT_EQ(plan, nullptr);
  }
  sfac_dense *a = nullptr, *b = nullptr;
  SFAC_ASSERT_OK(sfac_dense_create(ctx.get(), 3, 4, SFAC_DTYPE_FLOAT32, nullptr, &a));
  SFAC_ASSERT_OK(sfac_dense_create(ctx.get(), 4, 4, SFAC_DTYPE_FLOAT32, nullptr, &b));
  Dense a_owner(a), b_owner(b);
  Sparse out = create_sparse(ctx.get(), Triplets{3, 4, {0, 1, 2}, {0, 3, 1}, {9, 9, 9}});
  for (int v : kUnlisted) {
    SCOPED_TRACE(v);
    SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "mode",
                      sfac_sddmm(ctx.get(), as<sfac_sddmm_mode>(v), 1.0f, a, b, pattern.get(),
                                 0.0f, out.get(), nullptr));
  }
  std::vector<float> values(3);
  SFAC_ASSERT_OK(sfac_sparse_download_coo(out.get(), nullptr, nullptr, values.data(),
                                          static_cast<int64_t>(values.size())));
  EXPECT_EQ(values, std::vector<float>(3, 9.0f));  // untouched
}

TEST_F(Enums, UnknownAlgorithmIsInvalidAndUnknownOptionIsUnsupported) {
  Options o;
  {
    sfac_train_options* raw = nullptr;
    SFAC_ASSERT_OK(sfac_train_options_create(SFAC_ALGO_ALS, &raw));
    o.reset(raw);
  }
  for (int v : kUnlisted) {
    SCOPED_TRACE(v);
    sfac_train_options* raw = nullptr;
    SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "algorithm",
                      sfac_train_options_create(as<sfac_algorithm>(v), &raw));
    EXPECT_EQ(raw, nullptr);
    // An option a newer library may add: probing it is not an error of the caller's data.
    const std::string named = "unknown training option " + std::to_string(v);
    SFAC_EXPECT_ERROR(SFAC_ERR_UNSUPPORTED, named.c_str(),
                      sfac_train_options_set_int(o.get(), as<sfac_option>(v), 1));
    SFAC_EXPECT_ERROR(SFAC_ERR_UNSUPPORTED, named.c_str(),
                      sfac_train_options_set_double(o.get(), as<sfac_option>(v), 1.0));
    int64_t i = -5;
    double d = -5.0;
    SFAC_EXPECT_ERROR(SFAC_ERR_UNSUPPORTED, named.c_str(),
                      sfac_train_options_get_int(o.get(), as<sfac_option>(v), &i));
    SFAC_EXPECT_ERROR(SFAC_ERR_UNSUPPORTED, named.c_str(),
                      sfac_train_options_get_double(o.get(), as<sfac_option>(v), &d));
    EXPECT_EQ(i, -5);
    EXPECT_EQ(d, -5.0);
    // Values of the enumerations that options take.
    SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "SFAC_OPT_ALS_SOLVER",
                      sfac_train_options_set_int(o.get(), SFAC_OPT_ALS_SOLVER, v));
    SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "SFAC_OPT_ALS_REGULARIZATION",
                      sfac_train_options_set_int(o.get(), SFAC_OPT_ALS_REGULARIZATION, v));
    SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "SFAC_OPT_FACTOR_DTYPE",
                      sfac_train_options_set_int(o.get(), SFAC_OPT_FACTOR_DTYPE, v));
    SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "SFAC_OPT_SGD_SCHEDULE (option 204)",
                      sfac_train_options_set_int(o.get(), SFAC_OPT_SGD_SCHEDULE, v));
    SFAC_EXPECT_ERROR(SFAC_ERR_INVALID_ARGUMENT, "SFAC_OPT_ALS_REORDER (option 104)",
                      sfac_train_options_set_int(o.get(), SFAC_OPT_ALS_REORDER, v));
  }
  int64_t solver = -1;
  SFAC_ASSERT_OK(sfac_train_options_get_int(o.get(), SFAC_OPT_ALS_SOLVER, &solver));
  EXPECT_EQ(solver, SFAC_SOLVER_CHOLESKY);  // the rejected values left the option as it was
}

}  // namespace
