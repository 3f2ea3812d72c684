// y[i, j] = x[i] · w[j] for a few rows x[i] (a decoding step's batch) and weight rows w[j]: sgemm
// first packs the whole weight matrix, which costs more than the product itself when the rows are
// few. Here each weight row is read once for all rows, each loaded chunk of x serves several weight
// rows, with rows × weight rows accumulators held in registers, and the next weight rows are
// prefetched while these are multiplied (without it, memory and arithmetic took turns: 1.8× slower). Shared by pbrl's two addons
// (native/src/decode.cc, libtorch/src/blas.cc).
#pragma once
#include <cstdint>

namespace pbrl_few_rows {

// A register's worth of float lanes for each instruction set, and the number of weight rows a tile
// takes so that its accumulators fit the register file (32 zmm on AVX-512, 16 ymm/xmm otherwise).
typedef float V16 __attribute__((vector_size(64), aligned(4)));
typedef float V8 __attribute__((vector_size(32), aligned(4)));
typedef float V4 __attribute__((vector_size(16), aligned(4)));

#define PBRL_FEW_ROWS_INLINE static inline __attribute__((always_inline))

template <typename V>
PBRL_FEW_ROWS_INLINE V Load(const float* p) {
  V v;
  __builtin_memcpy(&v, p, sizeof v);
  return v;
}

// Halving sums, in registers: a few vector adds instead of a chain of dependent scalar ones.
PBRL_FEW_ROWS_INLINE float Sum(V4 v) {
  const V4 h = v + __builtin_shufflevector(v, v, 2, 3, 0, 1);
  return h[0] + h[1];
}
PBRL_FEW_ROWS_INLINE float Sum(V8 v) { return Sum(__builtin_shufflevector(v, v, 0, 1, 2, 3) + __builtin_shufflevector(v, v, 4, 5, 6, 7)); }
PBRL_FEW_ROWS_INLINE float Sum(V16 v) {
  return Sum(__builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7) + __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15));
}

template <typename V, int B, int J>
PBRL_FEW_ROWS_INLINE void Tile(const float* x, int64_t ldx, const float* w, float* y, int64_t ldy, int64_t j, int64_t in) {
  constexpr int64_t kLanes = sizeof(V) / sizeof(float);
  V acc[B][J] = {};
  int64_t k = 0;
  for (; k + kLanes <= in; k += kLanes) {
    V wv[J];
#pragma GCC unroll 4
    for (int t = 0; t < J; t++) {
      wv[t] = Load<V>(w + (j + t) * in + k);
      __builtin_prefetch(w + (j + J + t) * in + k, 0, 2);  // into L2 (into L1: 34 ms, here 29)
    }
#pragma GCC unroll 8
    for (int i = 0; i < B; i++) {
      V xv = Load<V>(x + i * ldx + k);
#if defined(__x86_64__)
      asm("" : "+v"(xv));  // kept in a register for the J products: folded into each it was J loads (16 rows, AVX-512: 39 → 34 ms)
#endif
#pragma GCC unroll 4
      for (int t = 0; t < J; t++) acc[i][t] += xv * wv[t];
    }
  }
  for (int i = 0; i < B; i++)
    for (int t = 0; t < J; t++) {
      float s = Sum(acc[i][t]);
      for (int64_t r = k; r < in; r++) s += x[i * ldx + r] * w[(j + t) * in + r];
      y[i * ldy + j + t] = s;
    }
}

// The weight rows a tile of B rows takes, so that its accumulators fit the register file.
template <typename V, int B>
constexpr int TileWidth() {
  constexpr int kRegisters = sizeof(V) == 64 ? 32 : 16;
  return (kRegisters - 4) / B >= 4 ? 4 : (kRegisters - 4) / B >= 1 ? (kRegisters - 4) / B : 1;
}

template <typename V, int B>
PBRL_FEW_ROWS_INLINE void Rows(const float* x, int64_t ldx, const float* w, float* y, int64_t ldy, int64_t j0, int64_t j1, int64_t in) {
  constexpr int J = TileWidth<V, B>();
  int64_t j = j0;
  for (; j + J <= j1; j += J) Tile<V, B, J>(x, ldx, w, y, ldy, j, in);
  for (; j < j1; j++) Tile<V, B, 1>(x, ldx, w, y, ldy, j, in);
}

// Up to eight rows over the weight rows [j0, j1).
template <typename V>
PBRL_FEW_ROWS_INLINE void UpToEight(const float* x, int64_t ldx, const float* w, float* y, int64_t ldy, int64_t rows, int64_t j0, int64_t j1,
                                    int64_t in) {
  switch (rows) {
    case 1: Rows<V, 1>(x, ldx, w, y, ldy, j0, j1, in); break;
    case 2: Rows<V, 2>(x, ldx, w, y, ldy, j0, j1, in); break;
    case 3: Rows<V, 3>(x, ldx, w, y, ldy, j0, j1, in); break;
    case 4: Rows<V, 4>(x, ldx, w, y, ldy, j0, j1, in); break;
    case 5: Rows<V, 5>(x, ldx, w, y, ldy, j0, j1, in); break;
    case 6: Rows<V, 6>(x, ldx, w, y, ldy, j0, j1, in); break;
    case 7: Rows<V, 7>(x, ldx, w, y, ldy, j0, j1, in); break;
    default: Rows<V, 8>(x, ldx, w, y, ldy, j0, j1, in);
  }
}

// Eight rows at a time (a tile's accumulators fill the registers at eight). Past eight rows every
// group of eight takes one tile's weight rows while they are in cache, before the next weight rows
// are read: group by group over the whole weight read it from memory once per group (16 rows times
// SmolLM2-135M's products on an Intel Xeon with AVX-512: 44 → 39 ms).
template <typename V>
PBRL_FEW_ROWS_INLINE void Dispatch(const float* x, int64_t ldx, const float* w, float* y, int64_t ldy, int64_t rows, int64_t j0, int64_t j1,
                                   int64_t in) {
  if (rows <= 8) return UpToEight<V>(x, ldx, w, y, ldy, rows, j0, j1, in);
  constexpr int J = TileWidth<V, 8>();
  for (int64_t j = j0; j < j1; j += J) {
    const int64_t end = j + J < j1 ? j + J : j1;
    for (int64_t i = 0; i < rows; i += 8) UpToEight<V>(x + i * ldx, ldx, w, y + i * ldy, ldy, rows - i < 8 ? rows - i : 8, j, end, in);
  }
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target("arch=x86-64-v4"))) static void Avx512(const float* x, int64_t ldx, const float* w, float* y, int64_t ldy, int64_t rows,
                                                              int64_t j0, int64_t j1, int64_t in) {
  Dispatch<V16>(x, ldx, w, y, ldy, rows, j0, j1, in);
}
__attribute__((target("arch=x86-64-v3"))) static void Avx2(const float* x, int64_t ldx, const float* w, float* y, int64_t ldy, int64_t rows,
                                                            int64_t j0, int64_t j1, int64_t in) {
  Dispatch<V8>(x, ldx, w, y, ldy, rows, j0, j1, in);
}
#endif

// The most rows for which FewRowsLinear beats sgemm, by instruction set. Measured on an AMD EPYC
// (Zen 5) against OpenBLAS 0.3.21 (rows × 576 times the weights of 576 × 1536 and 576 × 49152):
// AVX-512 at 8 rows 2.3× / 2.8× faster on two threads; AVX2 at 8 rows 1.7× / 1.9×; SSE at 4 rows
// 1.3× / 2.3×, at 8 rows 0.84× / 1.4×. On an Intel Xeon (AVX-512, AMX), all SmolLM2-135M products
// of a decoding step on two threads against torch.mm (MKL): 16 rows 29 ms to 50, 32 rows 62 to 61.
static int64_t MaxRows() {
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
  static const int64_t rows = __builtin_cpu_supports("x86-64-v4") ? 16 : __builtin_cpu_supports("x86-64-v3") ? 8 : 4;
  return rows;
#else
  return 4;
#endif
}

// Any number of rows, fastest up to MaxRows(): x [rows, in] with row stride ldx; w [out, in], contiguous; y [rows, ≥ j1] with
// row stride ldy; output columns [j0, j1).
static void FewRowsLinear(const float* x, int64_t ldx, const float* w, float* y, int64_t ldy, int64_t rows, int64_t j0, int64_t j1,
                          int64_t in) {
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
  static const int level = __builtin_cpu_supports("x86-64-v4") ? 2 : __builtin_cpu_supports("x86-64-v3") ? 1 : 0;
  if (level == 2) return Avx512(x, ldx, w, y, ldy, rows, j0, j1, in);
  if (level == 1) return Avx2(x, ldx, w, y, ldy, rows, j0, j1, in);
#endif
  Dispatch<V4>(x, ldx, w, y, ldy, rows, j0, j1, in);
}

}  // namespace pbrl_few_rows
