// Process groups over PyTorch's own distributed engine (c10d): a TCPStore rendezvous in torchrun's
// terms (rank 0 hosts the store at MASTER_ADDR:MASTER_PORT) and the Gloo backend for CPU tensors,
// the exact objects torch.distributed makes, so a pbrl rank and a Python rank can share a group.
//
// Gloo's own headers are not in the torch wheel; src/gloo-decl declares the few gloo names that
// c10d's ProcessGroupGloo.hpp mentions (see its README.md and docs/libtorch-backend.md,
// "Distributed (c10d)"). Everything that runs is libtorch_cpu's.
//
// Collectives are issued on the JavaScript thread, in call order (c10d matches collectives across
// ranks by the order they are issued), and Gloo runs them on its own threads; only the wait for
// the result happens off the JavaScript thread (napi async work), so a collective waiting on a
// slow peer never blocks Node's event loop. Tensors are never mutated: each call copies its
// inputs into one contiguous bucket per dtype, reduces the bucket in place, and hands back views
// of it under new ids.
#include "common.h"

// PBRL_C10D=0: libtorch/build.mjs's second try, for a libtorch whose c10d does not build or link.
#ifndef PBRL_C10D
#define PBRL_C10D 1
#endif
#if PBRL_C10D && __has_include(<torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>)
#define PBRL_WITH_C10D 1
#ifndef USE_C10D_GLOO
#define USE_C10D_GLOO 1
#endif
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#else
#define PBRL_WITH_C10D 0
#endif
// NCCL for CUDA tensors: built only against a CUDA libtorch whose CUDA and NCCL headers
// libtorch/build.mjs found (PBRL_NCCL=1); a build that fails with it is retried without.
#if PBRL_WITH_C10D && defined(PBRL_NCCL) && PBRL_NCCL && __has_include(<torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>)
#define PBRL_WITH_NCCL 1
#ifndef USE_C10D_NCCL
#define USE_C10D_NCCL 1
#endif
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#else
#define PBRL_WITH_NCCL 0
#endif

#include <unistd.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <regex>
#include <string>
#include <vector>

namespace pbrl {
namespace {

#if PBRL_WITH_C10D

std::string ErrorText(const std::exception& e) {
  const c10::Error* ce = dynamic_cast<const c10::Error*>(&e);
  std::string s = ce != nullptr ? ce->what_without_backtrace() : e.what();
  // c10d's messages may carry a C++ backtrace after the first line, and Gloo's start with the
  // source location ("[…/pair.cc:534] Connection closed by peer …").
  const size_t nl = s.find('\n');
  if (nl != std::string::npos) s = s.substr(0, nl);
  static const std::regex location(R"(^\[[^\]]*\.(cc|cpp|h|hpp):\d+\]\s*)");
  return std::regex_replace(s, location, "");
}

// ---- napi async work: run on a libuv thread, then finish on the JavaScript thread ----

struct Job {
  napi_async_work work = nullptr;
  napi_deferred deferred = nullptr;
  std::function<void()> run;                 // libuv thread: no napi calls here
  std::function<napi_value(napi_env)> done;  // JavaScript thread, when run succeeded
  std::function<std::string(const std::string&)> explain;  // the message of a failure, from c10d's
  std::string error;
};

void Reject(napi_env env, napi_deferred deferred, const std::string& msg) {
  napi_value text, err;
  napi_create_string_utf8(env, msg.c_str(), msg.size(), &text);
  napi_create_error(env, nullptr, text, &err);
  napi_reject_deferred(env, deferred, err);
}

napi_value Queue(napi_env env, const char* name, std::function<void()> run, std::function<napi_value(napi_env)> done,
                 std::function<std::string(const std::string&)> explain) {
  auto* job = new Job{nullptr, nullptr, std::move(run), std::move(done), std::move(explain), ""};
  napi_value promise, resource;
  napi_create_promise(env, &job->deferred, &promise);
  napi_create_string_utf8(env, name, NAPI_AUTO_LENGTH, &resource);
  napi_create_async_work(
      env, nullptr, resource,
      [](napi_env, void* data) {
        Job* j = static_cast<Job*>(data);
        try {
          j->run();
        } catch (const std::exception& e) {
          j->error = j->explain(ErrorText(e));
        }
      },
      [](napi_env env, napi_status, void* data) {
        Job* j = static_cast<Job*>(data);
        if (!j->error.empty()) {
          Reject(env, j->deferred, j->error);
        } else {
          try {
            napi_resolve_deferred(env, j->deferred, j->done(env));
          } catch (const std::exception& e) {
            Reject(env, j->deferred, j->explain(ErrorText(e)));
          }
        }
        napi_delete_async_work(env, j->work);
        delete j;
      },
      job, &job->work);
  napi_queue_async_work(env, job->work);
  return promise;
}

std::string Seconds(std::chrono::milliseconds ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g s", static_cast<double>(ms.count()) / 1000.0);
  return buf;
}

std::string ThisHost() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown host";
  return buf;
}

using Ms = std::chrono::milliseconds;

// One process group: its store, its backend (Gloo, or NCCL for CUDA tensors), and who its ranks
// are (for error messages).
struct Group {
  c10::intrusive_ptr<c10d::TCPStore> store;
  c10::intrusive_ptr<c10d::Backend> pg;  // declared after the store: closed before it
  // NCCL: the collectives run on CUDA device `device` (this rank's), and the buckets stay there.
  bool nccl = false;
  int device = -1;
  int rank = 0;
  int size = 0;
  Ms timeout{0};
  std::string masterAddr;
  int masterPort = 0;
  // A group formed beside the default one through the same store (replicas of one agent): its
  // keys live under this name, and every rank is the store's client.
  std::string subgroup;
  // "host <name> pid <pid>" per rank as pbrl ranks publish it; "" for a rank that did not (e.g. a Python rank).
  std::vector<std::string> who;
  uint64_t issued = 0;  // collectives issued so far
  bool joining = false;  // distJoin has started

  std::string Self() const { return "rank " + std::to_string(rank) + " of " + std::to_string(size) + " (" + who[rank] + ")"; }
  std::string Rank(int r) const { return "rank " + std::to_string(r) + (who[r].empty() ? "" : " (" + who[r] + ")"); }

  // Names the failed peer when the world has two ranks (the peer is the other one); else Gloo's
  // peer address, which is a transport port rather than a rank, beside the ranks' hosts.
  std::string Explain(const std::string& op, uint64_t seq, const std::string& msg) const {
    std::string out = "pbrl distributed: " + Self() + ": " + op + " (collective #" + std::to_string(seq) + ") failed: " + msg + ". ";
    const bool timedOut = msg.find("imed out") != std::string::npos || msg.find("imeout") != std::string::npos;
    std::string peer, ranks;
    if (size == 2) {
      peer = Rank(1 - rank);
    } else {
      std::smatch m;
      static const std::regex addr(R"(\[([^\]]+)\]:(\d+))");
      peer = std::regex_search(msg, m, addr) ? "the rank at " + m[1].str() + ":" + m[2].str() + " (Gloo's address for it)" : "a peer rank";
      ranks = " (the group's ranks:";
      for (int r = 0; r < size; r++) ranks += (r > 0 ? ", " : " ") + Rank(r);
      ranks += ")";
    }
    out += timedOut ? "No answer from " + peer + " within the timeout of " + Seconds(timeout) + ": it died, stalled, or runs other collectives"
                    : "Lost " + peer + ": it died or left the group";
    out += ranks + ". Look at that rank's log; every rank must run the same collectives in the same order with tensors of the same shapes, "
           "and when ranks legitimately run more than the timeout apart, raise it (timeoutSeconds; ddp_timeout in a config). "
           "The group cannot be used after a failure: destroy() it.";
    return out;
  }
};

std::mutex groups_mutex;
// Never destroyed: a group left open at exit keeps its Gloo threads, which must not be joined
// while libtorch's own statics are being torn down.
std::map<int64_t, std::shared_ptr<Group>>& groups = *new std::map<int64_t, std::shared_ptr<Group>>();
int64_t next_group = 1;

std::shared_ptr<Group> GroupOf(int64_t handle) {
  std::lock_guard<std::mutex> lock(groups_mutex);
  auto it = groups.find(handle);
  if (it == groups.end()) throw ArgError("process group " + std::to_string(handle) + " is destroyed (or was never made)");
  return it->second;
}

// A group whose ranks have all joined (distJoin resolved), for collectives.
std::shared_ptr<Group> Joined(int64_t handle) {
  auto g = GroupOf(handle);
  if (!g->pg) throw ArgError("process group " + std::to_string(handle) + " has not joined yet (await distJoin first)");
  return g;
}

// The prefixes torch.distributed.init_process_group puts before the default group's Gloo keys
// (distributed_c10d.py: "default_pg", the group name "0", the device "cpu"), so pbrl's ranks and
// Python's meet under the same keys.
c10::intrusive_ptr<c10d::Store> GlooKeys(const c10::intrusive_ptr<c10d::Store>& store) {
  auto pg = c10::make_intrusive<c10d::PrefixStore>("default_pg", store);
  auto name = c10::make_intrusive<c10d::PrefixStore>("0/", pg);
  return c10::make_intrusive<c10d::PrefixStore>("cpu/", name);
}

// The keys of a group formed beside the default one: under its own name, so that groups formed
// through one store never meet each other's rendezvous keys. NCCL's (its unique id) have their own.
c10::intrusive_ptr<c10d::Store> KeysOf(const Group& g) {
  const std::string nccl = g.nccl ? "pbrl/nccl/" : "";
  if (g.subgroup.empty() && !g.nccl) return GlooKeys(g.store);
  if (g.subgroup.empty()) return c10::make_intrusive<c10d::PrefixStore>(nccl, g.store);
  return c10::make_intrusive<c10d::PrefixStore>(nccl + "pbrl/subgroup/" + g.subgroup, g.store);
}

std::string WhoKey(const Group& g, int r) { return "pbrl/who/" + (g.subgroup.empty() ? "" : g.subgroup + "/") + std::to_string(r); }

// Why forming the group failed, from c10d's message: the store host unreachable, the port taken,
// or ranks that never joined.
std::string ExplainInit(const Group& g, const std::string& msg) {
  std::string out = "pbrl distributed: " + g.Self() + ": could not form the process group through rank 0's TCPStore at " + g.masterAddr + ":" +
                    std::to_string(g.masterPort) + " within " + Seconds(g.timeout) + ": " + msg + ". ";
  if (msg.find("ddress already in use") != std::string::npos) {
    return out + "Port " + std::to_string(g.masterPort) + " is taken on this host: choose another MASTER_PORT (or 0, and pass rank 0's port to the others).";
  }
  if (g.rank != 0 && (msg.find("connect") != std::string::npos || msg.find("onnection") != std::string::npos)) {
    return out + "Rank 0 hosts the store: check that it runs, and that MASTER_ADDR and MASTER_PORT are the same on every rank and reachable from this host.";
  }
  // Gloo's rendezvous waits for each rank's address under a key ending in "/<rank>" (the store
  // says which keys it still waited for: "wait timeout after 3000ms, keys: /default_pg/0//cpu//0/1").
  std::string missing;
  const size_t keys = msg.find("keys: ");
  if (keys != std::string::npos) {
    static const std::regex key(R"(/(\d+)(,|$))");
    const std::string list = msg.substr(keys + 6);
    for (auto it = std::sregex_iterator(list.begin(), list.end(), key); it != std::sregex_iterator(); ++it) {
      const std::string r = (*it)[1].str();
      if ((" " + missing).find(" " + r + ",") == std::string::npos) missing += " " + r + ",";
    }
  }
  if (!missing.empty()) {
    missing.pop_back();
    return out + "Rank(s)" + missing + " did not join: start every rank with the same MASTER_ADDR, MASTER_PORT and WORLD_SIZE, " +
           "and a timeout long enough for the slowest to start.";
  }
  return out + "Start every rank with the same MASTER_ADDR, MASTER_PORT and WORLD_SIZE (and distinct RANKs), within the timeout of each other.";
}

// distInit(rank, worldSize, masterAddr, masterPort, timeoutMs, subgroup?, backend?, device?) → Promise<[handle, port]>:
// rank 0 starts the TCPStore (port 0: a free port, reported back so that a launcher can pass it
// on); the other ranks connect to it. distJoin then forms the group. With a subgroup name, a store
// already runs there (the default group's): every rank connects to it, and the group's keys live
// under that name. backend "gloo" (the default) or "nccl", with the CUDA device index of this rank.
napi_value Init(const Args& a) {
  auto g = std::make_shared<Group>();
  g->rank = static_cast<int>(a.Int(0));
  g->size = static_cast<int>(a.Int(1));
  g->masterAddr = a.Str(2);
  g->masterPort = static_cast<int>(a.Int(3));
  g->timeout = Ms(a.Int(4));
  if (a.size() > 5 && !a.IsNullish(5)) {
    g->subgroup = a.Str(5);
    if (g->subgroup.empty()) throw ArgError("a subgroup's name must not be empty");
  }
  const std::string backend = a.size() > 6 && !a.IsNullish(6) ? a.Str(6) : "gloo";
  if (backend == "nccl") {
#if PBRL_WITH_NCCL
    g->nccl = true;
    g->device = a.size() > 7 && !a.IsNullish(7) ? static_cast<int>(a.Int(7)) : 0;
    const int n = static_cast<int>(c10::cuda::device_count());
    if (g->device < 0 || g->device >= n) throw ArgError("nccl: CUDA device " + std::to_string(g->device) + " is not visible (" + std::to_string(n) + " device(s))");
#else
    throw ArgError("the nccl backend needs an addon built against a CUDA libtorch with its CUDA and NCCL headers (this one has Gloo only); use backend \"gloo\", which moves CUDA tensors through host memory");
#endif
  } else if (backend != "gloo") {
    throw ArgError("unknown process group backend \"" + backend + "\" (gloo or nccl)");
  }
  if (g->size < 1 || g->rank < 0 || g->rank >= g->size) throw ArgError("rank " + std::to_string(g->rank) + " is not in [0, " + std::to_string(g->size) + ")");
  if (g->masterPort < 0 || g->masterPort > 65535) throw ArgError("masterPort " + std::to_string(g->masterPort) + " is not in [0, 65535]");
  if (g->timeout.count() <= 0) throw ArgError("the timeout must be positive");
  g->who.assign(g->size, "");
  g->who[g->rank] = "host " + ThisHost() + " pid " + std::to_string(getpid());
  auto run = [g]() {
    c10d::TCPStoreOptions o;
    o.port = static_cast<uint16_t>(g->masterPort);
    o.isServer = g->rank == 0 && g->subgroup.empty();
    o.numWorkers = g->size;
    // Clients count themselves in (a store hosted by Python's rank 0 waits for that count); rank 0
    // does not wait for them here: ranks that never come show up in distJoin, by rank, as the Gloo
    // keys they never wrote.
    o.waitWorkers = g->rank != 0 && g->subgroup.empty();
    o.timeout = g->timeout;
    g->store = c10::make_intrusive<c10d::TCPStore>(g->masterAddr, o);
    if (o.isServer) g->masterPort = g->store->getPort();
  };
  auto done = [g](napi_env env) {
    int64_t handle;
    {
      std::lock_guard<std::mutex> lock(groups_mutex);
      handle = next_group++;
      groups[handle] = g;
    }
    napi_value arr, v;
    napi_create_array_with_length(env, 2, &arr);
    napi_create_double(env, static_cast<double>(handle), &v);
    napi_set_element(env, arr, 0, v);
    napi_create_double(env, g->masterPort, &v);
    napi_set_element(env, arr, 1, v);
    return arr;
  };
  return Queue(a.env(), "pbrl.distInit", run, done, [g](const std::string& msg) { return ExplainInit(*g, msg); });
}

// distJoin(handle) → Promise<undefined>: the Gloo backend connects every pair of ranks (the
// rendezvous torch.distributed.init_process_group runs); resolves once all ranks have joined.
napi_value Join(const Args& a) {
  auto g = GroupOf(a.Int(0));
  if (g->pg || g->joining) throw ArgError("distJoin: this group has joined already");
  g->joining = true;
  auto run = [g]() {
    const std::string me = g->who[g->rank];
    g->store->set(WhoKey(*g, g->rank), std::vector<uint8_t>(me.begin(), me.end()));
    c10::intrusive_ptr<c10d::Backend> pg;
#if PBRL_WITH_NCCL
    if (g->nccl) {
      c10::cuda::set_device(static_cast<c10::DeviceIndex>(g->device));
      auto options = c10d::ProcessGroupNCCL::Options::create();
      options->timeout = g->timeout;
      pg = c10::make_intrusive<c10d::ProcessGroupNCCL>(KeysOf(*g), g->rank, g->size, options);
    }
#endif
    if (!pg) pg = c10::make_intrusive<c10d::ProcessGroupGloo>(KeysOf(*g), g->rank, g->size, c10d::ProcessGroupGloo::Options::create_default(g->timeout));
    // Every rank wrote its key before joining the Gloo rendezvous that just completed; a rank
    // without one is not pbrl's (a Python rank). Only for messages: a store already gone (rank 0
    // may finish and leave first) costs nothing but the names.
    try {
      for (int r = 0; r < g->size; r++) {
        if (r == g->rank || !g->store->check({WhoKey(*g, r)})) continue;
        const std::vector<uint8_t> v = g->store->get(WhoKey(*g, r));
        g->who[r] = std::string(v.begin(), v.end());
      }
    } catch (const std::exception&) {
    }
    g->pg = std::move(pg);
  };
  return Queue(a.env(), "pbrl.distJoin", run, [](napi_env env) { return Undefined(env); }, [g](const std::string& msg) { return ExplainInit(*g, msg); });
}

// One contiguous bucket per dtype, holding the inputs in order (bool as uint8: Gloo moves bytes),
// on the CPU for Gloo and on the group's CUDA device for NCCL.
struct Buckets {
  std::vector<at::Tensor> inputs;   // the tensors as given (device and shape kept for the results)
  std::vector<size_t> bucketOf;     // input i lives in buckets[bucketOf[i]] ...
  std::vector<int64_t> offset;      // ... at this element offset
  std::vector<at::Tensor> buckets;  // flat, contiguous, where the group's backend reads them
};

at::Device WireDevice(const Group& g) { return g.nccl ? at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(g.device)) : at::Device(at::kCPU); }

Buckets Pack(const std::vector<at::Tensor>& ts, at::Device wire) {
  Buckets b;
  std::map<at::ScalarType, size_t> index;
  std::vector<std::vector<at::Tensor>> parts;
  std::vector<int64_t> sizes;
  for (const at::Tensor& t0 : ts) {
    at::Tensor t = Widened(t0);
    const at::ScalarType type = t.scalar_type() == at::kBool ? at::kByte : t.scalar_type();
    auto it = index.find(type);
    if (it == index.end()) {
      it = index.emplace(type, parts.size()).first;
      parts.emplace_back();
      sizes.push_back(0);
    }
    b.inputs.push_back(t);
    b.bucketOf.push_back(it->second);
    b.offset.push_back(sizes[it->second]);
    sizes[it->second] += t.numel();
    parts[it->second].push_back(t.reshape({-1}).to(wire).to(type));
  }
  for (auto& p : parts) b.buckets.push_back(p.size() == 1 ? p[0].clone().contiguous() : at::cat(p));
  return b;
}

// Views of the buckets shaped as the inputs, on the inputs' devices and dtypes.
std::vector<at::Tensor> Unpack(const Buckets& b) {
  std::vector<at::Tensor> out;
  for (size_t i = 0; i < b.inputs.size(); i++) {
    const at::Tensor& in = b.inputs[i];
    at::Tensor v = b.buckets[b.bucketOf[i]].narrow(0, b.offset[i], in.numel()).view(in.sizes());
    if (v.scalar_type() != in.scalar_type()) v = v.to(in.scalar_type());
    if (v.device() != in.device()) v = v.to(in.device());
    out.push_back(v);
  }
  return out;
}

std::vector<at::Tensor> TensorsAt(const Args& a, size_t i) {
  std::vector<at::Tensor> ts;
  for (int64_t id : a.Ints(i)) ts.push_back(Table().Get(id));
  return ts;
}

// Waits for every work item of one call off the JavaScript thread; `after` runs there too.
napi_value Await(const Args& a, const std::shared_ptr<Group>& g, const char* op, std::vector<c10::intrusive_ptr<c10d::Work>> works,
                 std::function<void()> after, std::function<napi_value(napi_env)> done) {
  const uint64_t seq = g->issued;
  auto run = [g, works = std::move(works), after = std::move(after)]() {
    for (const auto& w : works) w->wait();
#if PBRL_WITH_NCCL
    // NCCL's wait() only orders the current CUDA stream after the collective: wait for it here.
    if (g->nccl) c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(g->device)).synchronize();
#endif
    if (after) after();
  };
  return Queue(a.env(), op, run, std::move(done), [g, op = std::string(op), seq](const std::string& msg) { return g->Explain(op, seq, msg); });
}

// distAllReduce(handle, ids, op) → Promise<refs>: op "sum", "avg" (sum / world size, float only), "max" or "min".
napi_value AllReduce(const Args& a) {
  auto g = Joined(a.Int(0));
  const std::vector<at::Tensor> ts = TensorsAt(a, 1);
  const std::string op = a.Str(2);
  c10d::AllreduceOptions o;
  if (op == "sum" || op == "avg") o.reduceOp = c10d::ReduceOp::SUM;  // Gloo has no AVG: divided after the sum
  else if (op == "max") o.reduceOp = c10d::ReduceOp::MAX;
  else if (op == "min") o.reduceOp = c10d::ReduceOp::MIN;
  else throw ArgError("unknown reduction \"" + op + "\" (sum, avg, max or min)");
  for (const at::Tensor& t : ts) {
    if (t.scalar_type() == at::kBool) throw ArgError("allReduce: bool tensors cannot be reduced; cast them to int32");
    if (op == "avg" && !at::isFloatingType(t.scalar_type())) throw ArgError("allReduce: avg needs float tensors (an int32 tensor would be truncated); use sum");
  }
  o.timeout = g->timeout;
  auto b = std::make_shared<Buckets>(Pack(ts, WireDevice(*g)));
  std::vector<c10::intrusive_ptr<c10d::Work>> works;
  for (at::Tensor& bucket : b->buckets) {
    std::vector<at::Tensor> one{bucket};
    works.push_back(g->pg->allreduce(one, o));
    g->issued++;
  }
  const int size = g->size;
  auto after = op == "avg" ? std::function<void()>([b, size]() {
    for (at::Tensor& bucket : b->buckets) bucket.div_(size);
  })
                           : std::function<void()>();
  return Await(a, g, "allReduce", std::move(works), after, [b](napi_env env) { return Refs(env, Unpack(*b)); });
}

// distBroadcast(handle, ids, root) → Promise<refs>: root's values on every rank (same shapes everywhere).
napi_value Broadcast(const Args& a) {
  auto g = Joined(a.Int(0));
  const std::vector<at::Tensor> ts = TensorsAt(a, 1);
  const int64_t root = a.Int(2);
  if (root < 0 || root >= g->size) throw ArgError("broadcast: root " + std::to_string(root) + " is not a rank of this group of " + std::to_string(g->size));
  c10d::BroadcastOptions o;
  o.rootRank = root;
  o.timeout = g->timeout;
  auto b = std::make_shared<Buckets>(Pack(ts, WireDevice(*g)));
  std::vector<c10::intrusive_ptr<c10d::Work>> works;
  for (at::Tensor& bucket : b->buckets) {
    std::vector<at::Tensor> one{bucket};
    works.push_back(g->pg->broadcast(one, o));
    g->issued++;
  }
  return Await(a, g, "broadcast", std::move(works), nullptr, [b](napi_env env) { return Refs(env, Unpack(*b)); });
}

// distAllGather(handle, id) → Promise<refs>: every rank's tensor, in rank order (same shape everywhere).
napi_value AllGather(const Args& a) {
  auto g = Joined(a.Int(0));
  const at::Tensor in = Widened(a.T(1));
  const at::ScalarType type = in.scalar_type() == at::kBool ? at::kByte : in.scalar_type();
  auto input = std::make_shared<at::Tensor>(in.reshape({-1}).to(WireDevice(*g)).to(type).clone().contiguous());
  auto all = std::make_shared<at::Tensor>(at::empty({g->size, in.numel()}, input->options()));
  std::vector<std::vector<at::Tensor>> outputs(1);
  for (int r = 0; r < g->size; r++) outputs[0].push_back(all->select(0, r));
  std::vector<at::Tensor> inputs{*input};
  c10d::AllgatherOptions o;
  o.timeout = g->timeout;
  std::vector<c10::intrusive_ptr<c10d::Work>> works{g->pg->allgather(outputs, inputs, o)};
  g->issued++;
  auto done = [all, in, input](napi_env env) {
    std::vector<at::Tensor> out;
    for (int64_t r = 0; r < all->size(0); r++) {
      at::Tensor v = all->select(0, r).view(in.sizes());
      if (v.scalar_type() != in.scalar_type()) v = v.to(in.scalar_type());
      if (v.device() != in.device()) v = v.to(in.device());
      out.push_back(v);
    }
    return Refs(env, out);
  };
  return Await(a, g, "allGather", std::move(works), nullptr, done);
}

// distBarrier(handle) → Promise<undefined>: resolves once every rank has reached its barrier.
napi_value Barrier(const Args& a) {
  auto g = Joined(a.Int(0));
  c10d::BarrierOptions o;
  o.timeout = g->timeout;
  std::vector<c10::intrusive_ptr<c10d::Work>> works{g->pg->barrier(o)};
  g->issued++;
  return Await(a, g, "barrier", std::move(works), nullptr, [](napi_env env) { return Undefined(env); });
}

// distDestroy(handle): forgets the group. Its Gloo threads, connections and store close when the
// last call still waiting on it (which holds it) finishes — at once when none does. Destroying a
// destroyed group does nothing.
napi_value Destroy(const Args& a) {
  std::shared_ptr<Group> g;
  {
    std::lock_guard<std::mutex> lock(groups_mutex);
    auto it = groups.find(a.Int(0));
    if (it == groups.end()) return Undefined(a.env());
    g = std::move(it->second);
    groups.erase(it);
  }
  g.reset();  // outside the lock: closing joins Gloo's threads
  return Undefined(a.env());
}

napi_value Available(const Args& a) {
  napi_value v;
  napi_get_boolean(a.env(), true, &v);
  return v;
}

// distBackends() → the process group backends this addon was built with.
napi_value Backends(const Args& a) {
  napi_value arr, v;
  napi_create_array(a.env(), &arr);
  uint32_t i = 0;
  for (const char* name : {"gloo", PBRL_WITH_NCCL ? "nccl" : nullptr}) {
    if (name == nullptr) continue;
    napi_create_string_utf8(a.env(), name, NAPI_AUTO_LENGTH, &v);
    napi_set_element(a.env(), arr, i++, v);
  }
  return arr;
}

#else  // no c10d headers in this libtorch

napi_value Unavailable(const Args&) {
  throw ArgError("this addon was built without process groups: its libtorch has no c10d with Gloo (a build without USE_DISTRIBUTED); use a torch wheel from pytorch.org");
}

napi_value Available(const Args& a) {
  napi_value v;
  napi_get_boolean(a.env(), false, &v);
  return v;
}

#endif

}  // namespace

void RegisterDistributed(napi_env env, napi_value exports) {
  Export(env, exports, "distAvailable", Available);
#if PBRL_WITH_C10D
  Export(env, exports, "distInit", Init);
  Export(env, exports, "distJoin", Join);
  Export(env, exports, "distAllReduce", AllReduce);
  Export(env, exports, "distBroadcast", Broadcast);
  Export(env, exports, "distAllGather", AllGather);
  Export(env, exports, "distBarrier", Barrier);
  Export(env, exports, "distDestroy", Destroy);
  Export(env, exports, "distBackends", Backends);
#else
  for (const char* name : {"distInit", "distJoin", "distAllReduce", "distBroadcast", "distAllGather", "distBarrier", "distDestroy", "distBackends"})
    Export(env, exports, name, Unavailable);
#endif
}

}  // namespace pbrl
