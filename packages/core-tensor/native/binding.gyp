{
  "targets": [
    {
      "target_name": "pbrl_native",
      "sources": ["src/module.cc", "src/common.cc", "src/pool.cc", "src/blas_info.cc", "src/matmul.cc", "src/shape.cc", "src/elementwise.cc", "src/reduce.cc", "src/logsoftmax.cc", "src/layers.cc", "src/attention.cc", "src/decode.cc", "src/sampling.cc", "src/adamw.cc"],
      "include_dirs": ["../shared-cpp"],
      "cflags_cc": ["-O3", "-std=c++17", "-fno-math-errno", "-fno-trapping-math"],
      "cflags_cc!": ["-std=gnu++17", "-std=gnu++20"],
      "libraries": ["-lopenblas", "-lpthread"],
      "defines": ["NAPI_VERSION=8"]
    }
  ]
}
