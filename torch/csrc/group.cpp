// SPDX-License-Identifier: MIT
// group.cpp - what the accdma process groups share: the worlds (one per
// member set), each group's state and buffered sends, staging helpers, and
// the creation of a group over torch's store.
#include "pg.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <thread>

#include <unistd.h>

namespace accdma_torch {

namespace {

struct WorldRef {
  atc_world* aw;
  std::vector<int64_t> globals; // world device -> default-group rank
};

std::mutex reg_mu;
std::vector<WorldRef> worlds;
std::vector<std::weak_ptr<Group>> groups;

constexpr uint64_t kDefaultSendBound = 64ull << 20;
// A pending send's grace period, in microseconds per MiB: about what staging
// a tensor costs here (16 MiB: ~2.3 ms at ~7 GB/s), so a send whose receiver
// is late pays at most about twice the staged send's copy.
constexpr uint64_t kDefaultGraceUsPerMiB = 140;

uint64_t env_bytes(const char* name, uint64_t dflt) {
  const char* v = getenv(name);
  if (!v || !*v)
    return dflt;
  char* end;
  unsigned long long n = strtoull(v, &end, 0);
  if (end == v)
    throw std::invalid_argument(std::string("accdma: ") + name + "='" + v +
                                "': expected a number of bytes (K, M, G suffixes)");
  switch (*end) {
  case 'k': case 'K': n <<= 10; end++; break;
  case 'm': case 'M': n <<= 20; end++; break;
  case 'g': case 'G': n <<= 30; end++; break;
  default: break;
  }
  if (*end)
    throw std::invalid_argument(std::string("accdma: ") + name + "='" + v +
                                "': expected a number of bytes (K, M, G suffixes)");
  return n;
}

std::string store_get(const c10::intrusive_ptr<c10d::Store>& store, const std::string& key) {
  auto v = store->get(key);
  return std::string(v.begin(), v.end());
}

void store_set(const c10::intrusive_ptr<c10d::Store>& store, const std::string& key,
               const std::string& val) {
  store->set(key, std::vector<uint8_t>(val.begin(), val.end()));
}

} // namespace

// ---- Group ---------------------------------------------------------------

uint64_t Group::user_tag(int tag) const {
  if (tag < 0)
    throw std::invalid_argument("accdma: tag " + std::to_string(tag) +
                                " is negative: tags must be >= 0");
  return ((uint64_t)gid << ATC_GID_SHIFT) | (uint64_t)tag;
}

uint64_t Group::coll_tag() const { return ((uint64_t)gid << ATC_GID_SHIFT) | ATC_TAG_COLL; }

void Group::check_usable() {
  std::lock_guard<std::mutex> l(mu);
  if (!aw)
    throw std::runtime_error("accdma: the backend was shut down");
  reap_locked();
  if (!pend.empty())
    resolve_locked(false); // a send whose note came, or whose grace ended, goes now
  if (!broken.empty())
    throw std::runtime_error("accdma: the process group is broken (" + broken +
                             "): every later call fails; create a new group");
}

void Group::mark_broken(const std::string& why) {
  std::lock_guard<std::mutex> l(mu);
  if (broken.empty())
    broken = why;
}

std::string Group::cycle_after_timeout(int peer) {
  if (!store || peer < 0 || peer >= size)
    return "";
  auto key = [](int r) { return "accdma_stuck_" + std::to_string(r); };
  try {
    store_set(store, key(rank), std::to_string(peer));
    // The others time out about when we do: give each link a moment to appear.
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(2000);
    std::vector<int> chain{rank};
    int cur = peer;
    while (cur != rank) {
      if (std::find(chain.begin(), chain.end(), cur) != chain.end())
        return ""; // a cycle that does not pass here: the others report it
      chain.push_back(cur);
      while (!store->check({key(cur)})) {
        if (std::chrono::steady_clock::now() > deadline)
          return "";
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      cur = atoi(store_get(store, key(cur)).c_str());
    }
    std::string s = "; cycle of ranks waiting on each other: ";
    for (int r : chain)
      s += std::to_string(r) + " -> ";
    return s + std::to_string(rank);
  } catch (const std::exception&) {
    return ""; // the store is gone too: nothing more to say
  }
}

void Group::reap_locked() {
  char err[512];
  enum accdma_status st;
  while (!sends.empty() && atc_test(aw, &sends.front()->ol)) {
    auto e = sends.front();
    sends.pop_front();
    if (atc_wait(aw, &e->ol, 0, err, sizeof(err), &st) && broken.empty())
      broken = std::string("a buffered send failed after it returned: ") + err;
    atc_ops_free(&e->ol);
    atc_buf_put(aw, &e->buf);
    send_bytes -= e->bytes;
    e->done = true;
  }
  for (auto it = notes.begin(); it != notes.end();) {
    if (!atc_test(aw, &*it)) {
      ++it;
      continue;
    }
    atc_ops_free(&*it); // a note's status says nothing the data ops do not
    it = notes.erase(it);
  }
  for (auto it = orphans.begin(); it != orphans.end();) {
    Orphan& o = **it;
    if (!atc_test(aw, &o.ol)) {
      ++it;
      continue;
    }
    if (!atc_wait(aw, &o.ol, 0, err, sizeof(err), &st) && o.on_ok) {
      try {
        o.on_ok();
      } catch (const std::exception&) {
        // Nobody holds its Work: there is no one to tell.
      }
    }
    for (auto& b : o.bufs)
      atc_buf_put(aw, &b);
    unregister_locked(o.regs, true);
    atc_ops_free(&o.ol);
    it = orphans.erase(it);
  }
}

void Group::send_wait(const std::shared_ptr<SendEntry>& e, int64_t ms) {
  std::unique_lock<std::mutex> l(mu);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  char err[512];
  enum accdma_status st;
  reap_locked();
  while (!e->done && send_bytes > send_bound) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now())
                    .count();
    if (sends.empty()) {
      // Other threads are waiting on the rest: let them finish.
      if (left <= 0)
        throw std::runtime_error("accdma: timed out after " + std::to_string(ms) +
                                 " ms waiting for buffered sends to be received");
      l.unlock();
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      l.lock();
      continue;
    }
    auto o = sends.front();
    sends.pop_front(); // ours to wait on: reaping and other waiters leave it alone
    if (!warned) {
      warned = true;
      fprintf(stderr,
              "accdma_torch: rank %d: %llu bytes of sends buffered, past the bound "
              "(ACCDMA_TORCH_SEND_BUFFER=%llu): sends now wait for their recvs\n",
              rank, (unsigned long long)send_bytes, (unsigned long long)send_bound);
    }
    // Not under the lock: another thread's call on the group may be what
    // lets this send's recv match.
    l.unlock();
    int rc = atc_wait(aw, &o->ol, left > 0 ? left : 0, err, sizeof(err), &st);
    std::string cyc;
    bool freed = true;
    if (rc == -ETIMEDOUT) {
      int stuck = atc_stuck(&o->ol);
      cyc = cycle_after_timeout(stuck >= 0 ? o->ol.desc[stuck].peer : -1);
      freed = atc_cancel(aw, &o->ol, 1000);
    }
    l.lock();
    send_bytes -= o->bytes;
    if (freed)
      atc_buf_put(aw, &o->buf);
    atc_ops_free(&o->ol);
    o->done = true;
    if (rc) {
      std::string msg = std::string(err) + " (group rank " + std::to_string(rank) + ")" + cyc;
      if (broken.empty())
        broken = msg;
      throw std::runtime_error(msg);
    }
  }
}

Group::~Group() { drain(); }

void Group::drain() {
  // The peers may still be receiving what was buffered: let it land.
  char err[512];
  enum accdma_status st;
  std::lock_guard<std::mutex> l(mu);
  if (!aw)
    return;
  // A broken group's peers are gone or stuck: cancel at once.
  int64_t ms = broken.empty() ? std::min<int64_t>(timeout_ms, 10000) : 0;
  resolve_locked(true); // every pending send goes, staged unless its note came
  for (auto& e : sends) {
    if (atc_wait(aw, &e->ol, ms, err, sizeof(err), &st) ==
            -ETIMEDOUT &&
        !atc_cancel(aw, &e->ol, 1000))
      e->buf.key = 0; // still named by an op: never reused
    atc_buf_put(aw, &e->buf);
    atc_ops_free(&e->ol);
    e->done = true;
  }
  sends.clear();
  for (auto& o : orphans) {
    if (atc_wait(aw, &o->ol, ms, err, sizeof(err), &st) != -ETIMEDOUT) {
      if (o->on_ok)
        try {
          o->on_ok();
        } catch (const std::exception&) {
        }
      for (auto& b : o->bufs)
        atc_buf_put(aw, &b);
      unregister_locked(o->regs, true);
    } else if (atc_cancel(aw, &o->ol, 1000)) {
      for (auto& b : o->bufs)
        atc_buf_put(aw, &b);
      unregister_locked(o->regs, true);
    } else {
      unregister_locked(o->regs, false);
    }
    atc_ops_free(&o->ol);
  }
  orphans.clear();
  // Notes are eager (they land whether or not their recv is posted): what is
  // left is mostly recvs no note will come to (their receivers recv'd from
  // any source).
  for (auto& o : notes) {
    if (!atc_test(aw, &o))
      atc_cancel(aw, &o, 100);
    atc_ops_free(&o);
  }
  notes.clear();
}

bool Group::try_register(const at::Tensor& t, uint64_t bytes, RegTensor* out) {
  if (!reg_on || bytes < kRegisterMin || !t.is_contiguous() || !aw)
    return false;
  int rc = accdma_mem_register(aw->w, aw->dev, t.data_ptr(), bytes, &out->key);
  if (rc == -EPERM || rc == -EOPNOTSUPP) {
    reg_on = false; // said once by the library; staging from now on
    return false;
  }
  if (rc)
    return false; // out of region slots: stage this one
  out->t = t;
  return true;
}

void Group::unregister_locked(std::vector<RegTensor>& regs, bool reusable) {
  for (auto& r : regs)
    if (!reusable || !aw || accdma_mem_free(aw->w, aw->dev, r.key))
      pinned.push_back(r.t); // an op may still name it: its memory must stay
  regs.clear();
}

// ---- helpers -------------------------------------------------------------

void check_tensor(const at::Tensor& t, const char* what) {
  if (!t.device().is_cpu())
    throw std::invalid_argument(std::string("accdma: ") + what +
                                ": only CPU tensors are supported, got " + t.device().str());
  if (t.is_sparse())
    throw std::invalid_argument(std::string("accdma: ") + what +
                                ": sparse tensors are not supported");
}

uint64_t nbytes(const at::Tensor& t) { return (uint64_t)t.numel() * t.element_size(); }

atc_buf get_buf(Group& g, uint64_t bytes) {
  atc_buf b{};
  int rc = atc_buf_get(g.aw, bytes, &b);
  if (rc)
    throw std::runtime_error("accdma: no device memory for a " + std::to_string(bytes) +
                             "-byte staging buffer (" + strerror(-rc) +
                             "; ACCDMA_MEM_SIZE sets each device's)");
  return b;
}

// Non-contiguous tensors are gathered/scattered by torch's copy.
void stage_in(const atc_buf& b, const at::Tensor& t) {
  uint64_t n = nbytes(t);
  if (!n)
    return;
  if (t.is_contiguous())
    atc_copy(b.ptr, t.data_ptr(), n);
  else
    at::from_blob(b.ptr, t.sizes(), t.options()).copy_(t);
}

void stage_out(const at::Tensor& t, const atc_buf& b) {
  uint64_t n = nbytes(t);
  if (!n)
    return;
  if (t.is_contiguous())
    atc_copy(t.data_ptr(), b.ptr, n);
  else
    const_cast<at::Tensor&>(t).copy_(at::from_blob(b.ptr, t.sizes(), t.options()));
}

void check_post(Group& g, int rc, const char* what) {
  if (!rc)
    return;
  std::string msg = std::string("accdma: posting ") + what + " failed: " + strerror(-rc);
  if (rc == -ETIMEDOUT) {
    msg += " (the queue stayed full)";
    g.mark_broken(msg);
  }
  throw std::runtime_error(msg);
}

// ---- creation --------------------------------------------------------------

c10::intrusive_ptr<ProcessGroupAccdma> create(const c10::intrusive_ptr<c10d::Store>& store,
                                              int rank, int size, std::vector<int64_t> globals,
                                              int64_t timeout_ms) {
  std::lock_guard<std::mutex> l(reg_mu);
  auto g = std::make_shared<Group>();
  g->rank = rank;
  g->size = size;
  g->timeout_ms = timeout_ms;
  g->send_bound = env_bytes("ACCDMA_TORCH_SEND_BUFFER", kDefaultSendBound);
  g->reg_on = env_bytes("ACCDMA_TORCH_REGISTER", 1) != 0;
  g->send_direct = env_bytes("ACCDMA_TORCH_SEND_DIRECT", 0) != 0;
  g->grace_us_per_mib = (int64_t)env_bytes("ACCDMA_TORCH_SEND_GRACE", kDefaultGraceUsPerMiB);
  g->store = store;
  if (globals.empty())
    for (int i = 0; i < size; i++)
      globals.push_back(i);
  if ((int)globals.size() != size || rank < 0 || rank >= size)
    throw std::invalid_argument("accdma: group rank " + std::to_string(rank) + " of " +
                                std::to_string(size) + " with " +
                                std::to_string(globals.size()) + " members");
  // The first world that holds every member (the same on every member:
  // worlds are opened in the order torch creates groups).
  for (auto& w : worlds) {
    std::vector<int> devs;
    for (int64_t r : globals) {
      auto it = std::find(w.globals.begin(), w.globals.end(), r);
      if (it == w.globals.end())
        break;
      devs.push_back((int)(it - w.globals.begin()));
    }
    if ((int)devs.size() == size && devs[rank] == w.aw->dev) {
      g->aw = w.aw;
      g->devs = devs;
      break;
    }
  }
  if (!g->aw) {
    int fd = -1, port;
    store_set(store, "accdma_here_" + std::to_string(rank), "1");
    if (rank == 0) {
      port = atc_pick_port(&fd);
      if (port < 0)
        throw std::runtime_error(std::string("accdma: no free port to name the rendezvous: ") +
                                 strerror(-port));
      store_set(store, "accdma_port", std::to_string(port));
    } else {
      port = atoi(store_get(store, "accdma_port").c_str());
    }
    std::vector<std::string> keys;
    for (int r = 0; r < size; r++)
      keys.push_back("accdma_here_" + std::to_string(r));
    store->wait(keys); // every member is here: the join does not wait on imports
    char err[512];
    atc_world* aw = nullptr;
    int rc = atc_world_open(rank, size, port, fd, &aw, err, sizeof(err));
    if (rc) {
      if (fd >= 0)
        close(fd);
      throw std::runtime_error(err);
    }
    worlds.push_back({aw, globals});
    g->aw = aw;
    for (int i = 0; i < size; i++)
      g->devs.push_back(i);
  }
  // The group's id: above every id any member used in this world, so no
  // pair of devices sees two groups with one id.
  store_set(store, "accdma_gid_" + std::to_string(rank), std::to_string(g->aw->next_gid));
  uint32_t gid = 0;
  for (int r = 0; r < size; r++)
    gid = std::max<uint32_t>(gid, (uint32_t)atol(store_get(store, "accdma_gid_" +
                                                           std::to_string(r)).c_str()));
  if (gid > ATC_GID_MAX)
    throw std::runtime_error("accdma: more than 65535 groups on one world");
  g->gid = gid;
  g->aw->next_gid = gid + 1;
  groups.push_back(g);
  return c10::make_intrusive<ProcessGroupAccdma>(g);
}

at::Tensor empty(ProcessGroupAccdma& pg, at::IntArrayRef sizes, at::ScalarType dtype) {
  auto g = pg.group();
  g->check_usable();
  int64_t numel = 1;
  for (auto s : sizes)
    numel *= s;
  uint64_t bytes = (uint64_t)numel * c10::elementSize(dtype);
  void* p = nullptr;
  int rc = atc_dev_alloc(g->aw, bytes, &p);
  if (rc)
    throw std::runtime_error("accdma: no device memory for a " + std::to_string(bytes) +
                             "-byte tensor (" + strerror(-rc) +
                             "; ACCDMA_MEM_SIZE sets each device's)");
  // The deleter holds the group: the world outlives the tensor.
  auto del = [g](void* q) {
    if (g->aw)
      atc_dev_free(g->aw, q);
  };
  return at::from_blob(p, sizes, del, at::TensorOptions().dtype(dtype)).zero_();
}

void shutdown() {
  std::lock_guard<std::mutex> l(reg_mu);
  for (auto& wg : groups) {
    auto g = wg.lock();
    if (!g)
      continue;
    g->drain();
    std::lock_guard<std::mutex> gl(g->mu);
    g->aw = nullptr;
  }
  groups.clear();
  for (auto& w : worlds)
    atc_world_close(w.aw);
  worlds.clear();
}

} // namespace accdma_torch
