// pbrl's fused kernels (core-tensor/src/fused-ops.ts) on ATen: each is one addon call, a few
// ATen ops, instead of the tfjs op sequences and their temporaries. Same formulas as the native
// backend's kernels (native/src/layers.cc, logsoftmax.cc, adamw.cc) and torch's own (RMSNorm, SiLU, AdamW).
#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>

#include "common.h"
#include "exp.h"
#include "rmsnorm_grad.h"

namespace pbrl {

PBRL_CLONES void Widen(const c10::BFloat16* __restrict x, float* __restrict y, int64_t n) {
  for (int64_t i = 0; i < n; i++) y[i] = static_cast<float>(x[i]);
}

PBRL_CLONES void Narrow(const float* __restrict x, c10::BFloat16* __restrict y, int64_t n) {
  for (int64_t i = 0; i < n; i++) y[i] = c10::BFloat16(x[i]);
}

const float* RunOf(const at::Tensor& x, int64_t lo, int64_t n, float* buf) {
  if (x.scalar_type() == at::kFloat) return x.data_ptr<float>() + lo;
  Widen(x.data_ptr<c10::BFloat16>() + lo, buf, n);
  return buf;
}

void StoreRun(const float* run, const at::Tensor& out, int64_t lo, int64_t n) {
  if (out.scalar_type() == at::kFloat) {
    float* o = out.data_ptr<float>() + lo;
    if (o != run) std::copy(run, run + n, o);
  } else {
    Narrow(run, out.data_ptr<c10::BFloat16>() + lo, n);
  }
}

// In 16 lanes: a running maximum per lane vectorises, one over the whole row does not (gcc keeps
// it scalar, a compare and a move per element).
PBRL_CLONES float RowMax(const float* __restrict row, int64_t n) {
  float lanes[16];
  std::fill(lanes, lanes + 16, -INFINITY);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    for (int k = 0; k < 16; k++) lanes[k] = row[i + k] > lanes[k] ? row[i + k] : lanes[k];
  float mx = -INFINITY;
  for (; i < n; i++) mx = row[i] > mx ? row[i] : mx;
  for (float v : lanes) mx = v > mx ? v : mx;
  return mx;
}

PBRL_CLONES float Dot(const float* a, const float* b, int64_t n) {
  float acc[16] = {0};
  int64_t j = 0;
  for (; j + 16 <= n; j += 16)
    for (int k = 0; k < 16; k++) acc[k] += a[j + k] * b[j + k];
  float sum = 0;
  for (; j < n; j++) sum += a[j] * b[j];
  for (float v : acc) sum += v;
  return sum;
}

// One row of RMSNorm in float32: y = w ⊙ x · r with r = 1/√(mean(x²) + eps), returned.
PBRL_CLONES float RmsNormRow(const float* __restrict x, const float* __restrict w, float* __restrict y, int64_t cols, float eps) {
  const float r = 1.f / std::sqrt(Dot(x, x, cols) / static_cast<float>(cols) + eps);
  for (int64_t j = 0; j < cols; j++) y[j] = w[j] * (x[j] * r);
  return r;
}

// y = g·σ(g) ⊙ u over a contiguous run, in float32.
PBRL_CLONES void SwigluLoop(const float* __restrict g, const float* __restrict u, float* __restrict y, int64_t n) {
  for (int64_t i = 0; i < n; i++) y[i] = pbrl_exp::ExpF(-g[i]);
  for (int64_t i = 0; i < n; i++) y[i] = g[i] * (1.f / (1.f + y[i])) * u[i];
}

// One head vector of d = 2·half values in float32: forward y = x·cos + rot(x)·sin, backward its
// transpose dx[k] = dy[k]·cos[k] + dy[k+half]·sin[k+half], dx[k+half] = dy[k+half]·cos[k+half] − dy[k]·sin[k].
PBRL_CLONES void RopeVector(const float* __restrict x, const float* __restrict c, const float* __restrict s, float* __restrict y, int64_t half,
                            bool backward) {
  for (int64_t k = 0; k < half; k++) {
    const float a = x[k], b = x[k + half];
    y[k] = backward ? a * c[k] + b * s[k + half] : a * c[k] - b * s[k];
    y[k + half] = backward ? b * c[k + half] - a * s[k] : b * c[k + half] + a * s[k + half];
  }
}

namespace {

bool CpuFloatOrHalf(const at::Tensor& t) {
  return t.device().is_cpu() && t.is_contiguous() && (t.scalar_type() == at::kFloat || t.scalar_type() == at::kBFloat16);
}

// rmsnorm(x [rows, cols], w [cols], eps) → [y, rstd [rows]]: y = w ⊙ x · rstd, rstd = 1/√(mean(x²) + eps).
// On the CPU one pass over each row, which under bf16 also writes y's bfloat16 copy for the
// projections that take it (instead of a cast of y at the first of them); elsewhere ATen ops.
napi_value RmsNorm(const Args& a) {
  const std::vector<at::Tensor> t = a.Ts({0, 1});
  const at::Tensor &x = t[0], w = Widened(t[1]).contiguous();
  const float eps = static_cast<float>(a.Num(2));
  if (!(x.dim() == 2 && CpuFloatOrHalf(x) && w.device().is_cpu() && w.numel() == x.size(1))) {
    const at::Tensor wide = Widened(x);
    const at::Tensor rstd = at::rsqrt(at::mean(at::square(wide), -1, true).add_(eps));
    return Refs(a.env(), {at::mul(w, at::mul(wide, rstd)), rstd.squeeze(-1)});
  }
  const int64_t rows = x.size(0), cols = x.size(1);
  const at::Tensor y = at::empty({rows, cols}, x.options().dtype(at::kFloat));
  const at::Tensor yHalf = Bf16Compute() ? at::empty({rows, cols}, x.options().dtype(at::kBFloat16)) : at::Tensor();
  const at::Tensor rstd = at::empty({rows}, x.options().dtype(at::kFloat));
  at::parallel_for(0, rows, std::max<int64_t>(1, 16384 / std::max<int64_t>(cols, 1)), [&](int64_t lo, int64_t hi) {
    std::vector<float> buf(cols);
    for (int64_t r = lo; r < hi; r++) {
      float* yr = y.data_ptr<float>() + r * cols;
      rstd.data_ptr<float>()[r] = RmsNormRow(RunOf(x, r * cols, cols, buf.data()), w.data_ptr<float>(), yr, cols, eps);
      if (yHalf.defined()) Narrow(yr, yHalf.data_ptr<c10::BFloat16>() + r * cols, cols);
    }
  });
  return Refs(a.env(), {y, rstd}, {yHalf});
}

// RMSNorm's gradient over rows (native/src/rmsnorm_grad.h), compiled into each clone.
PBRL_CLONES void RmsNormGradRows(const float* x, const float* w, const float* rstd, const float* dy, float* dx, float* dw, int64_t lo, int64_t hi,
                                 int64_t cols) {
  pbrl_rmsnorm_grad::Rows(x, w, rstd, dy, dx, dw, lo, hi, cols);
}

// rmsnormGrad(x, w, rstd, dy) → [dx, dw]. On the CPU one pass over the rows (each thread sums its
// own part of dw); elsewhere ATen ops.
napi_value RmsNormGrad(const Args& a) {
  const std::vector<at::Tensor> t = a.Wides({0, 1, 2, 3});
  const at::Tensor &x = t[0], &w = t[1], &dy = t[3];
  const auto cpuFloat = [](const at::Tensor& v) { return v.device().is_cpu() && v.is_contiguous() && v.scalar_type() == at::kFloat; };
  if (x.dim() == 2 && cpuFloat(x) && cpuFloat(w) && cpuFloat(t[2]) && cpuFloat(dy) && dy.sizes() == x.sizes()) {
    const int64_t rows = x.size(0), cols = x.size(1);
    const at::Tensor dx = at::empty_like(x);
    const int threads = at::get_num_threads();
    const at::Tensor parts = at::zeros({threads, cols}, x.options());
    at::parallel_for(0, rows, std::max<int64_t>(1, 16384 / std::max<int64_t>(cols, 1)), [&](int64_t lo, int64_t hi) {
      RmsNormGradRows(x.data_ptr<float>(), w.data_ptr<float>(), t[2].data_ptr<float>(), dy.data_ptr<float>(), dx.data_ptr<float>(),
                      parts.data_ptr<float>() + at::get_thread_num() * cols, lo, hi, cols);
    });
    return Refs(a.env(), {dx, parts.sum(0)});
  }
  const at::Tensor rstd = t[2].unsqueeze(-1);
  const at::Tensor xhat = at::mul(x, rstd);
  const at::Tensor dw = at::sum(at::mul(dy, xhat), 0);
  const at::Tensor g = at::mul(dy, w);
  const at::Tensor dx = at::mul(rstd, at::sub(g, at::mul(xhat, at::mean(at::mul(g, xhat), -1, true))));
  return Refs(a.env(), {dx, dw});
}

// Whether the fused loops below may read gate, up (and dy) directly: contiguous float32 or
// bfloat16 CPU tensors of one shape.
bool SwigluOnCpu(std::initializer_list<at::Tensor> ts) {
  const at::Tensor& first = *ts.begin();
  return std::all_of(ts.begin(), ts.end(), [&](const at::Tensor& t) { return CpuFloatOrHalf(t) && t.sizes() == first.sizes(); });
}

// In the dtype ATen's ops give: bfloat16 when every input is.
at::ScalarType SwigluDtype(std::initializer_list<at::Tensor> ts) {
  return std::all_of(ts.begin(), ts.end(), [](const at::Tensor& t) { return t.scalar_type() == at::kBFloat16; }) ? at::kBFloat16 : at::kFloat;
}

// swiglu(gate, up) = gate·σ(gate) ⊙ up. On the CPU one pass in float32 over blocks of the inputs,
// rounded once (a bf16 step's gate and up are bfloat16 projections, and so is the result, which
// the down projection takes as it is); elsewhere ATen's ops.
napi_value Swiglu(const Args& a) {
  const std::vector<at::Tensor> t = a.Ts({0, 1});
  const at::Tensor &g = t[0], &u = t[1];
  if (!SwigluOnCpu({g, u})) return Ref(a.env(), at::mul(at::silu(g), u));
  const at::Tensor y = at::empty(g.sizes(), g.options().dtype(SwigluDtype({g, u})));
  const bool half = y.scalar_type() == at::kBFloat16;
  constexpr int64_t kBlock = 2048;
  at::parallel_for(0, g.numel(), 8 * kBlock, [&](int64_t lo, int64_t hi) {
    float gb[kBlock], ub[kBlock], yb[kBlock];
    for (int64_t b = lo; b < hi; b += kBlock) {
      const int64_t n = std::min(kBlock, hi - b);
      float* yo = half ? yb : y.data_ptr<float>() + b;
      SwigluLoop(RunOf(g, b, n, gb), RunOf(u, b, n, ub), yo, n);
      StoreRun(yo, y, b, n);
    }
  });
  return Ref(a.env(), y);
}

// dgate and dup of swiglu over a contiguous run, in float32: s = σ(g), du = dy·g·s,
// dg = dy·u·s·(1 + g·(1 − s)).
PBRL_CLONES void SwigluGradLoop(const float* __restrict g, const float* __restrict u, const float* __restrict dy, float* __restrict dg,
                                float* __restrict du, int64_t n) {
  for (int64_t i = 0; i < n; i++) dg[i] = pbrl_exp::ExpF(-g[i]);
  for (int64_t i = 0; i < n; i++) {
    const float s = 1.f / (1.f + dg[i]);
    du[i] = dy[i] * g[i] * s;
    dg[i] = dy[i] * u[i] * s * (1.f + g[i] * (1.f - s));
  }
}

// swigluGrad(gate, up, dy) → [dgate, dup]. On the CPU one pass in float32 over blocks of the
// three inputs (bfloat16 ones, a bf16 step's projections, widened block by block), written in the
// dtype ATen's op sequence gives (bfloat16 when every input is); elsewhere that sequence.
napi_value SwigluGrad(const Args& a) {
  const std::vector<at::Tensor> t = a.Ts({0, 1, 2});
  const at::Tensor &g = t[0], &u = t[1], &dy = t[2];
  if (SwigluOnCpu({g, u, dy})) {
    const auto options = g.options().dtype(SwigluDtype({g, u, dy}));
    const bool half = options.dtype() == at::kBFloat16;
    const at::Tensor dg = at::empty(g.sizes(), options);
    const at::Tensor du = at::empty(g.sizes(), options);
    constexpr int64_t kBlock = 2048;
    at::parallel_for(0, g.numel(), 8 * kBlock, [&](int64_t lo, int64_t hi) {
      float gb[kBlock], ub[kBlock], dyb[kBlock], dgb[kBlock], dub[kBlock];
      for (int64_t b = lo; b < hi; b += kBlock) {
        const int64_t n = std::min(kBlock, hi - b);
        float* dgo = half ? dgb : dg.data_ptr<float>() + b;
        float* duo = half ? dub : du.data_ptr<float>() + b;
        SwigluGradLoop(RunOf(g, b, n, gb), RunOf(u, b, n, ub), RunOf(dy, b, n, dyb), dgo, duo, n);
        StoreRun(dgo, dg, b, n);
        StoreRun(duo, du, b, n);
      }
    });
    return Refs(a.env(), {dg, du});
  }
  const at::Tensor s = at::sigmoid(g);
  const at::Tensor du = at::mul(dy, at::mul(g, s));
  const at::Tensor dg = at::mul(at::mul(dy, u), at::mul(s, at::add(at::mul(g, at::rsub(s, 1)), 1)));
  return Refs(a.env(), {dg, du});
}

// rope(x [b, h, t, d], cos, sin [b, 1, t, d], backward): x·cos + rot(x)·sin with rot(x1, x2) =
// (−x2, x1); backward applies the transpose, dy·cos + rotᵀ(dy·sin) with rotᵀ(z1, z2) = (z2, −z1).
// Rope on the CPU for x [b, h, t, d] (float32 or bfloat16, each head vector contiguous) and float32
// tables [b, 1, t, d]: one pass over the head vectors, in float32, written in x's dtype (rounded
// once, where ATen's op sequence rounds each product and the sum); undefined when it does not apply.
at::Tensor CpuRope(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin, bool backward) {
  const auto isTable = [&](const at::Tensor& c) {
    return c.device().is_cpu() && c.scalar_type() == at::kFloat && c.is_contiguous() && c.dim() == 4 && c.size(0) == x.size(0) && c.size(1) == 1 &&
           c.size(2) == x.size(2) && c.size(3) == x.size(3);
  };
  const bool dtypeOk = x.scalar_type() == at::kFloat || x.scalar_type() == at::kBFloat16;
  if (!x.device().is_cpu() || !dtypeOk || x.dim() != 4 || x.size(3) % 2 != 0 || x.stride(3) != 1 || !isTable(cos) || !isTable(sin)) return at::Tensor();
  const int64_t B = x.size(0), H = x.size(1), T = x.size(2), D = x.size(3);
  const at::Tensor y = at::empty({B, H, T, D}, x.options());
  const bool half = x.scalar_type() == at::kBFloat16;
  at::parallel_for(0, B * H * T, std::max<int64_t>(1, 16384 / std::max<int64_t>(D, 1)), [&](int64_t lo, int64_t hi) {
    std::vector<float> in(D), out(D);
    for (int64_t r = lo; r < hi; r++) {
      const int64_t b = r / (H * T), h = (r / T) % H, t = r % T;
      const int64_t from = b * x.stride(0) + h * x.stride(1) + t * x.stride(2), pos = (b * T + t) * D;
      const float* xv = half ? in.data() : x.data_ptr<float>() + from;
      if (half) Widen(x.data_ptr<c10::BFloat16>() + from, in.data(), D);
      float* yv = half ? out.data() : y.data_ptr<float>() + r * D;
      RopeVector(xv, cos.data_ptr<float>() + pos, sin.data_ptr<float>() + pos, yv, D / 2, backward);
      if (half) Narrow(out.data(), y.data_ptr<c10::BFloat16>() + r * D, D);
    }
  });
  return y;
}

napi_value Rope(const Args& a) {
  const std::vector<at::Tensor> t = a.Ts({0, 1, 2});
  const at::Tensor fused = CpuRope(t[0], t[1], t[2], a.Bool(3));
  if (fused.defined()) return Ref(a.env(), fused);
  // In x's precision: a bf16 projection's output is rotated in bfloat16, as under torch.autocast.
  const at::Tensor &x = t[0], cos = t[1].to(x.scalar_type()), sin = t[2].to(x.scalar_type());
  const int64_t half = x.size(-1) / 2;
  if (!a.Bool(3)) {
    const at::Tensor rot = at::cat({at::neg(x.narrow(-1, half, half)), x.narrow(-1, 0, half)}, -1);
    return Ref(a.env(), at::add(at::mul(x, cos), at::mul(rot, sin)));
  }
  const at::Tensor z = at::mul(x, sin);
  const at::Tensor rotT = at::cat({z.narrow(-1, half, half), at::neg(z.narrow(-1, 0, half))}, -1);
  return Ref(a.env(), at::add(at::mul(x, cos), rotT));
}

// Whether x is float32, contiguous and on the CPU: the fused loops below read it directly.
bool CpuFloat(const at::Tensor& x) { return x.device().is_cpu() && x.scalar_type() == at::kFloat && x.is_contiguous(); }

// The same for bf16's logits (a product's bfloat16 output, see Matmul): the loops widen a row at a
// time into a float32 buffer that stays in cache, instead of a float32 copy of all the logits.
bool CpuBf16(const at::Tensor& x) { return x.device().is_cpu() && x.scalar_type() == at::kBFloat16 && x.is_contiguous(); }

// Σ exp(row[i] − shift) over a row, in 16 partial sums so that gcc vectorises it.
PBRL_CLONES float SumExp(const float* __restrict row, int64_t n, float shift) {
  float acc[16] = {0};
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    for (int j = 0; j < 16; j++) acc[j] += pbrl_exp::ExpF(row[i + j] - shift);
  float total = 0;
  for (; i < n; i++) total += pbrl_exp::ExpF(row[i] - shift);
  for (float a : acc) total += a;
  return total;
}


// out = −exp(row − lse) · dy over a row.
PBRL_CLONES void NegSoftmaxTimes(const float* __restrict row, float* __restrict out, int64_t n, float lse, float dy) {
  for (int64_t i = 0; i < n; i++) out[i] = -pbrl_exp::ExpF(row[i] - lse) * dy;
}

// logsoftmaxSelect(x [rows, cols], targets [rows]) → [value [rows], lse [rows, 1]]:
// value = x[i, targets[i]] − logsumexp(x[i, :]). On the CPU one pass per row (max, then the sum
// of exps), instead of ATen's logsumexp and its temporaries.
napi_value LogSoftmaxSelect(const Args& a) {
  const std::vector<at::Tensor> in = a.Ts({0, 1});
  const at::Tensor& x = in[0];
  const at::Tensor t = in[1].to(at::kLong);
  if (!CpuFloat(x) && !CpuBf16(x)) {
    const at::Tensor wide = Widened(x);
    const at::Tensor lse = at::logsumexp(wide, 1, true);
    return Refs(a.env(), {at::sub(wide.gather(1, t.unsqueeze(1)), lse).squeeze(1), lse});
  }
  const int64_t rows = x.size(0), cols = x.size(1);
  const auto opts = x.options().dtype(at::kFloat);
  at::Tensor value = at::empty({rows}, opts), lse = at::empty({rows, 1}, opts);
  const int64_t* ts = t.data_ptr<int64_t>();
  float *vs = value.data_ptr<float>(), *ls = lse.data_ptr<float>();
  at::parallel_for(0, rows, 1, [&](int64_t lo, int64_t hi) {
    std::vector<float> buf(cols);
    for (int64_t r = lo; r < hi; r++) {
      const float* row = RunOf(x, r * cols, cols, buf.data());
      const float mx = RowMax(row, cols);
      const float l = std::isinf(mx) ? mx : mx + std::log(SumExp(row, cols, mx));
      ls[r] = l;
      vs[r] = row[ts[r]] - l;
    }
  });
  return Refs(a.env(), {value, lse});
}

// logsoftmaxGrad(x, lse [rows, 1], targets, dy [rows]): dy[i] · (onehot(targets)[i, j] − softmax(x)[i, j]),
// in x's dtype: bfloat16 logits get a bfloat16 gradient, which the vocabulary product takes as it is.
napi_value LogSoftmaxGrad(const Args& a) {
  const std::vector<at::Tensor> in = a.Wides({1, 2, 3});
  const at::Tensor& x = a.T(0);
  const at::Tensor& lse = in[0];
  const at::Tensor t = in[1].to(at::kLong).unsqueeze(1);
  const at::Tensor dy = in[2].reshape({-1, 1}).to(at::kFloat);
  if ((!CpuFloat(x) && !CpuBf16(x)) || !CpuFloat(lse) || !CpuFloat(dy)) {
    const std::vector<at::Tensor> on = Colocate({Widened(x), lse, dy, t});
    at::Tensor out = at::exp(at::sub(on[0], on[1])).mul_(on[2]).neg_();
    out.scatter_add_(1, on[3], on[2]);
    return Ref(a.env(), out);
  }
  const int64_t rows = x.size(0), cols = x.size(1);
  at::Tensor out = at::empty_like(x);
  const float *ls = lse.data_ptr<float>(), *ds = dy.data_ptr<float>();
  const int64_t* ts = t.data_ptr<int64_t>();
  const bool half = x.scalar_type() == at::kBFloat16;
  at::parallel_for(0, rows, 1, [&](int64_t lo, int64_t hi) {
    std::vector<float> buf(cols), grad(half ? cols : 0);
    for (int64_t r = lo; r < hi; r++) {
      float* o = half ? grad.data() : out.data_ptr<float>() + r * cols;
      NegSoftmaxTimes(RunOf(x, r * cols, cols, buf.data()), o, cols, ls[r], ds[r]);
      o[ts[r]] += ds[r];
      if (half) Narrow(o, out.data_ptr<c10::BFloat16>() + r * cols, cols);
    }
  });
  return Ref(a.env(), out);
}

// scatterAddRows(dy [count, cols], indices [count], rows): zeros [rows, cols] with dy's rows added in.
napi_value ScatterAddRows(const Args& a) {
  const std::vector<at::Tensor> t = a.Wides({0, 1});
  const at::Tensor& dy = t[0];
  const at::Tensor idx = t[1].to(at::kLong);
  at::Tensor out = at::zeros({a.Int(2), dy.size(1)}, dy.options());
  out.index_add_(0, idx, dy);
  return Ref(a.env(), out);
}

// Whether `t` may be overwritten: float32, contiguous, on the CPU, and referenced by nothing but
// the addon's table (`extra` counts the caller's own handles) — no other id, view or clone (a
// comparator's frozen copy of an agent shares its weights' storage until one of them changes).
bool Exclusive(const at::Tensor& t, int64_t extra) {
  return t.device().is_cpu() && t.scalar_type() == at::kFloat && t.is_contiguous() && t.use_count() == 1 + extra &&
         t.storage().use_count() == 1;
}

// The AdamW update of elements [lo, hi) from p, g, m, v into po, mo, vo (cloned for AVX-512
// and AVX2 like every hot loop here). `restrict` lets gcc vectorise
// without run-time overlap checks, which fail (and fall back to scalar code) when updating in
// place; so the in-place call passes each array once, as its own output.

struct AdamWScalars {
  float decay, c1, b2, c2, bc2Sqrt, eps, stepSize;
};

static inline void AdamWElement(float p, float g, float m, float v, const AdamWScalars& k, float& po, float& mo, float& vo) {
  mo = m + k.c1 * (g - m);
  vo = k.b2 * v + k.c2 * g * g;
  po = p * k.decay - k.stepSize * (mo / (std::sqrt(vo) / k.bc2Sqrt + k.eps));
}

PBRL_CLONES void AdamWInPlace(float* __restrict p, const float* __restrict g, float* __restrict m, float* __restrict v, int64_t lo, int64_t hi, AdamWScalars k) {
  for (int64_t i = lo; i < hi; i++) AdamWElement(p[i], g[i], m[i], v[i], k, p[i], m[i], v[i]);
}

PBRL_CLONES void AdamWInto(const float* __restrict p, const float* __restrict g, const float* __restrict m, const float* __restrict v, float* __restrict po,
                           float* __restrict mo, float* __restrict vo, int64_t lo, int64_t hi, AdamWScalars k) {
  for (int64_t i = lo; i < hi; i++) AdamWElement(p[i], g[i], m[i], v[i], k, po[i], mo[i], vo[i]);
}

// adamw(p, g, m, v, decay, b1, c1, b2, c2, bc2Sqrt, eps, stepSize, mayOverwrite) → [p', m', v'], as
// torch.optim.AdamW's step: p·decay − stepSize · m' / (√v' / bc2Sqrt + eps), m' = lerp(m, g, c1),
// v' = b2·v + c2·g². On the CPU one pass over the four tensors, in place when nothing else holds
// p, m and v (the usual case: a weight and its moments, replaced by the step's results, which
// JavaScript vouches for with mayOverwrite: no other tfjs tensor has their data ids), so a step
// neither allocates nor first-touches three copies of the model; elsewhere ATen ops. In bf16 the
// pass also writes a matrix's bfloat16 copy, which the next step's products read (Bf16Copy),
// instead of reading the whole model once more to cast it.
napi_value AdamW(const Args& a) {
  const at::Tensor &p = a.T(0), g = a.Wide(1), &m = a.T(2), &v = a.T(3);
  const double decay = a.Num(4), c1 = a.Num(6), b2 = a.Num(7), c2 = a.Num(8), bc2Sqrt = a.Num(9), eps = a.Num(10), stepSize = a.Num(11);
  const bool cpu = p.device().is_cpu() && g.device().is_cpu() && m.device().is_cpu() && v.device().is_cpu();
  if (cpu && g.scalar_type() == at::kFloat && g.is_contiguous() && p.scalar_type() == at::kFloat && m.scalar_type() == at::kFloat && v.scalar_type() == at::kFloat) {
    const bool inPlace = a.Bool(12) && Exclusive(p, 0) && Exclusive(m, 0) && Exclusive(v, 0) && !p.is_same(m) && !p.is_same(v) && !m.is_same(v);
    const at::Tensor p2 = inPlace ? p : at::empty_like(p, at::MemoryFormat::Contiguous);
    const at::Tensor m2 = inPlace ? m : at::empty_like(m, at::MemoryFormat::Contiguous);
    const at::Tensor v2 = inPlace ? v : at::empty_like(v, at::MemoryFormat::Contiguous);
    const at::Tensor pc = p.contiguous(), mc = m.contiguous(), vc = v.contiguous();
    const float *pi = pc.data_ptr<float>(), *gi = g.data_ptr<float>(), *mi = mc.data_ptr<float>(), *vi = vc.data_ptr<float>();
    float *po = p2.data_ptr<float>(), *mo = m2.data_ptr<float>(), *vo = v2.data_ptr<float>();
    const AdamWScalars k{static_cast<float>(decay), static_cast<float>(c1), static_cast<float>(b2), static_cast<float>(c2), static_cast<float>(bc2Sqrt), static_cast<float>(eps), static_cast<float>(stepSize)};
    // In place, p's old copy is stale once p changes: the new one is written over it.
    at::Tensor half = Bf16Compute() && p.dim() >= 2 && inPlace ? Table().TakeBf16(a.Int(0)) : at::Tensor();
    if (Bf16Compute() && p.dim() >= 2 && !half.defined()) half = at::empty(p.sizes(), p.options().dtype(at::kBFloat16));
    c10::BFloat16* ho = half.defined() ? half.data_ptr<c10::BFloat16>() : nullptr;
    at::parallel_for(0, p.numel(), 1 << 14, [&](int64_t lo, int64_t hi) {
      if (inPlace) AdamWInPlace(po, gi, mo, vo, lo, hi, k);
      else AdamWInto(pi, gi, mi, vi, po, mo, vo, lo, hi, k);
      if (ho != nullptr) Narrow(po + lo, ho + lo, hi - lo);  // while the updated elements are in cache
    });
    napi_value out;
    napi_create_array_with_length(a.env(), 3, &out);
    napi_set_element(a.env(), out, 0, Ref(a.env(), p2, half));
    napi_set_element(a.env(), out, 1, Ref(a.env(), m2));
    napi_set_element(a.env(), out, 2, Ref(a.env(), v2));
    return out;
  }
  const std::vector<at::Tensor> t = Colocate({p, g, m, v});
  const at::Tensor m2 = at::lerp(t[2], t[1], c1);
  const at::Tensor v2 = at::addcmul(at::mul(t[3], b2), t[1], t[1], c2);
  const at::Tensor denom = at::div(at::sqrt(v2), bc2Sqrt).add_(eps);
  const at::Tensor p2 = at::addcdiv(decay == 1 ? t[0] : at::mul(t[0], decay), m2, denom, -stepSize);
  return Refs(a.env(), {p2, m2, v2});
}

}  // namespace

void RegisterFused(napi_env env, napi_value exports) {
  Export(env, exports, "rmsnorm", RmsNorm);
  Export(env, exports, "rmsnormGrad", RmsNormGrad);
  Export(env, exports, "swiglu", Swiglu);
  Export(env, exports, "swigluGrad", SwigluGrad);
  Export(env, exports, "rope", Rope);
  Export(env, exports, "logsoftmaxSelect", LogSoftmaxSelect);
  Export(env, exports, "logsoftmaxGrad", LogSoftmaxGrad);
  Export(env, exports, "scatterAddRows", ScatterAddRows);
  Export(env, exports, "adamw", AdamW);
}

}  // namespace pbrl
