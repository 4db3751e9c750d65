// SPDX-License-Identifier: MIT
// pg.cpp - the accdma process group: worlds and groups, work objects,
// point-to-point and barrier. Collectives are in coll.cpp.
#include "pg.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

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
  if (!broken.empty())
    throw std::runtime_error("accdma: the process group is broken (" + broken +
                             "): every later call fails; create a new group");
}

void Group::mark_broken(const std::string& why) {
  std::lock_guard<std::mutex> l(mu);
  if (broken.empty())
    broken = why;
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
}

void Group::send_wait(const std::shared_ptr<SendEntry>& e, int64_t ms) {
  std::unique_lock<std::mutex> l(mu);
  char err[512];
  enum accdma_status st;
  reap_locked();
  while (!e->done && send_bytes > send_bound) {
    auto o = sends.front();
    if (!warned) {
      warned = true;
      fprintf(stderr,
              "accdma_torch: rank %d: %llu bytes of sends buffered, past the bound "
              "(ACCDMA_TORCH_SEND_BUFFER=%llu): sends now wait for their recvs\n",
              rank, (unsigned long long)send_bytes, (unsigned long long)send_bound);
    }
    int rc = atc_wait(aw, &o->ol, ms, err, sizeof(err), &st);
    if (rc == -ETIMEDOUT) {
      bool freed = atc_cancel(aw, &o->ol, 1000);
      std::string msg = std::string(err) + " (group rank " + std::to_string(rank) + ")";
      if (broken.empty())
        broken = msg;
      sends.pop_front();
      send_bytes -= o->bytes;
      if (freed)
        atc_buf_put(aw, &o->buf);
      atc_ops_free(&o->ol);
      o->done = true;
      throw std::runtime_error(msg);
    }
    sends.pop_front();
    send_bytes -= o->bytes;
    atc_buf_put(aw, &o->buf);
    atc_ops_free(&o->ol);
    o->done = true;
    if (rc) {
      std::string msg = std::string(err) + " (group rank " + std::to_string(rank) + ")";
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
    memcpy(b.ptr, t.data_ptr(), n);
  else
    at::from_blob(b.ptr, t.sizes(), t.options()).copy_(t);
}

void stage_out(const at::Tensor& t, const atc_buf& b) {
  uint64_t n = nbytes(t);
  if (!n)
    return;
  if (t.is_contiguous())
    memcpy(t.data_ptr(), b.ptr, n);
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

// ---- WorkAccdma ------------------------------------------------------------

WorkAccdma::WorkAccdma(std::shared_ptr<Group> g, int rank, c10d::OpType type, const char* name,
                       int64_t timeout_ms)
    : c10d::Work(rank, type), g_(std::move(g)), name_(name), timeout_ms_(timeout_ms) {}

WorkAccdma::~WorkAccdma() {
  std::lock_guard<std::mutex> l(mutex_);
  if (!completed_ && g_->aw && !send) {
    // Dropped without a wait: finish it here so its staging is not reused under it.
    char err[512];
    enum accdma_status st;
    if (atc_wait(g_->aw, &ol, timeout_ms_, err, sizeof(err), &st) == -ETIMEDOUT) {
      release_locked(atc_cancel(g_->aw, &ol, 1000));
      return;
    }
  }
  release_locked(true);
}

void WorkAccdma::release_locked(bool reusable) {
  if (g_->aw)
    for (auto& b : bufs)
      if (reusable)
        atc_buf_put(g_->aw, &b);
  bufs.clear();
  atc_ops_free(&ol);
}

void WorkAccdma::fail_locked(const std::string& msg, bool breaks) {
  if (breaks)
    g_->mark_broken(msg);
  exception_ = std::make_exception_ptr(std::runtime_error(msg));
  completed_ = true;
  cv_.notify_all();
}

bool WorkAccdma::progress_locked(int64_t ms) {
  if (completed_)
    return true;
  if (!g_->aw) {
    fail_locked("accdma: the backend was shut down", false);
    return true;
  }
  if (send) {
    if (ms < 0) {
      std::lock_guard<std::mutex> l(g_->mu);
      g_->reap_locked();
      if (!send->done && g_->send_bytes > g_->send_bound)
        return false;
    } else {
      try {
        g_->send_wait(send, ms);
      } catch (const std::exception& e) {
        fail_locked(e.what(), false);
        return true;
      }
    }
    completed_ = true;
    cv_.notify_all();
    return true;
  }
  if (ms < 0 && !atc_test(g_->aw, &ol))
    return false;
  char err[768];
  enum accdma_status st;
  int rc = atc_wait(g_->aw, &ol, ms < 0 ? 0 : ms, err, sizeof(err), &st);
  std::string who = " (" + std::string(name_) + ", group rank " + std::to_string(g_->rank) + ")";
  if (rc == -ETIMEDOUT) {
    release_locked(atc_cancel(g_->aw, &ol, 1000));
    fail_locked(std::string(err) + who + "; the group is now broken", true);
    return true;
  }
  if (rc) {
    bool lost = st == ACCDMA_ST_PEER_LOST || st == ACCDMA_ST_FLUSHED ||
                (rc != -EIO && rc != -EMSGSIZE);
    release_locked(true);
    fail_locked(std::string(err) + who + (lost ? "; the group is now broken" : ""), lost);
    return true;
  }
  try {
    if (on_ok)
      on_ok();
  } catch (const std::exception& e) {
    release_locked(true);
    fail_locked(e.what(), false);
    return true;
  }
  release_locked(true);
  completed_ = true;
  cv_.notify_all();
  return true;
}

bool WorkAccdma::isCompleted() {
  std::lock_guard<std::mutex> l(mutex_);
  return progress_locked(-1);
}

bool WorkAccdma::isSuccess() const {
  std::lock_guard<std::mutex> l(mutex_);
  return completed_ && !exception_;
}

std::exception_ptr WorkAccdma::exception() const {
  std::lock_guard<std::mutex> l(mutex_);
  return exception_;
}

bool WorkAccdma::wait(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> l(mutex_);
  int64_t ms = timeout.count() > 0 ? timeout.count() : timeout_ms_;
  progress_locked(ms);
  if (exception_)
    std::rethrow_exception(exception_);
  return true;
}

std::vector<at::Tensor> WorkAccdma::result() { return outputs; }

c10::intrusive_ptr<c10::ivalue::Future> WorkAccdma::getFuture() {
  auto f = c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()));
  try {
    wait();
    f->markCompleted(c10::IValue(outputs));
  } catch (...) {
    f->setError(std::current_exception());
  }
  return f;
}

void WorkAccdma::abort() {
  std::lock_guard<std::mutex> l(mutex_);
  if (completed_ || send)
    return;
  release_locked(atc_cancel(g_->aw, &ol, 1000));
  fail_locked(std::string("accdma: ") + name_ + " aborted", false);
}

// ---- the process group: point to point -------------------------------------

ProcessGroupAccdma::ProcessGroupAccdma(std::shared_ptr<Group> g)
    : c10d::ProcessGroup(g->rank, g->size), g_(std::move(g)) {}

ProcessGroupAccdma::~ProcessGroupAccdma() = default;

int64_t ProcessGroupAccdma::op_timeout(std::chrono::milliseconds t) const {
  return t.count() > 0 ? t.count() : g_->timeout_ms;
}

std::string ProcessGroupAccdma::broken_reason() {
  std::lock_guard<std::mutex> l(g_->mu);
  return g_->broken;
}

uint64_t ProcessGroupAccdma::buffered_bytes() {
  std::lock_guard<std::mutex> l(g_->mu);
  g_->reap_locked();
  return g_->send_bytes;
}

static void check_peer(const Group& g, int peer, const char* what) {
  if (peer < 0 || peer >= g.size)
    throw std::invalid_argument(std::string("accdma: ") + what + ": rank " +
                                std::to_string(peer) + " is not in the group (size " +
                                std::to_string(g.size) + ")");
}

static const at::Tensor& one_tensor(const std::vector<at::Tensor>& ts, const char* what) {
  if (ts.size() != 1)
    throw std::invalid_argument(std::string("accdma: ") + what + " takes one tensor, got " +
                                std::to_string(ts.size()));
  check_tensor(ts[0], what);
  return ts[0];
}

c10::intrusive_ptr<c10d::Work> ProcessGroupAccdma::send(std::vector<at::Tensor>& tensors, int dst,
                                                        int tag) {
  const at::Tensor& t = one_tensor(tensors, "send");
  check_peer(*g_, dst, "send");
  uint64_t utag = g_->user_tag(tag), bytes = nbytes(t);
  g_->check_usable();
  {
    std::lock_guard<std::mutex> l(g_->mu);
    g_->reap_locked();
  }
  auto e = std::make_shared<SendEntry>();
  e->buf = get_buf(*g_, bytes);
  e->bytes = std::max<uint64_t>(bytes, 1); // a zero-length tensor travels as one byte
  stage_in(e->buf, t);
  struct accdma_op op = {};
  op.kind = ACCDMA_OP_SEND;
  op.peer = g_->devs[dst];
  op.tag = utag;
  op.key = e->buf.key;
  op.length = e->bytes;
  atc_opdesc d = {ACCDMA_OP_SEND, dst, utag, bytes, "send", -1, 0, 0};
  int rc = atc_post(g_->aw, &e->ol, &op, &d, g_->timeout_ms, nullptr);
  if (rc) {
    atc_buf_put(g_->aw, &e->buf);
    atc_ops_free(&e->ol);
    check_post(*g_, rc, "a send");
  }
  {
    std::lock_guard<std::mutex> l(g_->mu);
    g_->sends.push_back(e);
    g_->send_bytes += e->bytes;
  }
  auto w = c10::make_intrusive<WorkAccdma>(g_, g_->rank, c10d::OpType::SEND, "send",
                                           g_->timeout_ms);
  w->send = e;
  return w;
}

c10::intrusive_ptr<c10d::Work> ProcessGroupAccdma::recv(std::vector<at::Tensor>& tensors, int src,
                                                        int tag) {
  const at::Tensor& t = one_tensor(tensors, "recv");
  check_peer(*g_, src, "recv");
  uint64_t utag = g_->user_tag(tag), bytes = nbytes(t);
  g_->check_usable();
  {
    std::lock_guard<std::mutex> l(g_->mu);
    g_->reap_locked();
  }
  auto w = c10::make_intrusive<WorkAccdma>(g_, g_->rank, c10d::OpType::RECV, "recv",
                                           g_->timeout_ms);
  atc_buf b = get_buf(*g_, bytes);
  w->bufs.push_back(b);
  struct accdma_op op = {};
  op.kind = ACCDMA_OP_RECV;
  op.peer = g_->devs[src];
  op.tag = utag;
  op.key = b.key;
  op.length = std::max<uint64_t>(bytes, 1);
  atc_opdesc d = {ACCDMA_OP_RECV, src, utag, bytes, "recv", -1, 0, 0};
  check_post(*g_, atc_post_recv(g_->aw, &w->ol, &op, &d, op.length, g_->timeout_ms, nullptr),
             "a recv");
  at::Tensor out = t;
  w->outputs = {out};
  w->on_ok = [out, b]() { stage_out(out, b); };
  return w;
}

c10::intrusive_ptr<c10d::Work> ProcessGroupAccdma::recvAnysource(std::vector<at::Tensor>&, int) {
  throw std::invalid_argument(
      "accdma: recv from any source is not supported yet (the library has no any-source "
      "recv): pass src");
}

c10::intrusive_ptr<c10d::Work> ProcessGroupAccdma::barrier(const c10d::BarrierOptions& opts) {
  g_->check_usable();
  int64_t ms = op_timeout(opts.timeout);
  auto w = c10::make_intrusive<WorkAccdma>(g_, g_->rank, c10d::OpType::BARRIER, "barrier", ms);
  atc_buf b = get_buf(*g_, 128);
  w->bufs.push_back(b);
  atc_group grp = {g_->aw, g_->devs.data(), g_->size, g_->rank, g_->coll_tag(), ms, "barrier"};
  check_post(*g_, atc_plan_barrier(&grp, &w->ol, &b), "a barrier");
  return w;
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
