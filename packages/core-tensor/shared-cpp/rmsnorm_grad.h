// Rows [lo, hi) of RMSNorm's gradient in float32: dx = r·dy⊙w − x·r³·(dy⊙w·x)/cols, and
// Σ_rows dy⊙x·r added into dw (the caller gives each thread its own dw). Shared by pbrl's two
// addons (native/src/layers.cc, libtorch/src/fused.cc).
#pragma once
#include <cstdint>

namespace pbrl_rmsnorm_grad {

static inline void Rows(const float* __restrict x, const float* __restrict w, const float* __restrict rstd, const float* __restrict dy,
                        float* __restrict dx, float* __restrict dw, int64_t lo, int64_t hi, int64_t cols) {
  for (int64_t i = lo; i < hi; i++) {
    const float *xr = x + i * cols, *dyr = dy + i * cols;
    float* dxr = dx + i * cols;
    const float r = rstd[i];
    float dot = 0.f;
    for (int64_t j = 0; j < cols; j++) dot += dyr[j] * w[j] * xr[j];
    const float c = r * r * r * dot / static_cast<float>(cols);
    for (int64_t j = 0; j < cols; j++) {
      dxr[j] = r * dyr[j] * w[j] - xr[j] * c;
      dw[j] += dyr[j] * xr[j] * r;
    }
  }
}

}  // namespace pbrl_rmsnorm_grad
