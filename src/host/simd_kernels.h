// src/host/: host math shared by the core and the CPU backend.
// The length-k vector kernels of the training loops (dot, axpy, the fused SGD step), written so
// that GCC vectorizes them without -ffast-math: the dot product keeps kLanes independent partial
// sums, which SLP-vectorizes into one 512-bit (or two 256-bit) accumulators and fixes the
// summation order independently of the instruction set.
//
// The library is built without -march, so the kernels are always_inline and meant to be called
// from functions marked SFAC_SIMD_CLONES: GCC compiles such a function once per listed ISA and
// picks the clone at load time (ifunc), and the inlined kernels get that clone's vector width.
// Template parameter K > 0 fixes the length at compile time (full unrolling, factor rows kept in
// registers); K = 0 takes the runtime length n.
#pragma once

#include <cstdint>

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define SFAC_SIMD_CLONES \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define SFAC_SIMD_CLONES
#endif

#define SFAC_ALWAYS_INLINE inline __attribute__((always_inline))

namespace sfac::host::simd {

constexpr int kLanes = 16;

template <int64_t K>
SFAC_ALWAYS_INLINE int64_t length(int64_t n) {
  return K > 0 ? K : n;
}

template <int64_t K = 0>
SFAC_ALWAYS_INLINE float dot(const float* a, const float* b, int64_t n = K) {
  n = length<K>(n);
  float acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int j = 0; j < kLanes; ++j) acc[j] += a[i + j] * b[i + j];
  }
  for (int j = 0; j < kLanes && i + j < n; ++j) acc[j] += a[i + j] * b[i + j];
  for (int w = kLanes / 2; w > 0; w /= 2) {
    for (int j = 0; j < w; ++j) acc[j] += acc[j + w];
  }
  return acc[0];
}

// y += alpha x
template <int64_t K = 0>
SFAC_ALWAYS_INLINE void axpy(float alpha, const float* x, float* __restrict y, int64_t n = K) {
  n = length<K>(n);
  for (int64_t i = 0; i < n; ++i) y[i] += alpha * x[i];
}

// One SGD step on the rating r of (p, q), both updated from their old values (cuMF_SGD's
// simultaneous update): e = r - p.q - bias, p += gamma (e q - lp p), q += gamma (e p - lq q).
// p and q are different rows (one user's, one item's) and never alias. Returns e.
template <int64_t K = 0>
SFAC_ALWAYS_INLINE float sgd_step(float* __restrict p, float* __restrict q, float r, float bias,
                                  float gamma, float lp, float lq, int64_t n = K) {
  n = length<K>(n);
  const float e = r - bias - dot<K>(p, q, n);
  const float ge = gamma * e, kp = 1.0f - gamma * lp, kq = 1.0f - gamma * lq;
  for (int64_t t = 0; t < n; ++t) {
    const float pt = p[t], qt = q[t];
    p[t] = kp * pt + ge * qt;
    q[t] = kq * qt + ge * pt;
  }
  return e;
}

}  // namespace sfac::host::simd
