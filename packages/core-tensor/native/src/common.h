// pbrl_native: the heavy kernels of pbrl's `native` tfjs backend, as a plain N-API addon.
//
// Every kernel works in place on the tfjs wasm backend's heap: JavaScript passes the heap's
// ArrayBuffer (re-read on every call, since the heap can grow) and byte offsets of the inputs and
// of the output it has already allocated there, so no tensor is ever copied. Matrix products go
// to OpenBLAS sgemm (which threads itself); the other kernels are simple loops, split over a small
// thread pool for large tensors. Every offset and size is checked against the heap's length, so a
// bug on the JavaScript side throws instead of corrupting memory.
//
// This header holds what every kernel family's file shares: the one argument reader, the heap's
// bounds checks and the export of entry points. module.cc registers every family.
#pragma once
#ifndef NAPI_VERSION
#define NAPI_VERSION 8
#endif
#include <node_api.h>

#include <cstdint>
#include <string>

#include "pool.h"

// Hot loops get AVX-512 and AVX2+FMA clones next to the baseline one, picked at load time, so the
// addon stays correct on any x86-64 machine it is copied to and fast on the one it was built on.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define PBRL_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define PBRL_CLONES
#endif

namespace pbrl_native {

// Elements of an elementwise loop worth a pool thread of their own.
static const int64_t kElementwiseGrain = 1 << 15;

// N-API argument helpers. Each throws a JavaScript error and returns false on a bad argument.
struct Args {
  napi_env env;
  size_t argc = 24;
  napi_value argv[24];
  bool ok = true;

  Args(napi_env e, napi_callback_info info);
  void Fail(const std::string& msg);
  napi_value Arg(size_t i);
  int64_t Int(size_t i);
  double Num(size_t i);
  bool Bool(size_t i);
  // The heap: an ArrayBuffer (the wasm memory's buffer).
  uint8_t* Heap(size_t i, size_t* length);
  // A typed array of the given type (length in elements).
  void* Typed(size_t i, napi_typedarray_type want, size_t* length, const char* what);
  // An Int32Array argument, or null/undefined (returns nullptr, *length = 0).
  const int32_t* Int32s(size_t i, size_t* length);
};

// The arguments of a kernel that works on the wasm heap, which is its argument 0.
struct HeapArgs : Args {
  uint8_t* heap = nullptr;
  size_t len = 0;

  HeapArgs(napi_env e, napi_callback_info info);
  // A typed pointer into the heap after checking that [offset, offset + count * sizeof(T)) lies
  // inside it and is aligned.
  template <typename T>
  T* At(int64_t offset, int64_t count, const char* what) {
    if (!ok) return nullptr;
    if (offset < 0 || count < 0 || static_cast<uint64_t>(offset) + static_cast<uint64_t>(count) * sizeof(T) > len ||
        offset % alignof(T) != 0) {
      Fail(std::string(what) + ": offset " + std::to_string(offset) + " + " + std::to_string(count) +
           " elements outside the heap of " + std::to_string(len) + " bytes");
      return nullptr;
    }
    return reinterpret_cast<T*>(heap + offset);
  }
  // The same at the offset in argument i.
  template <typename T>
  T* Ptr(size_t i, int64_t count, const char* what) {
    return At<T>(Int(i), count, what);
  }
};

// Whether every idx[i] lies in [0, limit); otherwise throws "<what>: index i outside [0, limit)".
bool IndicesInRange(Args& a, const int32_t* idx, int64_t count, int64_t limit, const char* what);

napi_value Undefined(napi_env env);

// Defines exports[name] = fn with napi_default attributes (read-only, not enumerable), as every
// entry point has always been defined.
void Export(napi_env env, napi_value exports, const char* name, napi_callback fn);

// The kernel families, each in its own file.
void RegisterBlasInfo(napi_env env, napi_value exports);
void RegisterMatMul(napi_env env, napi_value exports);
void RegisterShape(napi_env env, napi_value exports);
void RegisterElementwise(napi_env env, napi_value exports);
void RegisterReduce(napi_env env, napi_value exports);
void RegisterLogSoftmax(napi_env env, napi_value exports);
void RegisterLayers(napi_env env, napi_value exports);
void RegisterAttention(napi_env env, napi_value exports);
void RegisterDecode(napi_env env, napi_value exports);
void RegisterSampling(napi_env env, napi_value exports);
void RegisterAdamW(napi_env env, napi_value exports);

}  // namespace pbrl_native
