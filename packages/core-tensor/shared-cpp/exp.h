// exp(x) for float32, shared by pbrl's two addons (native/src/loops.h and matmul.cc, and
// libtorch/src/fused.cc): written so that gcc vectorises loops over it.
#pragma once
#include <cmath>
#include <cstdint>

namespace pbrl_exp {

// exp(x) to ~1 ulp: Cephes' range reduction and polynomial; 0 below -87.34, inf above 88.72.
// Branch-free (clamps and selects as ternaries, floor, integer shifts, bit casts), so that with
// -fno-trapping-math gcc vectorises loops over it at the width of each clone (AVX2, AVX-512).
static inline float ExpF(float x) {
  const float hi = 88.7228391f, lo = -87.3365448f;
  const float xc = x < lo ? lo : (x > hi ? hi : x);
  const float fn = std::floor(xc * 1.44269504088896341f + 0.5f);
  float r = xc - fn * 0.693359375f;
  r = r - fn * -2.12194440e-4f;
  const float z = r * r;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * z + r + 1.0f;
  // 2^n, n in [-126, 128]; split in two factors so 2^128 does not overflow the exponent field.
  const int32_t n = static_cast<int32_t>(fn);
  const int32_t n1 = n >> 1, n2 = n - n1;
  const float s1 = __builtin_bit_cast(float, static_cast<uint32_t>(n1 + 127) << 23);
  const float s2 = __builtin_bit_cast(float, static_cast<uint32_t>(n2 + 127) << 23);
  float y = p * s1 * s2;
  y = x < lo ? 0.f : y;
  y = x > hi ? INFINITY : y;
  return x != x ? x : y;
}

}  // namespace pbrl_exp
