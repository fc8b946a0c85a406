/* quickstart.c: one SDDMM with libsparsefac's C API.
 *
 * P = (A * B^T) .* S at the nonzeros of a small sparse matrix S, checked against dot products
 * computed by hand. Build: cc quickstart.c $(pkg-config --cflags --libs sparsefac) -lm */
#include <math.h>
#include <sparsefac/sparsefac.h>
#include <stdio.h>
#include <stdlib.h>

/* Every call returns a status; on failure print its name and the library's message. */
#define CHECK(call)                                                                                \
  do {                                                                                             \
    sfac_status st_ = (call);                                                                      \
    if (st_ != SFAC_OK) {                                                                          \
      fprintf(stderr, "%s:%d: %s -> %s: %s\n", __FILE__, __LINE__, #call, sfac_status_string(st_), \
              sfac_last_error());                                                                  \
      exit(2);                                                                                     \
    }                                                                                              \
  } while (0)

enum { M = 3, N = 4, K = 2, NNZ = 5 };

int main(void) {
  /* S (3 x 4) as COO triplets, 0-based. */
  const int32_t rows[NNZ] = {0, 0, 1, 2, 2};
  const int32_t cols[NNZ] = {0, 3, 1, 0, 2};
  const float vals[NNZ] = {1.0f, 2.0f, 0.5f, -1.0f, 3.0f};
  /* Dense factors, row-major: A is M x K, B is N x K. */
  const float a[M * K] = {1, 2, 3, 4, 5, 6};
  const float b[N * K] = {1, 0, 0, 1, 1, 1, 2, 1};

  sfac_context* ctx = NULL;
  sfac_sparse *s = NULL, *p = NULL;
  sfac_dense *da = NULL, *db = NULL;
  const char* device = NULL;
  int32_t out_rows[NNZ], out_cols[NNZ];
  float out_vals[NNZ];
  int failures = 0;

  printf("libsparsefac %s\n", sfac_version_string());
  CHECK(sfac_context_create(SFAC_BACKEND_AUTO, 0, 0, 42, &ctx)); /* CUDA if present, else CPU */
  CHECK(sfac_context_get_device_name(ctx, &device));
  printf("device: %s\n", device);

  CHECK(sfac_sparse_create_coo(ctx, M, N, NNZ, rows, cols, vals, SFAC_SPARSE_DEFAULT, &s));
  CHECK(sfac_dense_create(ctx, M, K, SFAC_DTYPE_FLOAT32, a, &da));
  CHECK(sfac_dense_create(ctx, N, K, SFAC_DTYPE_FLOAT32, b, &db));
  CHECK(sfac_sparse_create_like(s, NULL, &p)); /* same pattern as S, values 0 */

  /* P = 1 * dot(A[i,:], B[j,:]) * S_ij + 0 * P_ij; no plan (NULL): analysed on the fly. */
  CHECK(sfac_sddmm(ctx, SFAC_SDDMM_SCALED, 1.0f, da, db, s, 0.0f, p, NULL));
  /* Sorted by (row, col); the last argument is the capacity of each array, in elements. */
  CHECK(sfac_sparse_download_coo(p, out_rows, out_cols, out_vals, NNZ));

  for (int e = 0; e < NNZ; ++e) {
    const int i = out_rows[e], j = out_cols[e];
    float expected = 0.0f;
    for (int k = 0; k < K; ++k) expected += a[i * K + k] * b[j * K + k];
    expected *= vals[e]; /* the input triplets above are already in (row, col) order */
    printf("P[%d,%d] = %g (expected %g)\n", i, j, out_vals[e], expected);
    if (i != rows[e] || j != cols[e] || fabsf(out_vals[e] - expected) > 1e-5f) ++failures;
  }

  /* Destroy in any order: matrices keep their context's backend alive. */
  sfac_sparse_destroy(p);
  sfac_sparse_destroy(s);
  sfac_dense_destroy(db);
  sfac_dense_destroy(da);
  sfac_context_destroy(ctx);

  if (failures != 0) {
    fprintf(stderr, "quickstart: %d wrong value(s)\n", failures);
    return 1;
  }
  printf("quickstart: OK\n");
  return 0;
}
