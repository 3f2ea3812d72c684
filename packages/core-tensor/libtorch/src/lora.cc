// A linear layer of a frozen weight with its LoRA adapter, out = x·Wᵀ (+ bias) + s·(dropout(x)·Aᵀ)·Bᵀ,
// in one call forward and one backward (core-tensor's loraLinear). As tfjs ops it was ~14 kernels
// per layer and step, a float32 dropout mask kept for the backward pass, and six thin (rank-16)
// BLAS products that ran at 40–80 GFLOPS: on a SmolLM2-135M step a LoRA run was slower than
// training every weight. Here the mask is not stored: both passes draw it from its two keys
// (dropout_rng.h, the same mask as core-tensor's dropoutMask), and rows are taken eight at a time
// into register-held sums (four at a time on CPUs without AVX-512, see Gather16).
#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "common.h"
#include "dropout_rng.h"

namespace pbrl {

PBRL_CLONES void ApplyDropout(const DropoutKeys& k, const float* v, int64_t first, int64_t n, float* out) {
  const DropoutKeys keys = k;  // a local copy: its fields stay in registers in the vectorised loop
  if (v == nullptr) {
    for (int64_t j = 0; j < n; j++) out[j] = keys.Multiplier(static_cast<uint32_t>(first + j));
  } else {
    // A product, as the tfjs path's x · mask, so that infinities give the same NaNs.
    for (int64_t j = 0; j < n; j++) out[j] = v[j] * keys.Multiplier(static_cast<uint32_t>(first + j));
  }
}

PBRL_CLONES void DropoutBackward(const DropoutKeys& k, const float* __restrict u, float* __restrict dx, const float* __restrict x, float* __restrict xd,
                                 int64_t first, int64_t n) {
  const DropoutKeys keys = k;
  for (int64_t j = 0; j < n; j++) {
    const float m = keys.Multiplier(static_cast<uint32_t>(first + j));
    dx[j] += u[j] * m;
    xd[j] = x[j] * m;
  }
}

namespace {

// The rank is held in 16-float lanes (a 512-bit register): r ≤ 16 padded with zeros, wider ranks in
// blocks of 16. Each kernel below keeps eight rows' sums in eight registers, so one load of the
// weight block serves eight rows: ~150 GFLOPS per core on a Zen 5, where a dot product per rank
// and row ran at 37 and a rank-16 sgemm at 40–80.
constexpr int kLanes = 16, kRows = 8;
typedef float Lanes __attribute__((vector_size(64), aligned(4)));
[[gnu::always_inline]] inline Lanes Load(const float* p) {
  Lanes v;
  __builtin_memcpy(&v, p, sizeof v);
  return v;
}
[[gnu::always_inline]] inline void Store(float* p, Lanes v) { __builtin_memcpy(p, &v, sizeof v); }

// Row pointers for up to kRows rows `stride` apart; missing rows repeat the first (computed, not stored).
struct RowPtrs {
  const float* p[kRows];
  RowPtrs(const float* first, int64_t stride, int rows) {
    for (int t = 0; t < kRows; t++) p[t] = first + (t < rows ? t * stride : 0);
  }
};

// Σ_k row_t[k·sk] · m[k·ldm + l] for the eight rows of r and the 16 lanes l, in eight registers.
struct EightRowSums {
  Lanes row[kRows];
};
[[gnu::always_inline]] inline EightRowSums SumEightRows(const RowPtrs& r, int64_t sk, int64_t K, const float* __restrict m, int64_t ldm) {
  Lanes a0 = {}, a1 = {}, a2 = {}, a3 = {}, a4 = {}, a5 = {}, a6 = {}, a7 = {};
  for (int64_t k = 0; k < K; k++) {
    const Lanes mk = Load(m + k * ldm);
    const int64_t o = k * sk;
    a0 += r.p[0][o] * mk;
    a1 += r.p[1][o] * mk;
    a2 += r.p[2][o] * mk;
    a3 += r.p[3][o] * mk;
    a4 += r.p[4][o] * mk;
    a5 += r.p[5][o] * mk;
    a6 += r.p[6][o] * mk;
    a7 += r.p[7][o] * mk;
  }
  return EightRowSums{{a0, a1, a2, a3, a4, a5, a6, a7}};
}

// Without AVX-512 a 16-lane sum is two 256-bit registers, and eight rows' sums (sixteen registers)
// do not fit beside the weight block: they spilled to the stack, 7.4 GFLOPS on a Zen 3 core. Four
// rows' sums in eight 8-lane halves stay in registers: 85 GFLOPS there.
typedef float Half __attribute__((vector_size(32), aligned(4)));
[[gnu::always_inline]] inline Half LoadHalf(const float* p) {
  Half v;
  __builtin_memcpy(&v, p, sizeof v);
  return v;
}
constexpr int kFewRows = 4;

// SumEightRows for the first four rows of r, as 8-lane halves.
struct FourRowSums {
  Half lo[kFewRows], hi[kFewRows];
};
[[gnu::always_inline]] inline FourRowSums SumFourRows(const RowPtrs& r, int64_t sk, int64_t K, const float* __restrict m, int64_t ldm) {
  Half l0 = {}, h0 = {}, l1 = {}, h1 = {}, l2 = {}, h2 = {}, l3 = {}, h3 = {};
  for (int64_t k = 0; k < K; k++) {
    const Half lo = LoadHalf(m + k * ldm), hi = LoadHalf(m + k * ldm + 8);
    const int64_t o = k * sk;
    const float x0 = r.p[0][o], x1 = r.p[1][o], x2 = r.p[2][o], x3 = r.p[3][o];
    l0 += x0 * lo;
    h0 += x0 * hi;
    l1 += x1 * lo;
    h1 += x1 * hi;
    l2 += x2 * lo;
    h2 += x2 * hi;
    l3 += x3 * lo;
    h3 += x3 * hi;
  }
  return FourRowSums{{l0, l1, l2, l3}, {h0, h1, h2, h3}};
}

// Row t's 16 sums (plus add's 16 values when add is given) at out.
[[gnu::always_inline]] inline void StoreSums(float* out, const float* add, Lanes sum) { Store(out, add != nullptr ? Load(add) + sum : sum); }
[[gnu::always_inline]] inline void StoreSums(float* out, const float* add, Half lo, Half hi) {
  if (add != nullptr) {
    lo += LoadHalf(add);
    hi += LoadHalf(add + 8);
  }
  __builtin_memcpy(out, &lo, sizeof lo);
  __builtin_memcpy(out + 8, &hi, sizeof hi);
}

// out[t·ldo + l] = Σ_k v[t·st + k·sk] · m[k·ldm + l] for rows t < `rows` (≤ 8) and one 16-lane block of m.
PBRL_CLONES void Gather16Of8(const float* v, int64_t st, int64_t sk, int64_t K, const float* __restrict m, int64_t ldm, int rows, float* __restrict out,
                             int64_t ldo) {
  const EightRowSums s = SumEightRows(RowPtrs(v, st, rows), sk, K, m, ldm);
  for (int t = 0; t < rows; t++) StoreSums(out + t * ldo, nullptr, s.row[t]);
}

// Gather16Of8 for rows ≤ 4.
PBRL_CLONES void Gather16Of4(const float* v, int64_t st, int64_t sk, int64_t K, const float* __restrict m, int64_t ldm, int rows, float* __restrict out,
                             int64_t ldo) {
  const FourRowSums s = SumFourRows(RowPtrs(v, st, rows), sk, K, m, ldm);
  for (int t = 0; t < rows; t++) StoreSums(out + t * ldo, nullptr, s.lo[t], s.hi[t]);
}

// The columns n0 ≤ n < N (fewer than 16) of Scatter16, one sum at a time.
void ScatterTail(const RowPtrs& cr, int64_t J, const float* m, int64_t ldm, int64_t n0, int64_t N, int rows, const float* add, float* out, int64_t ldo) {
  for (int t = 0; t < rows; t++)
    for (int64_t n = n0; n < N; n++) {
      float sum = 0;
      for (int64_t j = 0; j < J; j++) sum += cr.p[t][j] * m[j * ldm + n];
      out[t * ldo + n] = add != nullptr ? add[t * ldo + n] + sum : sum;
    }
}

// out[t·ldo + n] = (add ? add[t·ldo + n] : 0) + Σ_j c[t·ldc + j] · m[j·ldm + n] for rows t < `rows` (≤ 8), n < N.
PBRL_CLONES void Scatter16Of8(const float* c, int64_t ldc, int64_t J, const float* __restrict m, int64_t ldm, int64_t N, int rows, const float* add,
                              float* out, int64_t ldo) {
  const RowPtrs cr(c, ldc, rows);
  int64_t n0 = 0;
  for (; n0 + kLanes <= N; n0 += kLanes) {
    const EightRowSums s = SumEightRows(cr, 1, J, m + n0, ldm);
    for (int t = 0; t < rows; t++) StoreSums(out + t * ldo + n0, add != nullptr ? add + t * ldo + n0 : nullptr, s.row[t]);
  }
  ScatterTail(cr, J, m, ldm, n0, N, rows, add, out, ldo);
}

// Scatter16Of8 for rows ≤ 4.
PBRL_CLONES void Scatter16Of4(const float* c, int64_t ldc, int64_t J, const float* __restrict m, int64_t ldm, int64_t N, int rows, const float* add,
                              float* out, int64_t ldo) {
  const RowPtrs cr(c, ldc, rows);
  int64_t n0 = 0;
  for (; n0 + kLanes <= N; n0 += kLanes) {
    const FourRowSums s = SumFourRows(cr, 1, J, m + n0, ldm);
    for (int t = 0; t < rows; t++) StoreSums(out + t * ldo + n0, add != nullptr ? add + t * ldo + n0 : nullptr, s.lo[t], s.hi[t]);
  }
  ScatterTail(cr, J, m, ldm, n0, N, rows, add, out, ldo);
}

bool HasAvx512() {
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
  static const bool has = __builtin_cpu_supports("x86-64-v4");
  return has;
#else
  return false;
#endif
}

// The kernels with eight rows where the CPU has AVX-512, else four rows at a time.
void Gather16(const float* v, int64_t st, int64_t sk, int64_t K, const float* m, int64_t ldm, int rows, float* out, int64_t ldo) {
  if (HasAvx512()) return Gather16Of8(v, st, sk, K, m, ldm, rows, out, ldo);
  for (int t = 0; t < rows; t += kFewRows) Gather16Of4(v + t * st, st, sk, K, m, ldm, std::min(kFewRows, rows - t), out + t * ldo, ldo);
}

void Scatter16(const float* c, int64_t ldc, int64_t J, const float* m, int64_t ldm, int64_t N, int rows, const float* add, float* out, int64_t ldo) {
  if (HasAvx512()) return Scatter16Of8(c, ldc, J, m, ldm, N, rows, add, out, ldo);
  for (int t = 0; t < rows; t += kFewRows)
    Scatter16Of4(c + t * ldc, ldc, J, m, ldm, N, std::min(kFewRows, rows - t), add != nullptr ? add + t * ldo : nullptr, out + t * ldo, ldo);
}

// Σ over the rows [lo, hi) of v[row, n] · m[row, :] for every n < N, into out [N, W] (W = width of m,
// a multiple of 16): the reduction behind dB = dyᵀ·low and dAᵀ = dropout(x)ᵀ·g.
void SumRowProducts(const float* v, int64_t ldv, int64_t N, const float* m, int64_t W, int64_t lo, int64_t hi, float* out) {
  for (int64_t n0 = 0; n0 < N; n0 += kRows)
    for (int64_t cb = 0; cb < W; cb += kLanes)
      Gather16(v + lo * ldv + n0, 1, ldv, hi - lo, m + lo * W + cb, W, static_cast<int>(std::min<int64_t>(kRows, N - n0)), out + n0 * W + cb, W);
}

struct Shapes {
  int64_t rows, in, out, rank;
};

Shapes Check(const at::Tensor& x, const at::Tensor& yOrDy, const at::Tensor& a, const at::Tensor& b, const char* name) {
  if (x.dim() != 2 || yOrDy.dim() != 2 || a.dim() != 2 || b.dim() != 2)
    throw ArgError(std::string(name) + ": x [N, in], y or dy [N, out], A [r, in] and B [out, r] must be matrices");
  const Shapes s{x.size(0), x.size(1), b.size(0), a.size(0)};
  if (yOrDy.size(0) != s.rows || yOrDy.size(1) != s.out || a.size(1) != s.in || b.size(1) != s.rank)
    throw ArgError(std::string(name) + ": shapes do not fit x [N, in], y/dy [N, out], A [r, in], B [out, r]");
  return s;
}

bool AllOnCpu(std::initializer_list<at::Tensor> ts) {
  return std::all_of(ts.begin(), ts.end(), [](const at::Tensor& t) { return t.device().is_cpu(); });
}

at::Tensor CpuFloat(const at::Tensor& t) { return Widened(t).to(at::kFloat).contiguous(); }

// A contiguous float32 or bfloat16 tensor (others as float32), for loops that widen it as they read (RunOf).
at::Tensor FloatOrHalf(const at::Tensor& t) { return t.scalar_type() == at::kBFloat16 ? t.contiguous() : CpuFloat(t); }

// The keys of a mask as the int32 tensor that carries them from loraLinear to loraLinearBackward (empty: no dropout).
at::Tensor KeysTensor(const DropoutKeys& k) {
  at::Tensor t = at::empty({2}, at::kInt);
  t[0] = static_cast<int32_t>(k.k0);
  t[1] = static_cast<int32_t>(k.k1);
  return t;
}

DropoutKeys KeysOf(const at::Tensor& t, double p, float keep) {
  if (t.numel() != 2) throw ArgError("loraLinearBackward: the dropout keys are not loraLinear's");
  const at::Tensor c = t.to(at::kCPU).contiguous();
  return DropoutKeys::Of(static_cast<uint32_t>(c.data_ptr<int32_t>()[0]), static_cast<uint32_t>(c.data_ptr<int32_t>()[1]), p, keep);
}

// The float mask (0 or keep) of a [rows, cols] input, for the ATen path (tensors off the CPU).
at::Tensor MaskOf(const DropoutKeys& k, int64_t rows, int64_t cols, const at::Device& device) {
  at::Tensor mask = at::empty({rows, cols}, at::kFloat);
  ApplyDropout(k, nullptr, 0, rows * cols, mask.data_ptr<float>());
  return mask.to(device);
}

// The rank padded to whole 16-lane blocks.
int64_t Padded(int64_t rank) { return (rank + kLanes - 1) / kLanes * kLanes; }

// m [rows, cols] as float32 [rows, cols padded to `width`] (transposed first when `transpose`), zeros beyond.
at::Tensor PaddedCols(const at::Tensor& m, bool transpose, int64_t width) {
  const at::Tensor t = transpose ? m.t() : m;
  at::Tensor out = at::zeros({t.size(0), width}, at::kFloat);
  out.narrow(1, 0, t.size(1)).copy_(t);
  return out;
}

// m [rows, cols] as float32 [rows padded to `height`, cols], zeros beyond.
at::Tensor PaddedRows(const at::Tensor& m, int64_t height) {
  at::Tensor out = at::zeros({height, m.size(1)}, at::kFloat);
  out.narrow(0, 0, m.size(0)).copy_(m);
  return out;
}

// loraLinear(x, W, bias | null, A, B, state (Uint32Array of the dropout stream's 4 words, advanced
// in place; null: no dropout), scaling, p, keep) → [out, low, keys]: a linear layer of a frozen
// weight W [out, in] (and bias) with its LoRA update, out = x·Wᵀ (+ bias) + low·Bᵀ where
// low = s·(dropout(x)·Aᵀ) [N, r] (on the CPU [N, r padded to 16s], zeros beyond r), keys the
// mask's two keys (int32 [2]; empty without dropout). The product x·Wᵀ is the matmul kernel's
// (bfloat16 under bf16 compute, as a product with a weight is there).
napi_value LoraLinear(const Args& a) {
  const std::vector<at::Tensor> t = a.Ts({0, 3, 4});
  at::Tensor base = Matmul(Operand(a, 0), Operand(a, 1).t(), Bf16Compute());
  if (!a.IsNullish(2)) base = at::add(base, a.T(2));
  const at::Tensor& xIn = t[0];
  const Shapes sh = Check(xIn, base, t[1], t[2], "loraLinear");
  const float s = static_cast<float>(a.Num(6));
  const double p = a.Num(7);
  const float keep = static_cast<float>(a.Num(8));
  at::Tensor keyT = at::empty({0}, at::kInt);
  DropoutKeys keys;
  if (!a.IsNullish(5) && p > 0) {
    napi_typedarray_type type;
    size_t n;
    uint32_t* state = static_cast<uint32_t*>(a.Typed(5, &type, &n));
    if (type != napi_uint32_array || n != 4) throw ArgError("loraLinear: the dropout stream's state as a Uint32Array of 4 words");
    if (sh.rows * sh.in > (int64_t{1} << 32)) throw ArgError("loraLinear: dropout over more than 2^32 entries");
    keys = DropoutKeys::Draw(state, p, keep);
    keyT = KeysTensor(keys);
  }
  const bool masked = keyT.numel() > 0;
  if (!AllOnCpu({base, xIn})) {
    const at::Tensor x = Widened(xIn);
    const at::Tensor xd = masked ? at::mul(x, MaskOf(keys, sh.rows, sh.in, x.device())) : x;
    const at::Tensor low = at::mul(at::mm(xd, t[1].t()), s);
    return Refs(a.env(), {at::add(Widened(base), at::mm(low, t[2].t())), low, keyT});
  }
  const int64_t W = Padded(sh.rank);
  // y and x as they come, float32 or bfloat16 (a bf16 step's projections), widened eight rows at a
  // time; the output keeps y's dtype, so that a bf16 step's next ops read bfloat16 as without LoRA.
  const at::Tensor y = FloatOrHalf(base), x = FloatOrHalf(xIn);
  const bool half = y.scalar_type() == at::kBFloat16;
  const at::Tensor at16 = PaddedCols(CpuFloat(t[1]), true, W);  // Aᵀ [in, W]
  const at::Tensor bt16 = PaddedRows(CpuFloat(t[2]).t(), W);    // Bᵀ [W, out]
  const at::Tensor out = at::empty({sh.rows, sh.out}, y.options()), low = at::empty({sh.rows, W}, at::kFloat);
  const float *At = at16.data_ptr<float>(), *Bt = bt16.data_ptr<float>();
  float* L = low.data_ptr<float>();
  at::parallel_for(0, (sh.rows + kRows - 1) / kRows, 2, [&](int64_t b0, int64_t b1) {
    std::vector<float> xb(static_cast<size_t>(kRows * sh.in)), xd(static_cast<size_t>(masked ? kRows * sh.in : 0));
    std::vector<float> yb(static_cast<size_t>(kRows * sh.out)), ob(static_cast<size_t>(half ? kRows * sh.out : 0));
    for (int64_t b = b0; b < b1; b++) {
      const int64_t i0 = b * kRows;
      const int rows = static_cast<int>(std::min<int64_t>(kRows, sh.rows - i0));
      const float* src = RunOf(x, i0 * sh.in, rows * sh.in, xb.data());
      if (masked) {
        ApplyDropout(keys, src, i0 * sh.in, rows * sh.in, xd.data());
        src = xd.data();
      }
      float* l = L + i0 * W;
      for (int64_t cb = 0; cb < W; cb += kLanes) Gather16(src, sh.in, 1, sh.in, At + cb, W, rows, l + cb, W);
      for (int64_t k = 0; k < rows * W; k++) l[k] *= s;
      float* o = half ? ob.data() : out.data_ptr<float>() + i0 * sh.out;
      Scatter16(l, W, W, Bt, sh.out, sh.out, rows, RunOf(y, i0 * sh.out, rows * sh.out, yb.data()), o, sh.out);
      StoreRun(o, out, i0 * sh.out, rows * sh.out);
    }
  });
  return Refs(a.env(), {out, low, keyT});
}

// loraLinearBackward(dy, x, W, A, B, low, keys, scaling, p, keep) → [dx, dA, dB] of loraLinear's
// out: with g = s·dy·B, dx = dy·W + (g·A) ⊙ mask (the mask drawn again from its keys),
// dA = gᵀ·dropout(x) and dB = dyᵀ·low. W is frozen: it gets no gradient.
napi_value LoraLinearBackward(const Args& a) {
  const std::vector<at::Tensor> t = a.Ts({0, 1, 3, 4, 5});
  const Shapes sh = Check(t[1], t[0], t[2], t[3], "loraLinearBackward");
  // dy·W as the matmul kernel computes an input gradient, in float32: the update is added into it.
  const at::Tensor base = Matmul(Operand(a, 0), Operand(a, 2), false).to(at::kFloat).contiguous();
  const bool masked = a.T(6).numel() > 0;
  const float s = static_cast<float>(a.Num(7));
  const DropoutKeys keys = masked ? KeysOf(a.T(6), a.Num(8), static_cast<float>(a.Num(9))) : DropoutKeys();
  if (!AllOnCpu({t[0], t[1]})) {
    const at::Tensor dy = Widened(t[0]), x = Widened(t[1]), low = t[4].narrow(1, 0, sh.rank);
    const at::Tensor mask = masked ? MaskOf(keys, sh.rows, sh.in, x.device()) : at::Tensor();
    const at::Tensor g = at::mul(at::mm(dy, t[3]), s);
    const at::Tensor dx = at::mm(g, t[2]);
    return Refs(a.env(), {at::add(base, masked ? at::mul(dx, mask) : dx), at::mm(g.t(), masked ? at::mul(x, mask) : x), at::mm(dy.t(), low)});
  }
  const int64_t W = Padded(sh.rank);
  const at::Tensor dy = CpuFloat(t[0]), x = CpuFloat(t[1]), low = CpuFloat(t[4]);
  if (low.size(0) != sh.rows || low.size(1) != W) throw ArgError("loraLinearBackward: low is not loraLinear's [N, r padded to 16s]");
  const at::Tensor a16 = PaddedRows(CpuFloat(t[2]), W);         // A [W, in]
  const at::Tensor b16 = PaddedCols(CpuFloat(t[3]), false, W);  // B [out, W]
  const at::Tensor& dx = base;
  const at::Tensor g = at::empty({sh.rows, W}, at::kFloat);
  const at::Tensor xd = masked ? at::empty({sh.rows, sh.in}, at::kFloat) : x;
  const float *DY = dy.data_ptr<float>(), *X = x.data_ptr<float>(), *A16 = a16.data_ptr<float>(), *B16 = b16.data_ptr<float>(), *L = low.data_ptr<float>();
  float *DX = dx.data_ptr<float>(), *G = g.data_ptr<float>(), *XD = xd.data_ptr<float>();
  // dA and dB are sums over rows: each chunk of rows sums into its own part, the parts added after.
  const int64_t chunks = std::max<int64_t>(1, std::min<int64_t>(at::get_num_threads(), sh.rows / kRows));
  const at::Tensor daT = at::empty({chunks, sh.in, W}, at::kFloat), db = at::empty({chunks, sh.out, W}, at::kFloat);
  at::parallel_for(0, chunks, 1, [&](int64_t c0, int64_t c1) {
    std::vector<float> update(static_cast<size_t>(masked ? kRows * sh.in : 0));
    for (int64_t c = c0; c < c1; c++) {
      const int64_t lo = sh.rows * c / chunks, hi = sh.rows * (c + 1) / chunks;
      for (int64_t i0 = lo; i0 < hi; i0 += kRows) {
        const int rows = static_cast<int>(std::min<int64_t>(kRows, hi - i0));
        float* gi = G + i0 * W;
        for (int64_t cb = 0; cb < W; cb += kLanes) Gather16(DY + i0 * sh.out, sh.out, 1, sh.out, B16 + cb, W, rows, gi + cb, W);
        for (int64_t k = 0; k < rows * W; k++) gi[k] *= s;
        float* dxi = DX + i0 * sh.in;
        if (masked) {
          Scatter16(gi, W, W, A16, sh.in, sh.in, rows, nullptr, update.data(), sh.in);
          DropoutBackward(keys, update.data(), dxi, X + i0 * sh.in, XD + i0 * sh.in, i0 * sh.in, rows * sh.in);
        } else {
          Scatter16(gi, W, W, A16, sh.in, sh.in, rows, dxi, dxi, sh.in);  // added into dy·W in place
        }
      }
      SumRowProducts(DY, sh.out, sh.out, L, W, lo, hi, db.data_ptr<float>() + c * sh.out * W);
      SumRowProducts(XD, sh.in, sh.in, G, W, lo, hi, daT.data_ptr<float>() + c * sh.in * W);
    }
  });
  const at::Tensor dA = daT.sum(0).narrow(1, 0, sh.rank).t().contiguous();
  const at::Tensor dB = db.sum(0).narrow(1, 0, sh.rank).contiguous();
  return Refs(a.env(), {dx, dA, dB});
}

}  // namespace

void RegisterLora(napi_env env, napi_value exports) {
  Export(env, exports, "loraLinear", LoraLinear);
  Export(env, exports, "loraLinearBackward", LoraLinearBackward);
}

}  // namespace pbrl
