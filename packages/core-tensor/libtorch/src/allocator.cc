// A caching allocator for ATen's largest CPU tensors.
//
// glibc serves blocks above its mmap threshold (at most 32 MB) with fresh mappings and unmaps them
// on free, so every training step touches its largest tensors' pages anew — the logits, their
// gradient, the embedding's gradients, each a hundred megabytes for a 135M model — and the kernel
// zero-fills them page by page. Like PyTorch's CUDA allocator, this one keeps such blocks when they
// are freed and serves the next requests from them (see Take: whole, split, or grown by mremap). A
// step's tensors recur with the same sizes, so after the first steps their pages are reused rather
// than mapped again. Smaller blocks stay with glibc, whose heap already reuses them. Measured on a
// SmolLM2-135M bf16 step at 4 × 128 (2-core Zen 5): the blocks first touched per step fell from
// about 420 MB (when a miss gave the whole cache back) to 48 MB, and the step's system time from
// 0.25–0.4 s to 0.02–0.2 s, at the same peak RSS (3.45 GB); with split blocks joined again (Join),
// to about 2 MB (13,000 → 500–1,300 minor faults a step).
// The blocks do not ask for transparent huge pages (MADV_HUGEPAGE): where the kernel's THP defrag
// setting is `madvise` (Debian's default) each such fault waits for memory compaction — first
// touching 113 MB took 748 ms instead of 49 ms, and the 135M bf16 warm-up step 3.7–3.9 s instead of
// 1.4 s, the steps after it 1.0–1.25 s instead of 0.93–1.05 s (same VM).
// PBRL_LIBTORCH_CPU_CACHE_MB caps what the cache holds (default a quarter of the machine's memory,
// at most 4096); 0 turns it off, and KeepHeapPages with it.
#include <c10/core/CPUAllocator.h>
#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <climits>
#include <cstdlib>
#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "common.h"

namespace pbrl {
namespace {

// Blocks this size and larger are cached, rounded up to whole huge pages.
constexpr size_t kMinBlock = size_t{32} << 20;
constexpr size_t kHugePage = size_t{2} << 20;

size_t Rounded(size_t n) { return (n + kHugePage - 1) / kHugePage * kHugePage; }

class CachingCpuAllocator final : public at::Allocator {
 public:
  CachingCpuAllocator(at::Allocator* fallback, size_t limit) : fallback_(fallback), limit_(limit) {}

  at::DataPtr allocate(size_t n) override {
    if (n < kMinBlock) return fallback_->allocate(n);
    Block b{Rounded(n), 0};
    void* p = Take(b);
    if (p == nullptr) p = Map(b);
    {
      std::lock_guard<std::mutex> lock(mu_);
      used_[p] = b;
    }
    return {p, p, &Release, at::Device(at::kCPU)};
  }

  at::DeleterFnPtr raw_deleter() const override { return &Release; }

  void copy_data(void* dest, const void* src, std::size_t count) const override { default_copy_data(dest, src, count); }

  size_t Cached() {
    std::lock_guard<std::mutex> lock(mu_);
    return cached_;
  }

  // Unmaps every cached block; returns the bytes given back.
  size_t Drop() {
    FreeList idle;
    size_t bytes = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      idle.swap(free_);
      bySize_.clear();
      bytes = cached_;
      cached_ = 0;
    }
    for (const auto& [p, b] : idle) munmap(p, b.size);
    return bytes;
  }

 private:
  // region: the mapping a block was cut from. Free neighbours are joined only within one mapping:
  // mremap (see Take) moves or grows a range of one mapping only.
  struct Block {
    size_t size;
    uint64_t region;
  };
  using FreeList = std::map<void*, Block>;

  static void Release(void* p);

  // A cached block for `want.size` bytes, keeping the pages already resident; null when none is
  // cached. The smallest block that fits: whole when at most 1.25 times the size (a slightly larger
  // block costs nothing more), else its head, its tail staying cached as a block of its own (a
  // step's vocabulary-sized logits are served from the previous step's embedding gradients; the
  // two are joined again when both are free, see Join). When none fits, the largest grows in place
  // or moves (mremap keeps its pages; only the added ones fault), and the others are given back:
  // holding them idle while the process grows would raise its peak memory above what its tensors need.
  void* Take(Block& want) {
    std::vector<std::pair<void*, size_t>> idle;
    void* p = nullptr;
    Block have{};
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (bySize_.empty()) return nullptr;
      auto bySize = bySize_.lower_bound(want.size);
      const bool fits = bySize != bySize_.end();
      if (!fits) bySize = std::prev(bySize_.end());
      p = bySize->second;
      have = free_.at(p);
      Unlist(free_.find(p));
      want.region = have.region;
      if (fits && have.size <= want.size + want.size / 4) {
        want.size = have.size;
        return p;
      }
      if (fits && have.size - want.size >= kMinBlock) {
        List(static_cast<char*>(p) + want.size, {have.size - want.size, have.region});
        return p;
      }
      if (!fits) {
        for (const auto& [q, b] : free_) idle.emplace_back(q, b.size);
        free_.clear();
        bySize_.clear();
        cached_ = 0;
      }
    }
    for (const auto& [q, bytes] : idle) munmap(q, bytes);
    if (have.size > want.size) {
      munmap(static_cast<char*>(p) + want.size, have.size - want.size);
      return p;
    }
    void* grown = mremap(p, have.size, want.size, MREMAP_MAYMOVE);
    if (grown != MAP_FAILED) {
      if (grown != p) want.region = ++regions_;  // moved: a mapping of its own
      return grown;
    }
    munmap(p, have.size);
    return nullptr;
  }

  // A new block (none was cached: see Take).
  void* Map(Block& b) {
    void* p = mmap(nullptr, b.size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    TORCH_CHECK(p != MAP_FAILED, "pbrl's CPU allocator: cannot allocate ", b.size, " bytes (out of memory)");
    b.region = ++regions_;
    return p;
  }

  void Free(void* p) {
    Block b{};
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = used_.find(p);
      if (it == used_.end()) {
        // A small block of the fallback allocator, freed through raw_deleter() (raw_allocate's
        // users, such as oneDNN's scratch buffers, free with the allocator's raw deleter).
        fallback_->raw_deleter()(p);
        return;
      }
      b = it->second;
      used_.erase(it);
      if (cached_ + b.size <= limit_) {
        Join(p, b);
        return;
      }
    }
    munmap(p, b.size);
  }

  // Caches a freed block joined with the free blocks on either side of it in the same mapping, so
  // that a block split for two smaller tensors serves a large one again once both are freed
  // (without it a 135M bf16 step grew a block by 48 MB — 12,000 page faults — every step).
  void Join(void* p, Block b) {
    auto next = free_.find(static_cast<char*>(p) + b.size);
    if (next != free_.end() && next->second.region == b.region) {
      b.size += next->second.size;
      Unlist(next);
    }
    auto after = free_.lower_bound(p);
    if (after != free_.begin()) {
      auto prev = std::prev(after);
      if (static_cast<char*>(prev->first) + prev->second.size == p && prev->second.region == b.region) {
        p = prev->first;
        b.size += prev->second.size;
        Unlist(prev);
      }
    }
    List(p, b);
  }

  void List(void* p, Block b) {
    free_.emplace(p, b);
    bySize_.emplace(b.size, p);
    cached_ += b.size;
  }

  void Unlist(FreeList::iterator it) {
    auto [lo, hi] = bySize_.equal_range(it->second.size);
    for (auto s = lo; s != hi; ++s) {
      if (s->second == it->first) {
        bySize_.erase(s);
        break;
      }
    }
    cached_ -= it->second.size;
    free_.erase(it);
  }

  at::Allocator* fallback_;
  const size_t limit_;
  std::mutex mu_;
  FreeList free_;                          // by address, to find a freed block's neighbours
  std::multimap<size_t, void*> bySize_;    // the same blocks by size, to find the smallest that fits
  std::unordered_map<void*, Block> used_;
  size_t cached_ = 0;
  std::atomic<uint64_t> regions_{0};  // counts the mappings made (Map and Take run outside mu_)
};

CachingCpuAllocator* g_allocator = nullptr;

void CachingCpuAllocator::Release(void* p) { g_allocator->Free(p); }

size_t CacheLimit() {
  const char* env = std::getenv("PBRL_LIBTORCH_CPU_CACHE_MB");
  if (env != nullptr && *env != '\0') return static_cast<size_t>(std::strtoull(env, nullptr, 10)) << 20;
  const size_t memory = static_cast<size_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return std::min(memory / 4, size_t{4096} << 20);
}

// The blocks under 32 MB stay with glibc, whose defaults give memory back as a step frees it:
// its mmap threshold follows the largest block freed (a Qwen2.5-0.5B weight gradient, 17 MB, is
// mapped and unmapped until one is freed) and it trims the heap's free top above twice that, so
// the next step faults the same pages in again — 300,000 minor faults and 0.9–1.2 s of system time
// in a 3.3–4.2 s Qwen2.5-0.5B bf16 step (2-core Zen 5). Fixed at 32 MB, never trimmed below 2 GB
// free, the heap keeps its pages: 2,000–6,000 faults, 2.2–2.8 s. A user's own MALLOC_* or
// GLIBC_TUNABLES settings win.
void KeepHeapPages() {
#ifdef __GLIBC__
  for (const char* name : {"MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_", "GLIBC_TUNABLES"}) {
    if (std::getenv(name) != nullptr) return;
  }
  mallopt(M_MMAP_THRESHOLD, static_cast<int>(kMinBlock));
  mallopt(M_TRIM_THRESHOLD, INT_MAX);
  mallopt(M_TOP_PAD, 64 << 20);
#endif
}

}  // namespace

void InstallCpuAllocator() {
  static std::once_flag once;
  std::call_once(once, [] {
    const size_t limit = CacheLimit();
    if (limit == 0) return;
    KeepHeapPages();
    g_allocator = new CachingCpuAllocator(c10::GetCPUAllocator(), limit);  // lives as long as the process
    c10::SetCPUAllocator(g_allocator, /*priority=*/1);
  });
}

size_t CpuCacheBytes() { return g_allocator == nullptr ? 0 : g_allocator->Cached(); }

// Between a run's phases (generating, training), whose tensors have other sizes, what one phase
// freed and kept — cached blocks, glibc's untrimmed heap (KeepHeapPages) — would stay resident
// under the next phase's peak: 1.4–1.6 GB of a Qwen2.5-0.5B LoRA round. Within a phase the
// caches serve the recurring steps as before.
size_t ReleaseCpuCache() {
  const size_t bytes = g_allocator == nullptr ? 0 : g_allocator->Drop();
#ifdef __GLIBC__
  malloc_trim(0);
#endif
  return bytes;
}

}  // namespace pbrl
