// Dropout masks as core-tensor's RngStream.fillDropoutMask draws them: two keys from the stream
// (its xoshiro128** generator, the same 32-bit draws from the same 4-word state), then entry i's
// draw dropoutHash(i, k0, k1) — counter-based, so any entry is drawn on its own, in vector lanes
// and on any thread; the entry is dropped where its draw is below p·2³².
#pragma once

#include <cmath>
#include <cstdint>

namespace pbrl {

class Xoshiro128 {
 public:
  explicit Xoshiro128(const uint32_t* s) : s0_(s[0]), s1_(s[1]), s2_(s[2]), s3_(s[3]) {}
  uint32_t Next() {
    const uint32_t result = Rotl(s1_ * 5u, 7) * 9u;
    const uint32_t t = s1_ << 9;
    s2_ ^= s0_;
    s3_ ^= s1_;
    s1_ ^= s2_;
    s0_ ^= s3_;
    s2_ ^= t;
    s3_ = Rotl(s3_, 11);
    return result;
  }
  void Save(uint32_t* s) const {
    s[0] = s0_;
    s[1] = s1_;
    s[2] = s2_;
    s[3] = s3_;
  }

 private:
  static uint32_t Rotl(uint32_t x, int k) { return (x << k) | (x >> (32 - k)); }
  uint32_t s0_, s1_, s2_, s3_;
};

// Wellons' lowbias32, as rng.ts's mix32.
[[gnu::always_inline]] inline uint32_t Mix32(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return x;
}

// One mask's keys and rule: entry i is kept (times keep) where DropoutHash(i) ≥ threshold.
struct DropoutKeys {
  uint32_t k0 = 0, k1 = 0;
  // ceil(p·2³²): an integer draw is below p·2³² exactly when below this. Held in 32 bits, the
  // comparison vectorises in 32-bit lanes (a 64-bit one took 1.15 ns an entry on a Zen 3 core, 0.69
  // in 32 bits); the one value past 32 bits, 2³² (p so near 1 that every entry drops), is keep = 0.
  uint32_t threshold = 0;
  float keep = 1;
  // A mask of rate p from its keys.
  static DropoutKeys Of(uint32_t k0, uint32_t k1, double p, float keep) {
    const double t = std::ceil(p * 4294967296.0);
    return t >= 4294967296.0 ? DropoutKeys{k0, k1, 0, 0.f} : DropoutKeys{k0, k1, static_cast<uint32_t>(t), keep};
  }
  // Draws the keys from `state` (4 words, advanced in place by two draws).
  static DropoutKeys Draw(uint32_t* state, double p, float keep) {
    Xoshiro128 rng(state);
    const uint32_t k0 = rng.Next(), k1 = rng.Next();
    rng.Save(state);
    return Of(k0, k1, p, keep);
  }
  [[gnu::always_inline]] uint32_t Hash(uint32_t i) const { return Mix32(Mix32(i ^ k0) ^ k1); }
  // The multiplier of entry i: keep, or 0 where dropped.
  [[gnu::always_inline]] float Multiplier(uint32_t i) const { return Hash(i) >= threshold ? keep : 0.f; }
};

// out[j] = v[j] · (entry first + j's multiplier) for j < n (v null: the multipliers themselves). May run in place (lora.cc).
void ApplyDropout(const DropoutKeys& k, const float* v, int64_t first, int64_t n, float* out);
// The backward pass's two uses of one draw of the mask (lora.cc): dx[j] += u[j] · multiplier and
// xd[j] = x[j] · multiplier, entry first + j's.
void DropoutBackward(const DropoutKeys& k, const float* u, float* dx, const float* x, float* xd, int64_t first, int64_t n);

}  // namespace pbrl
