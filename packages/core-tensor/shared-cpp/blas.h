// OpenBLAS as pbrl's addons use it (native/src, libtorch/src/linalg.cc): the few
// entry points, declared here so that no cblas.h (whose location differs between distributions)
// is needed, and the choice of its kernel family from the CPU's instruction sets.
//
// OpenBLAS (a DYNAMIC_ARCH build, as distributions ship it) picks its kernels once, when it loads,
// from a table of CPU models, and falls back to its oldest (Prescott) on a model it does not know,
// such as a VM reporting a generic one; pbrl reads the instruction sets instead
// (core-tensor/src/blas-kernels.ts decides, with what these functions report).
#pragma once
#include <strings.h>

#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#endif

// LP64 OpenBLAS: int indices.
extern "C" {
void cblas_sgemm(int order, int transA, int transB, int M, int N, int K, float alpha, const float* A, int lda,
                 const float* B, int ldb, float beta, float* C, int ldc);
void cblas_sgemv(int order, int trans, int M, int N, float alpha, const float* A, int lda, const float* x, int incx,
                 float beta, float* y, int incy);
void openblas_set_num_threads(int n);
int openblas_get_num_threads(void);
char* openblas_get_config(void);
char* openblas_get_corename(void);
// These re-run the kernel choice of a DYNAMIC_ARCH OpenBLAS. Weak: another OpenBLAS build lacks
// them, and then the kernels stay as loaded.
void gotoblas_dynamic_init(void) __attribute__((weak));
void gotoblas_dynamic_quit(void) __attribute__((weak));
// The kernel tables pbrl may switch to, also weak: null where this OpenBLAS has no such core.
extern char gotoblas_SANDYBRIDGE __attribute__((weak));
extern char gotoblas_HASWELL __attribute__((weak));
extern char gotoblas_SKYLAKEX __attribute__((weak));
extern char gotoblas_COOPERLAKE __attribute__((weak));
}

namespace pbrl_blas {

constexpr int kRowMajor = 101, kNoTrans = 111, kTrans = 112;

// The x86 instruction sets this process may use: each true only when both the CPU and the
// operating system (XCR0) support it. Named as core-tensor's CpuFeatures.
inline std::vector<std::pair<const char*, bool>> CpuFeatures() {
  bool avx = false, fma = false, avx2 = false, f = false, dq = false, cd = false, bw = false, vl = false, bf16 = false,
       amx = false;
#if defined(__x86_64__) && defined(__GNUC__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(1, &a, &b, &c, &d)) {
    uint64_t xcr0 = 0;
    if (c & (1u << 27)) {  // OSXSAVE: XGETBV is usable
      unsigned lo, hi;
      __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
      xcr0 = (static_cast<uint64_t>(hi) << 32) | lo;
    }
    const bool os_ymm = (xcr0 & 0x6) == 0x6, os_zmm = (xcr0 & 0xe6) == 0xe6, os_amx = (xcr0 & 0x60000) == 0x60000;
    avx = os_ymm && (c & (1u << 28));
    fma = os_ymm && (c & (1u << 12));
    if (__get_cpuid_max(0, nullptr) >= 7) {
      __cpuid_count(7, 0, a, b, c, d);
      avx2 = os_ymm && (b & (1u << 5));
      f = os_zmm && (b & (1u << 16));
      dq = os_zmm && (b & (1u << 17));
      cd = os_zmm && (b & (1u << 28));
      bw = os_zmm && (b & (1u << 30));
      vl = os_zmm && (b & (1u << 31));
      amx = os_amx && (d & (1u << 24)) && (d & (1u << 22));  // AMX-TILE and AMX-BF16
      __cpuid_count(7, 1, a, b, c, d);
      bf16 = os_zmm && (a & (1u << 5));
    }
  }
#endif
  return {{"avx", avx},   {"fma", fma},   {"avx2", avx2}, {"avx512f", f},          {"avx512dq", dq},
          {"avx512cd", cd}, {"avx512bw", bw}, {"avx512vl", vl}, {"avx512bf16", bf16}, {"amx", amx}};
}

// The kernel families this OpenBLAS can be switched to (none when it cannot switch).
inline std::vector<const char*> SwitchableCores() {
  std::vector<const char*> out;
  if (gotoblas_dynamic_init == nullptr || gotoblas_dynamic_quit == nullptr) return out;
  const std::pair<const char*, const void*> cores[] = {
      {"Sandybridge", &gotoblas_SANDYBRIDGE}, {"Haswell", &gotoblas_HASWELL}, {"SkylakeX", &gotoblas_SKYLAKEX}, {"Cooperlake", &gotoblas_COOPERLAKE}};
  for (const auto& core : cores)
    if (core.second != nullptr) out.push_back(core.first);
  return out;
}

inline std::string CurrentCore() {
  const char* core = openblas_get_corename();
  return core ? core : "";
}

// Re-runs OpenBLAS's kernel choice with OPENBLAS_CORETYPE=name (the variable restored afterwards)
// and returns the core now in use; false when this OpenBLAS cannot switch. Once per process in
// effect: other threads' products may be running, so a core already in use is never re-chosen.
inline bool SwitchCore(const char* name, std::string* now) {
  if (gotoblas_dynamic_init == nullptr || gotoblas_dynamic_quit == nullptr) return false;
  static std::mutex mu;
  {
    std::lock_guard<std::mutex> lock(mu);
    const char* current = openblas_get_corename();
    if (current == nullptr || strcasecmp(current, name) != 0) {
      const char* before = getenv("OPENBLAS_CORETYPE");
      const std::string saved = before ? before : "";
      setenv("OPENBLAS_CORETYPE", name, 1);
      gotoblas_dynamic_quit();
      gotoblas_dynamic_init();
      if (before) setenv("OPENBLAS_CORETYPE", saved.c_str(), 1);
      else unsetenv("OPENBLAS_CORETYPE");
    }
  }
  *now = CurrentCore();
  return true;
}

}  // namespace pbrl_blas
