/* The public header as seen by a strict C99 client (-std=c99 -pedantic -Werror), and by a
 * strict C++ client: tests/packaging_tests.cmake also compiles this file as C++17. Keep it
 * valid in both languages (no implicit void* conversions, no designated initializers).
 * Exits non-zero when a check fails. */
#include <sparsefac/sparsefac.h>
#include <stdio.h>
#include <string.h>

#ifdef __cplusplus
#define LANGUAGE "C++"
#else
#define LANGUAGE "C99"
#endif

static int failures = 0;

#define EXPECT(cond)                                                           \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                              \
    }                                                                          \
  } while (0)

/* Compile-time checks that also work in C99 (no _Static_assert). */
#define STATIC_CHECK(name, cond) typedef char name[(cond) ? 1 : -1]
STATIC_CHECK(version_number_matches_parts,
             SFAC_VERSION_NUMBER ==
                 SFAC_VERSION_MAJOR * 10000 + SFAC_VERSION_MINOR * 100 + SFAC_VERSION_PATCH);
STATIC_CHECK(status_values_are_pinned, SFAC_OK == 0 && SFAC_ERR_INTERNAL == 15);

int main(void) {
  sfac_context* ctx = NULL;
  sfac_context* bad = NULL;
  sfac_backend backend = SFAC_BACKEND_AUTO;
  sfac_sparse* no_sparse = NULL;
  sfac_dense* no_dense = NULL;
  sfac_idmap* no_map = NULL;
  sfac_sddmm_plan* no_plan = NULL;
  const char* info = NULL;
  int threads = 0;
  uint64_t seed = 0;
  void* stream = &seed;
  sfac_status st;

  printf("sparsefac %s (header %s)\n", sfac_version_string(), SFAC_VERSION_STRING);
  EXPECT(strcmp(sfac_version_string(), SFAC_VERSION_STRING) == 0);
  EXPECT(sfac_version_number() == SFAC_VERSION_NUMBER);
  info = sfac_build_info();
  EXPECT(info != NULL && info[0] == '{');

  EXPECT(strcmp(sfac_status_string(SFAC_OK), "ok") == 0);
  EXPECT(strcmp(sfac_status_string(SFAC_ERR_OUT_OF_RANGE), "out of range") == 0);
  EXPECT(sfac_status_string((sfac_status)999) != NULL);

  /* A CPU context with one thread and a fixed seed. */
  st = sfac_context_create(SFAC_BACKEND_CPU, 0, 1, 7, &ctx);
  EXPECT(st == SFAC_OK);
  if (st != SFAC_OK) {
    fprintf(stderr, "sfac_context_create: %s: %s\n", sfac_status_string(st), sfac_last_error());
    return 1;
  }
  EXPECT(sfac_context_get_backend(ctx, &backend) == SFAC_OK && backend == SFAC_BACKEND_CPU);
  EXPECT(sfac_context_get_num_threads(ctx, &threads) == SFAC_OK && threads == 1);
  EXPECT(sfac_context_get_seed(ctx, &seed) == SFAC_OK && seed == 7);
  EXPECT(sfac_context_get_stream(ctx, &stream) == SFAC_OK && stream == NULL);
  EXPECT(sfac_context_set_stream(ctx, NULL) == SFAC_OK);
  EXPECT(sfac_context_destroy(ctx) == SFAC_OK);

  /* A failing call: status, per-thread message, no output written. */
  sfac_clear_last_error();
  EXPECT(strcmp(sfac_last_error(), "") == 0);
  st = sfac_context_create((sfac_backend)99, 0, 0, 0, &bad);
  EXPECT(st == SFAC_ERR_INVALID_ARGUMENT);
  EXPECT(bad == NULL);
  EXPECT(strlen(sfac_last_error()) > 0);
  printf("expected error: %s: %s\n", sfac_status_string(st), sfac_last_error());

  /* Destroy accepts NULL. */
  EXPECT(sfac_sparse_destroy(no_sparse) == SFAC_OK);
  EXPECT(sfac_dense_destroy(no_dense) == SFAC_OK);
  EXPECT(sfac_idmap_destroy(no_map) == SFAC_OK);
  EXPECT(sfac_sddmm_plan_destroy(no_plan) == SFAC_OK);

  if (failures != 0) {
    fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  printf("header as " LANGUAGE ": OK\n");
  return 0;
}
