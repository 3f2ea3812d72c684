// Tensors in and out of JavaScript, threads, devices and what the addon was built against.
#include <ATen/Parallel.h>
#include <ATen/Context.h>
#include <torch/version.h>

#include <cstring>

#include "common.h"

namespace pbrl {
namespace {

at::ScalarType FromTypedArray(napi_typedarray_type type) {
  switch (type) {
    case napi_float32_array:
      return at::kFloat;
    case napi_int32_array:
      return at::kInt;
    case napi_uint8_array:
      return at::kBool;
    default:
      throw ArgError("values must be a Float32Array, Int32Array or Uint8Array");
  }
}

at::Device ParseDevice(const std::string& s) {
  try {
    return at::Device(s);
  } catch (const c10::Error&) {
    throw ArgError("unknown device \"" + s + "\" (expected cpu, cuda or cuda:N)");
  }
}

void CheckDevice(const at::Device& d) {
  if (d.is_cuda()) {
    if (!at::hasCUDA()) throw ArgError("device " + d.str() + ": this libtorch has no CUDA support (a CPU build)");
    const int n = static_cast<int>(at::getNumGPUs());
    if (d.has_index() && d.index() >= n) throw ArgError("device " + d.str() + ": only " + std::to_string(n) + " CUDA device(s) visible");
  } else if (!d.is_cpu()) {
    throw ArgError("device " + d.str() + " is not supported (cpu or cuda)");
  }
}

// write(values, shape, dtype): a new tensor on the default device holding a copy of values.
napi_value Write(const Args& a) {
  napi_typedarray_type type;
  size_t n;
  void* data = a.Typed(0, &type, &n);
  const std::vector<int64_t> shape = a.Ints(1);
  const at::ScalarType want = ScalarTypeOf(a.Int(2));
  int64_t count = 1;
  for (int64_t d : shape) count *= d;
  if (static_cast<size_t>(count) != n) throw ArgError("write: " + std::to_string(n) + " values for shape of " + std::to_string(count));
  at::Tensor host = at::from_blob(data, shape, at::TensorOptions().dtype(FromTypedArray(type))).clone();
  if (host.scalar_type() != want) host = host.to(want);
  return Ref(a.env(), DefaultDevice().is_cpu() ? host : host.to(DefaultDevice()));
}

// read(id): the values as a Float32Array / Int32Array / Uint8Array (bool) copy.
napi_value Read(const Args& a) {
  at::Tensor t = a.T(0).to(at::kCPU).contiguous();
  if (t.scalar_type() == at::kBFloat16) t = t.to(at::kFloat);
  napi_typedarray_type type;
  switch (t.scalar_type()) {
    case at::kFloat:
      type = napi_float32_array;
      break;
    case at::kInt:
      type = napi_int32_array;
      break;
    case at::kBool:
      type = napi_uint8_array;
      break;
    default:
      t = AsTfjsDtype(t);
      type = t.scalar_type() == at::kInt ? napi_int32_array : napi_float32_array;
  }
  const size_t bytes = t.numel() * t.element_size();
  void* out = nullptr;
  napi_value buffer, array;
  napi_create_arraybuffer(a.env(), bytes, &out, &buffer);
  if (bytes > 0) std::memcpy(out, t.data_ptr(), bytes);
  napi_create_typedarray(a.env(), type, t.numel(), buffer, 0, &array);
  return array;
}

napi_value Free(const Args& a) {
  Table().Free(a.Int(0));
  return Undefined(a.env());
}

// share(id): a second id for the same tensor (tfjs's Identity; no copy, tensors are never mutated).
napi_value Share(const Args& a) { return Ref(a.env(), a.T(0), Table().Bf16If(a.Int(0))); }

napi_value Live(const Args& a) {
  napi_value v;
  napi_create_double(a.env(), static_cast<double>(Table().Live()), &v);
  return v;
}

// init(threads): ATen's intra-op threads (process-wide), then info().
napi_value Info(const Args& a);
napi_value Init(const Args& a) {
  const int64_t threads = a.Int(0);
  if (threads >= 1 && at::get_num_threads() != threads) at::set_num_threads(static_cast<int>(threads));
  return Info(a);
}

napi_value ReleaseCache(const Args& a) {
  napi_value v;
  napi_create_double(a.env(), static_cast<double>(ReleaseCpuCache()) / (1 << 20), &v);
  return v;
}

napi_value Info(const Args& a) {
  napi_env env = a.env();
  napi_value obj, v;
  napi_create_object(env, &obj);
  napi_create_string_utf8(env, TORCH_VERSION, NAPI_AUTO_LENGTH, &v);
  napi_set_named_property(env, obj, "torchVersion", v);
  napi_create_int32(env, at::get_num_threads(), &v);
  napi_set_named_property(env, obj, "threads", v);
  napi_get_boolean(env, at::hasCUDA(), &v);
  napi_set_named_property(env, obj, "cuda", v);
  napi_create_int32(env, at::hasCUDA() ? static_cast<int>(at::getNumGPUs()) : 0, &v);
  napi_set_named_property(env, obj, "cudaDevices", v);
  napi_get_boolean(env, at::hasMKL(), &v);
  napi_set_named_property(env, obj, "mkl", v);
  napi_get_boolean(env, at::hasMKLDNN(), &v);
  napi_set_named_property(env, obj, "mkldnn", v);
  napi_create_double(env, static_cast<double>(CpuCacheBytes()) / (1 << 20), &v);
  napi_set_named_property(env, obj, "cpuCacheMB", v);
#ifdef _OPENMP
  napi_get_boolean(env, true, &v);
#else
  napi_get_boolean(env, false, &v);
#endif
  napi_set_named_property(env, obj, "openmp", v);
  napi_get_boolean(env, AT_PARALLEL_OPENMP == 1, &v);
  napi_set_named_property(env, obj, "atenOpenmp", v);
  napi_create_double(env, static_cast<double>(Table().Bf16Casts()), &v);
  napi_set_named_property(env, obj, "bf16Casts", v);
  const std::string cpu = at::get_cpu_capability();
  napi_create_string_utf8(env, cpu.c_str(), cpu.size(), &v);
  napi_set_named_property(env, obj, "cpuCapability", v);
  return obj;
}

// setDevice(name): where tensors made from host values go; checked against what is available.
napi_value SetDevice(const Args& a) {
  const at::Device d = ParseDevice(a.Str(0));
  CheckDevice(d);
  DefaultDevice() = d;
  return Undefined(a.env());
}

napi_value GetDefaultDevice(const Args& a) {
  const std::string s = DefaultDevice().str();
  napi_value v;
  napi_create_string_utf8(a.env(), s.c_str(), s.size(), &v);
  return v;
}

napi_value CheckDeviceName(const Args& a) {
  CheckDevice(ParseDevice(a.Str(0)));
  return Undefined(a.env());
}

napi_value DeviceOf(const Args& a) {
  const std::string s = a.T(0).device().str();
  napi_value v;
  napi_create_string_utf8(a.env(), s.c_str(), s.size(), &v);
  return v;
}

// to(id, device): a copy on another device (the same tensor when it is there already).
napi_value To(const Args& a) {
  const at::Device d = ParseDevice(a.Str(1));
  CheckDevice(d);
  return Ref(a.env(), a.T(0).to(d));
}

napi_value SetBf16(const Args& a) {
  Bf16Compute() = a.Bool(0);
  return Undefined(a.env());
}

napi_value GetBf16(const Args& a) {
  napi_value v;
  napi_get_boolean(a.env(), Bf16Compute(), &v);
  return v;
}

// setBf16Gemm("auto" | "bfloat16" | "float32"): how bf16 products run on the CPU (common.h Bf16Gemm);
// process-wide. bf16Gemm() → what they run as now: "bfloat16" or "float32".
napi_value SetBf16Gemm(const Args& a) {
  const std::string mode = a.Str(0);
  if (mode == "auto") Bf16GemmChoice() = Bf16GemmMode::kAuto;
  else if (mode == "bfloat16") Bf16GemmChoice() = Bf16GemmMode::kBf16;
  else if (mode == "float32") Bf16GemmChoice() = Bf16GemmMode::kFloat32;
  else throw ArgError("setBf16Gemm: mode must be auto, bfloat16 or float32, got " + mode);
  return Undefined(a.env());
}

napi_value GetBf16Gemm(const Args& a) {
  const std::string s = Bf16Gemm(at::empty({0})) ? "bfloat16" : "float32";
  napi_value v;
  napi_create_string_utf8(a.env(), s.c_str(), s.size(), &v);
  return v;
}

// makeBf16Copies(ids): the bfloat16 copies bf16 products read (TensorTable::Bf16Copy), made now
// for the float32 matrices among ids (see makeBf16Copies in core-tensor/src/precision.ts).
napi_value MakeBf16Copies(const Args& a) {
  for (int64_t id : a.Ints(0)) {
    const at::Tensor& t = Table().Get(id);
    if (t.scalar_type() == at::kFloat && t.dim() >= 2) Table().Bf16Copy(id);
  }
  return Undefined(a.env());
}

// storeBf16(ids): keeps only the bfloat16 copies of the float32 matrices among ids (TensorTable::StoreBf16); → the float32 bytes freed.
// What is freed goes back to the system as it goes (every 64 MB), not into the caches: kept there,
// the float32 base and its growing bfloat16 copy were resident together (a Qwen2.5-1.5B-shaped
// base: 8.2 GB peak RSS where the float32 weights alone are 6.2 GB).
napi_value StoreBf16(const Args& a) {
  int64_t freed = 0, pending = 0;
  for (int64_t id : a.Ints(0)) {
    const int64_t bytes = Table().StoreBf16(id);
    freed += bytes;
    pending += bytes;
    if (pending >= (int64_t{64} << 20)) {
      ReleaseCpuCache();
      pending = 0;
    }
  }
  if (pending > 0) ReleaseCpuCache();
  napi_value v;
  napi_create_double(a.env(), static_cast<double>(freed), &v);
  return v;
}

}  // namespace

void RegisterCore(napi_env env, napi_value exports) {
  Export(env, exports, "init", Init);
  Export(env, exports, "info", Info);
  Export(env, exports, "releaseCpuCache", ReleaseCache);
  Export(env, exports, "write", Write);
  Export(env, exports, "read", Read);
  Export(env, exports, "free", Free);
  Export(env, exports, "share", Share);
  Export(env, exports, "live", Live);
  Export(env, exports, "setDevice", SetDevice);
  Export(env, exports, "checkDevice", CheckDeviceName);
  Export(env, exports, "defaultDevice", GetDefaultDevice);
  Export(env, exports, "deviceOf", DeviceOf);
  Export(env, exports, "to", To);
  Export(env, exports, "setBf16", SetBf16);
  Export(env, exports, "bf16", GetBf16);
  Export(env, exports, "setBf16Gemm", SetBf16Gemm);
  Export(env, exports, "bf16Gemm", GetBf16Gemm);
  Export(env, exports, "makeBf16Copies", MakeBf16Copies);
  Export(env, exports, "storeBf16", StoreBf16);
}

}  // namespace pbrl

NAPI_MODULE_INIT() {
  pbrl::InstallCpuAllocator();
  pbrl::RegisterCore(env, exports);
  pbrl::RegisterElementwise(env, exports);
  pbrl::RegisterShape(env, exports);
  pbrl::RegisterReduce(env, exports);
  pbrl::RegisterLinalg(env, exports);
  pbrl::RegisterFused(env, exports);
  pbrl::RegisterAttention(env, exports);
  pbrl::RegisterSampling(env, exports);
  pbrl::RegisterLora(env, exports);
  pbrl::RegisterDecode(env, exports);
  pbrl::RegisterBlas(env, exports);
  pbrl::RegisterDistributed(env, exports);
  return exports;
}
