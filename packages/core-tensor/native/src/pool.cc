#include "pool.h"

#include "blas.h"

namespace pbrl_native {

Pool::Pool(int threads) : threads_(std::max(1, threads)) {
  for (int i = 1; i < threads_; i++) workers_.emplace_back([this, i] { Loop(i); });
}

Pool::~Pool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& t : workers_) t.join();
}

void Pool::Loop(int index) {
  uint64_t seen = 0;
  for (;;) {
    const std::function<void(int64_t, int64_t)>* fn;
    int64_t n;
    int parts;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      if (index >= parts_) continue;  // this job has fewer parts than threads
      fn = fn_;
      n = n_;
      parts = parts_;
    }
    (*fn)(n * index / parts, n * (index + 1) / parts);
    {
      std::lock_guard<std::mutex> lock(mu_);
      pending_--;
    }
    done_cv_.notify_one();
  }
}

thread_local Pool* g_pool = nullptr;
thread_local int g_blas_threads = 1;

void SyncBlasThreads() {
  if (openblas_get_num_threads() != g_blas_threads) openblas_set_num_threads(g_blas_threads);
}

}  // namespace pbrl_native
