// Shared pieces of pbrl's libtorch addon: the table of tensors JavaScript holds by id, argument
// reading, dtype and device conversions, and the wrapper that turns C++ exceptions (ATen's
// c10::Error included) into JavaScript errors.
//
// Every tensor lives in ATen (CPU or CUDA memory, 64-bit sizes); JavaScript holds small integer
// ids. Each JavaScript thread (the main thread, each agent worker) has a table of its own, as each
// has its own TensorFlow.js engine, so no id is ever shared between threads.
#pragma once
#ifndef NAPI_VERSION
#define NAPI_VERSION 8
#endif
#include <ATen/ATen.h>
#include <node_api.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace pbrl {

// Thrown for bad arguments from JavaScript; becomes a JavaScript Error with this message.
struct ArgError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class TensorTable {
 public:
  // Stores t (with its bfloat16 copy, when the caller made one already).
  uint32_t Put(at::Tensor t, at::Tensor bf16 = at::Tensor());
  const at::Tensor& Get(int64_t id) const;
  void Free(int64_t id);
  size_t Live() const { return slots_.size() - free_.size(); }
  // A bfloat16 copy of tensor `id`, made on first use and kept until the id is freed: a weight is
  // cast once per training step (its id changes with every update) instead of at every product,
  // an activation once for all the products it meets.
  const at::Tensor& Bf16Copy(int64_t id);
  // Tensor `id`'s bfloat16 copy, handed over (the id keeps none) when nothing else holds it, for a
  // kernel that overwrites the tensor in place to write the new copy into; else undefined.
  at::Tensor TakeBf16(int64_t id);
  // Tensor `id`'s bfloat16 copy if it has one (else undefined): a tensor that shares id's data
  // under another id (tfjs's clone of a tensor saved for the backward pass, a reshape) shares it.
  const at::Tensor& Bf16If(int64_t id) const;
  // Keeps only tensor `id`'s bfloat16 copy, as the tensor itself (a float32 matrix; others are left):
  // for weights that never change and that bf16 products read as bfloat16 anyway (a LoRA run's
  // frozen base). Products take it as it is, other kernels widen it. Returns the float32 bytes
  // that nothing else holds, freed by this.
  int64_t StoreBf16(int64_t id);
  // How many copies Bf16Copy has made.
  uint64_t Bf16Casts() const { return casts_; }

 private:
  std::vector<at::Tensor> slots_;
  std::vector<at::Tensor> bf16_;
  std::vector<uint32_t> free_;
  uint64_t casts_ = 0;
};

TensorTable& Table();

// The device new tensors go to (tensors made from host values, fills, ranges), per JS thread.
at::Device& DefaultDevice();

// Whether matrix products and attention compute in bfloat16 (float32 inputs and outputs), per JS thread.
bool& Bf16Compute();

// Whether bf16 products of tensors on t's device run as bfloat16 GEMMs: on CUDA, and on CPUs with
// AVX512-BF16 or AMX-BF16 (common.cc). Elsewhere ATen's CPU bfloat16 GEMM has no vector kernel (torch.mm
// 1.1 vs 95.8 GFLOPS float32 on an AMD Zen 3), and Matmul computes them in float32 (linalg.cc).
bool Bf16Gemm(const at::Tensor& t);
// What "auto" resolves to on this CPU, or the choice setBf16Gemm forced (tests use both paths on any CPU).
enum class Bf16GemmMode { kAuto, kBf16, kFloat32 };
Bf16GemmMode& Bf16GemmChoice();
bool CpuHasBf16Gemm();

// tfjs dtypes as the addon numbers them: 0 float32, 1 int32, 2 bool.
at::ScalarType ScalarTypeOf(int64_t code);
int DtypeCode(at::ScalarType t);
// A tensor as tfjs may hold it: float32, int32 or bool (others are cast: int64 → int32, float64/16 → float32).
at::Tensor AsTfjsDtype(const at::Tensor& t);

// t as float32 when it is bfloat16, else t itself.
inline at::Tensor Widened(const at::Tensor& t) { return t.scalar_type() == at::kBFloat16 ? t.to(at::kFloat) : t; }

class Args {
 public:
  Args(napi_env env, napi_callback_info info);
  napi_env env() const { return env_; }
  size_t size() const { return argc_; }
  napi_value Raw(size_t i) const;
  double Num(size_t i) const;
  int64_t Int(size_t i) const;
  bool Bool(size_t i) const;
  std::string Str(size_t i) const;
  bool IsNullish(size_t i) const;
  // The tensor of the id at argument i.
  const at::Tensor& T(size_t i) const { return Table().Get(Int(i)); }
  // The same, a bfloat16 activation (see Matmul) widened to float32: for kernels that compute in
  // float32 as tfjs's do (elementwise ops, reductions, the loss, the optimizer).
  at::Tensor Wide(size_t i) const { return Widened(T(i)); }
  // The tensors at several arguments, on one device (see Colocate); Wides widens them as Wide does.
  std::vector<at::Tensor> Ts(std::initializer_list<size_t> indices) const;
  std::vector<at::Tensor> Wides(std::initializer_list<size_t> indices) const;
  std::vector<int64_t> Ints(size_t i) const;      // a JS array of numbers, or an Int32Array
  std::vector<at::Tensor> Tensors(size_t i) const;  // a JS array of ids
  // Float32Array / Int32Array / Uint8Array contents.
  void* Typed(size_t i, napi_typedarray_type* type, size_t* length) const;

 private:
  napi_env env_;
  size_t argc_ = 24;
  napi_value argv_[24];
};

// The inputs of one op on one device: CPU tensors join the first input that lives elsewhere (a
// model on CUDA meets token ids, masks and rotary tables made on the host).
std::vector<at::Tensor> Colocate(std::vector<at::Tensor> ts);

// The reference JavaScript gets for a new tensor: [id, dtype code, ...shape]; bf16 is its
// bfloat16 copy (see TensorTable::Bf16Copy) when the kernel wrote one.
napi_value Ref(napi_env env, at::Tensor t, at::Tensor bf16 = at::Tensor());
// Several tensors: an array of refs, with the bfloat16 copies the kernel wrote (bf16[i] for ts[i]; none when undefined or absent).
napi_value Refs(napi_env env, const std::vector<at::Tensor>& ts, const std::vector<at::Tensor>& bf16 = {});
napi_value Undefined(napi_env env);

using Fn = napi_value (*)(const Args&);

// Runs fn, turning any exception into a thrown JavaScript error ("pbrl_libtorch: <name>: <message>").
napi_value Call(napi_env env, napi_callback_info info, const char* name, Fn fn);

// Defines exports[name] = a function that runs fn through Call.
void Export(napi_env env, napi_value exports, const char* name, Fn fn);

// Hot loops get AVX-512 and AVX2 clones next to the baseline one; the loader picks what the CPU runs.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define PBRL_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define PBRL_CLONES
#endif

// Float32 runs of float32 or bfloat16 CPU tensors, for pbrl's own loops (fused.cc, attention.cc),
// which compute in float32 and round a bfloat16 result once.
void Widen(const c10::BFloat16* x, float* y, int64_t n);
void Narrow(const float* x, c10::BFloat16* y, int64_t n);
// Elements [lo, lo + n) of a contiguous float32 or bfloat16 tensor as float32: in place, or widened into buf.
const float* RunOf(const at::Tensor& x, int64_t lo, int64_t n, float* buf);
// Writes a float32 run into a float32 or bfloat16 tensor at lo (a float32 run already in place is left).
void StoreRun(const float* run, const at::Tensor& out, int64_t lo, int64_t n);
// The largest of n floats (−inf when n = 0; a NaN may be skipped).
float RowMax(const float* row, int64_t n);
// Σ a[i]·b[i] in 16 lanes, which gcc vectorises (one running sum it keeps scalar).
float Dot(const float* a, const float* b, int64_t n);
// One row of RMSNorm, y = w ⊙ x · r with r = 1/√(mean(x²) + eps), in float32; returns r.
float RmsNormRow(const float* x, const float* w, float* y, int64_t cols, float eps);
// y = g·σ(g) ⊙ u over n floats.
void SwigluLoop(const float* g, const float* u, float* y, int64_t n);
// Rotary embedding of one head vector of 2·half floats (its transpose when backward); y must not alias x.
void RopeVector(const float* x, const float* c, const float* s, float* y, int64_t half, bool backward);

// The kernel families, each in its own file.
void RegisterCore(napi_env env, napi_value exports);
void RegisterElementwise(napi_env env, napi_value exports);
void RegisterShape(napi_env env, napi_value exports);
void RegisterReduce(napi_env env, napi_value exports);
void RegisterLinalg(napi_env env, napi_value exports);
void RegisterFused(napi_env env, napi_value exports);
void RegisterAttention(napi_env env, napi_value exports);
void RegisterSampling(napi_env env, napi_value exports);
void RegisterLora(napi_env env, napi_value exports);
void RegisterDecode(napi_env env, napi_value exports);
void RegisterBlas(napi_env env, napi_value exports);
void RegisterDistributed(napi_env env, napi_value exports);

// The caching allocator for large CPU tensors (allocator.cc), installed once per process.
void InstallCpuAllocator();
size_t CpuCacheBytes();
// Gives the allocator's cached blocks and glibc's free heap pages back to the system; returns the cached bytes released.
size_t ReleaseCpuCache();

// Matrix product of float tensors honouring Bf16Compute(): bfloat16 inside, float32 out unless
// halfOut (then bfloat16, for consumers that compute in bfloat16 anyway).
at::Tensor Matmul(const at::Tensor& a, const at::Tensor& b, bool halfOut = false);
// The product of a and b rounded to bfloat16 (float32 operands are), as a bfloat16 GEMM computes it:
// by ATen's where Bf16Gemm, else in float32 over the widened operands; bfloat16 out where halfOut,
// else float32 (of bfloat16 values).
at::Tensor Bf16Product(const at::Tensor& a, const at::Tensor& b, bool halfOut);
// The tensor at argument i as an operand of Matmul: under Bf16Compute() a float32 tensor's cached
// bfloat16 copy (TensorTable::Bf16Copy), else the tensor (linalg.cc).
at::Tensor Operand(const Args& a, size_t i);
// at::matmul, or OpenBLAS's sgemm for two 2-D float32 CPU tensors when chosen (blas.cc).
at::Tensor CpuFloatMatmul(const at::Tensor& a, const at::Tensor& b);

}  // namespace pbrl
