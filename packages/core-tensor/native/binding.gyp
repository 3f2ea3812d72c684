{
  "targets": [
    {
      "target_name": "pbrl_native",
      "sources": ["src/pbrl_native.cc"],
      "cflags_cc": ["-O3", "-std=c++17", "-fno-math-errno", "-fno-trapping-math"],
      "cflags_cc!": ["-std=gnu++17", "-std=gnu++20"],
      "libraries": ["-lopenblas", "-lpthread"],
      "defines": ["NAPI_VERSION=8"]
    }
  ]
}
