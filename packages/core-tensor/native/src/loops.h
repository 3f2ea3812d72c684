// Loops that several kernel families share. Every function here is inline, so each file that
// uses one compiles (and inlines) its own copy, as when all the kernels were one file.
#pragma once
#include <cmath>
#include <cstdint>
#include <vector>

#include "common.h"
#include "exp.h"

namespace pbrl_native {

using pbrl_exp::ExpF;

PBRL_CLONES static inline void ExpLoop(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; i++) y[i] = ExpF(x[i]);
}

PBRL_CLONES static inline void RowSumRange(const float* x, float* y, int64_t r0, int64_t r1, int64_t cols) {
  for (int64_t r = r0; r < r1; r++) {
    const float* row = x + r * cols;
    // 8 independent accumulators: vectorisable without reassociation flags, and more accurate
    // than one running sum.
    float lanes[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t c = 0;
    for (; c + 8 <= cols; c += 8)
      for (int k = 0; k < 8; k++) lanes[k] += row[c + k];
    float sum = ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) + ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]));
    for (; c < cols; c++) sum += row[c];
    y[r] = sum;
  }
}

// out[c] = Σ_p partial[p, c]: the per-thread partial column sums of a threaded reduction, added.
static inline void AddParts(const std::vector<float>& partial, int parts, int64_t cols, float* out) {
  for (int64_t c = 0; c < cols; c++) {
    float s = 0.f;
    for (int p = 0; p < parts; p++) s += partial[p * cols + c];
    out[c] = s;
  }
}

// σ(x) for a contiguous run, through the vectorised exp: s = 1 / (1 + exp(−x)).
static inline void SigmoidLoop(const float* x, float* s, int64_t n) {
  for (int64_t i = 0; i < n; i++) s[i] = -x[i];
  ExpLoop(s, s, n);
  for (int64_t i = 0; i < n; i++) s[i] = 1.f / (1.f + s[i]);
}

// y = g·σ(g) ⊙ u over a contiguous run (y must not alias g or u).
static inline void SwigluLoop(const float* g, const float* u, float* y, int64_t n) {
  SigmoidLoop(g, y, n);
  for (int64_t i = 0; i < n; i++) y[i] = g[i] * y[i] * u[i];
}

// One row: y = w ⊙ x · r, returns r.
static inline float RmsNormRow(const float* x, const float* w, float* y, int64_t cols, float eps) {
  float ss = 0.f;
  for (int64_t j = 0; j < cols; j++) ss += x[j] * x[j];
  const float r = 1.f / std::sqrt(ss / static_cast<float>(cols) + eps);
  for (int64_t j = 0; j < cols; j++) y[j] = w[j] * (x[j] * r);
  return r;
}

// One head vector of d values: y = x·cos + rot(x)·sin (y may be x).
static inline void RopeRow(const float* x, const float* c, const float* s, float* y, int64_t d) {
  const int64_t half = d / 2;
  for (int64_t k = 0; k < half; k++) {
    const float a = x[k], b = x[k + half];
    y[k] = a * c[k] - b * s[k];
    y[k + half] = b * c[k + half] + a * s[k + half];
  }
}

}  // namespace pbrl_native
