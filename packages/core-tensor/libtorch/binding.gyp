{
  "variables": {
    "libtorch": "<!(node -p \"process.env.PBRL_LIBTORCH_DIR || ''\")",
    "cuda_libs": "<!(node -p \"process.env.PBRL_LIBTORCH_CUDA === '1' ? '-ltorch_cuda -lc10_cuda' : ''\")",
    "openblas": "<!(node -p \"process.env.PBRL_LIBTORCH_OPENBLAS === '1' ? '1' : '0'\")",
    "openblas_libs": "<!(node -p \"process.env.PBRL_LIBTORCH_OPENBLAS === '1' ? '-lopenblas' : ''\")",
    "openmp_lib": "<!(node -p \"process.env.PBRL_LIBTORCH_OPENMP || ''\")",
    "c10d": "<!(node -p \"process.env.PBRL_LIBTORCH_C10D === '0' ? '0' : '1'\")",
    "nccl": "<!(node -p \"process.env.PBRL_LIBTORCH_NCCL === '1' ? '1' : '0'\")",
    "cuda_includes": "<!(node -p \"process.env.PBRL_LIBTORCH_CUDA_INCLUDES || ''\")"
  },
  "targets": [
    {
      "target_name": "pbrl_libtorch",
      "sources": ["src/common.cc", "src/core.cc", "src/elementwise.cc", "src/shape.cc", "src/reduce.cc", "src/linalg.cc", "src/fused.cc", "src/attention.cc", "src/sampling.cc", "src/lora.cc", "src/decode.cc", "src/allocator.cc", "src/blas.cc", "src/distributed.cc"],
      "include_dirs": ["../shared-cpp", "src/gloo-decl", "<(libtorch)/include", "<(libtorch)/include/torch/csrc/api/include", "<@(cuda_includes)"],
      "cflags_cc": ["-O3", "-std=c++20", "-fno-math-errno", "-fno-trapping-math", "-D_GLIBCXX_USE_CXX11_ABI=1", "-Wno-unused-parameter", "-Wno-psabi"],
      "cflags_cc!": ["-std=gnu++17", "-std=gnu++20", "-fno-exceptions", "-fno-rtti"],
      "ldflags": ["-Wl,-rpath,<(libtorch)/lib", "-Wl,--no-as-needed"],
      "libraries": ["-L<(libtorch)/lib", "-ltorch", "-ltorch_cpu", "-lc10", "<@(cuda_libs)", "<@(openblas_libs)"],
      "defines": ["NAPI_VERSION=8", "PBRL_WITH_OPENBLAS=<(openblas)", "PBRL_C10D=<(c10d)", "PBRL_NCCL=<(nccl)"],
      "conditions": [["openmp_lib!=''", { "cflags_cc": ["-fopenmp"], "libraries": ["-l:<(openmp_lib)"] }]]
    }
  ]
}
