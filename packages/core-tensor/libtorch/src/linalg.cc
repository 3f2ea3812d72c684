// Matrix products: tfjs's BatchMatMul and _FusedMatMul (bias and activation) through ATen's
// matmul (MKL / oneDNN on CPU, cuBLAS on CUDA) or, for float32 on the CPU where chosen, OpenBLAS
// (blas.cc); transposed operands are strided views, never copies.
#include <ATen/Parallel.h>

#include "common.h"

namespace pbrl {

namespace {

// The float32 result of a product of bfloat16 matrices. ATen's CPU product writes bfloat16; a large
// result (the vocabulary-sized weight gradient of a tied embedding, 28M elements for SmolLM2) is
// made a block of rows at a time and each block widened while it is in cache, instead of writing
// the whole bfloat16 result to memory and reading it back.
at::Tensor WideProduct(const at::Tensor& x, const at::Tensor& w) {
  const int64_t m = x.dim() == 2 && w.dim() == 2 && x.device().is_cpu() ? x.size(0) : 0, n = w.size(-1);
  if (m * n < (int64_t{1} << 22)) return at::matmul(x, w).to(at::kFloat);
  at::Tensor out = at::empty({m, n}, x.options().dtype(at::kFloat));
  const int64_t rows = std::max<int64_t>(256, (int64_t{1} << 20) / n);
  for (int64_t r = 0; r < m; r += rows) {
    const int64_t end = std::min(m, r + rows);
    out.slice(0, r, end).copy_(at::mm(x.slice(0, r, end), w));
  }
  return out;
}

// y's values rounded to bfloat16, in place: a bfloat16 GEMM's result as float32.
PBRL_CLONES void RoundToBf16(float* __restrict y, int64_t n) {
  for (int64_t i = 0; i < n; i++) y[i] = static_cast<float>(c10::BFloat16(y[i]));
}

// y (a fresh float32 product) as a bfloat16 GEMM writes it: bfloat16 where halfOut, else float32 of
// bfloat16 values.
at::Tensor AsBf16Result(at::Tensor y, bool halfOut) {
  if (halfOut) return y.to(at::kBFloat16);
  y = y.contiguous();
  float* p = y.data_ptr<float>();
  at::parallel_for(0, y.numel(), 1 << 16, [&](int64_t lo, int64_t hi) { RoundToBf16(p + lo, hi - lo); });
  return y;
}

// A bf16 product on a CPU without bfloat16 GEMM instructions (Bf16Gemm): the bfloat16 operands
// widened to float32 (exactly), multiplied by the float32 GEMM and the result rounded to bfloat16,
// the values of a bfloat16 GEMM (which also sums in float32) at float32's speed. A large bfloat16
// weight (a vocabulary-sized embedding) is widened a block of columns at a time, so that its float32
// copy is never whole in memory.
at::Tensor WidenedProduct(const at::Tensor& x, const at::Tensor& w, bool halfOut) {
  const at::Tensor xf = Widened(x);
  if (w.dim() != 2 || xf.dim() != 2 || w.scalar_type() != at::kBFloat16 || w.numel() <= (int64_t{1} << 24)) {
    return AsBf16Result(CpuFloatMatmul(xf, Widened(w)), halfOut);
  }
  const int64_t n = w.size(1), cols = std::max<int64_t>(256, (int64_t{1} << 22) / w.size(0));
  at::Tensor out = at::empty({xf.size(0), n}, xf.options().dtype(halfOut ? at::kBFloat16 : at::kFloat));
  for (int64_t c = 0; c < n; c += cols) {
    const int64_t end = std::min(n, c + cols);
    out.slice(1, c, end).copy_(AsBf16Result(CpuFloatMatmul(xf, w.slice(1, c, end).to(at::kFloat)), halfOut));
  }
  return out;
}

}  // namespace

at::Tensor Bf16Product(const at::Tensor& a, const at::Tensor& b, bool halfOut) {
  const at::Tensor x = a.scalar_type() == at::kBFloat16 ? a : a.to(at::kBFloat16), w = b.scalar_type() == at::kBFloat16 ? b : b.to(at::kBFloat16);
  if (!Bf16Gemm(x)) return WidenedProduct(x, w, halfOut);
  return halfOut ? at::matmul(x, w) : WideProduct(x, w);
}

at::Tensor Matmul(const at::Tensor& a, const at::Tensor& b, bool halfOut) {
  const auto half = [](const at::Tensor& t) { return t.scalar_type() == at::kBFloat16; };
  if (Bf16Compute() && (a.scalar_type() == at::kFloat || half(a)) && (b.scalar_type() == at::kFloat || half(b))) return Bf16Product(a, b, halfOut);
  return CpuFloatMatmul(half(a) ? a.to(at::kFloat) : a, half(b) ? b.to(at::kFloat) : b);
}

// An operand of a bf16 product: its bfloat16 copy, made once per tensor and kept while the tensor
// lives. A weight meets several products in a step, and so does an activation: the input of the
// q, k and v projections, a layer's input again in the backward pass, an output gradient in both
// of its products.
at::Tensor Operand(const Args& a, size_t i) {
  const at::Tensor& t = a.T(i);
  return Bf16Compute() && t.scalar_type() == at::kFloat ? Table().Bf16Copy(a.Int(i)) : t;
}

namespace {

at::Tensor Activate(const at::Tensor& y, const std::string& activation, double alpha, const at::Tensor* prelu) {
  if (activation == "linear" || activation.empty()) return y;
  if (activation == "relu") return at::relu(y);
  if (activation == "relu6") return at::clamp(y, 0, 6);
  if (activation == "elu") return at::elu(y);
  if (activation == "sigmoid") return at::sigmoid(y);
  if (activation == "leakyrelu") return at::where(at::ge(y, 0), y, at::mul(y, alpha));
  if (activation == "prelu" && prelu != nullptr) return at::where(at::gt(y, 0), y, at::mul(y, *prelu));
  throw ArgError("fused matmul: unsupported activation " + activation);
}

// matmul(a, b, transposeA, transposeB, bias | null, activation, alpha, prelu weights | null,
// weightA, weightB): batch axes broadcast. In bf16, a product with a weight operand (a linear
// layer's output, or its input gradient) stays bfloat16, as under torch.autocast: attention, the
// MLP's activation and other products take it as it is (elementwise ops widen it), and no float32
// copy is written and read back. A weight gradient (no weight operand) is float32, the
// optimizer's dtype (its values rounded to bfloat16, as torch.autocast's are).
napi_value MatMul(const Args& a) {
  const bool weightA = a.size() > 8 && a.Bool(8), weightB = a.size() > 9 && a.Bool(9);
  std::vector<at::Tensor> t = {Operand(a, 0), Operand(a, 1)};
  const bool bias = !a.IsNullish(4), prelu = a.size() > 7 && !a.IsNullish(7);
  if (bias) t.push_back(a.T(4));
  if (prelu) t.push_back(a.T(7));
  t = Colocate(std::move(t));
  const at::Tensor x = a.Bool(2) ? t[0].transpose(-1, -2) : t[0];
  const at::Tensor w = a.Bool(3) ? t[1].transpose(-1, -2) : t[1];
  at::Tensor y = Matmul(x, w, weightA || weightB);
  if (bias) y = at::add(y, t[2]);
  if (a.size() <= 5) return Ref(a.env(), y);
  return Ref(a.env(), Activate(y, a.Str(5), a.Num(6), prelu ? &t.back() : nullptr));
}

}  // namespace

void RegisterLinalg(napi_env env, napi_value exports) { Export(env, exports, "matmul", MatMul); }

}  // namespace pbrl
