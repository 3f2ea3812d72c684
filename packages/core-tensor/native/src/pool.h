// The addon's thread pool and OpenBLAS thread count, one of each per JavaScript thread.
#pragma once
#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace pbrl_native {

// Thread pool: parallel_for(n, fn) runs fn(lo, hi) over [0, n) split into one contiguous chunk per
// thread, the calling thread taking the first. Workers sleep on a condition variable between jobs
// (no spinning, so they never steal cycles from OpenBLAS's own threads).
class Pool {
 public:
  explicit Pool(int threads);
  ~Pool();
  int threads() const { return threads_; }

  // `grain`: the fewest items worth a thread of their own.
  void ParallelFor(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
    if (n <= 0) return;
    int parts = static_cast<int>(std::min<int64_t>(threads_, std::max<int64_t>(1, n / std::max<int64_t>(1, grain))));
    if (parts <= 1) {
      fn(0, n);
      return;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      fn_ = &fn;
      n_ = n;
      parts_ = parts;
      pending_ = parts - 1;
      generation_++;
    }
    cv_.notify_all();
    fn(0, n / parts);
    std::unique_lock<std::mutex> lock(mu_);
    done_cv_.wait(lock, [this] { return pending_ == 0; });
    fn_ = nullptr;
  }

 private:
  void Loop(int index);

  int threads_;
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable cv_, done_cv_;
  const std::function<void(int64_t, int64_t)>* fn_ = nullptr;
  int64_t n_ = 0;
  int parts_ = 0;
  int pending_ = 0;
  uint64_t generation_ = 0;
  bool stop_ = false;
};

// Per JavaScript thread: each worker thread that loads the addon gets its own pool and thread
// count (pbrl's parallel_training="mp" runs one agent per worker), so no two threads ever share a
// pool's job slot. OpenBLAS's count is process-wide; kernels re-assert theirs (SyncBlasThreads).
extern thread_local Pool* g_pool;
extern thread_local int g_blas_threads;

void SyncBlasThreads();

}  // namespace pbrl_native
