// SPDX-License-Identifier: MIT
// pg.cpp - the accdma process group's work objects, point to point and
// barrier. Groups and worlds are in group.cpp, collectives in coll.cpp.
#include "pg.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include <unistd.h>

namespace accdma_torch {

// ---- WorkAccdma ------------------------------------------------------------

WorkAccdma::WorkAccdma(std::shared_ptr<Group> g, int rank, c10d::OpType type, const char* name,
                       int64_t timeout_ms)
    : c10d::Work(rank, type), g_(std::move(g)), name_(name), timeout_ms_(timeout_ms) {}

WorkAccdma::~WorkAccdma() {
  std::lock_guard<std::mutex> l(mutex_);
  if (pend && g_->aw) {
    std::lock_guard<std::mutex> gl(g_->mu);
    if (pend->state == PendSend::UNDECIDED) {
      pend->orphaned = true; // the group decides and finishes it
      return;
    }
    adopt_locked();
  }
  if (!completed_ && g_->aw && !send) {
    // Dropped before anyone saw it complete: its ops go on (or are done, with
    // the data still to be copied out of a staging buffer); the group
    // finishes them, now if they are done.
    auto o = std::make_unique<Orphan>();
    o->ol = ol;
    ol = atc_oplist{};
    o->bufs = std::move(bufs);
    o->regs = std::move(regs);
    o->on_ok = std::move(on_ok);
    std::lock_guard<std::mutex> gl(g_->mu);
    g_->orphans.push_back(std::move(o));
    g_->reap_locked();
    return;
  }
  release_locked(true);
}

void WorkAccdma::release_locked(bool reusable) {
  for (int i = 0; i < ol.n && source_ < 0; i++) // kept for sourceRank()
    if (ol.desc[i].kind == ACCDMA_OP_RECV && ol.st[i] == ACCDMA_OK)
      for (int r = 0; r < g_->size; r++)
        if (g_->devs[r] == ol.desc[i].src_dev)
          source_ = r;
  if (g_->aw)
    for (auto& b : bufs)
      if (reusable)
        atc_buf_put(g_->aw, &b);
  bufs.clear();
  if (!regs.empty()) {
    std::lock_guard<std::mutex> gl(g_->mu);
    g_->unregister_locked(regs, reusable);
  }
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
  if (pend || ms >= 0) {
    std::lock_guard<std::mutex> gl(g_->mu);
    try {
      if (pend)
        g_->decide_locked(*pend, ms >= 0);
    } catch (const std::exception& e) {
      exception_ = std::make_exception_ptr(std::runtime_error(e.what()));
      completed_ = true;
      cv_.notify_all();
      return true;
    }
    // Before blocking, every pending send goes (within its grace): the peer
    // this waits on may be waiting on one of them.
    if (ms >= 0 && !g_->pend.empty())
      g_->resolve_locked(true);
    if (pend && pend->state == PendSend::UNDECIDED)
      return false;
    adopt_locked();
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
    int stuck = atc_stuck(&ol);
    std::string cyc = g_->cycle_after_timeout(stuck >= 0 ? ol.desc[stuck].peer : -1);
    release_locked(atc_cancel(g_->aw, &ol, 1000));
    fail_locked(std::string(err) + who + cyc + "; the group is now broken", true);
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

int WorkAccdma::sourceRank() const {
  std::lock_guard<std::mutex> l(mutex_);
  if (!completed_ || exception_ || source_ < 0)
    throw std::runtime_error("accdma: sourceRank: not a recv that completed");
  return source_;
}

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
  if (completed_ || send || pend)
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

std::map<std::string, uint64_t> ProcessGroupAccdma::copy_counts() {
  return {{"registered_sends", g_->n_reg_send.load()},
          {"registered_recvs", g_->n_reg_recv.load()},
          {"staged_sends", g_->n_staged_send.load()},
          {"staged_recvs", g_->n_staged_recv.load()},
          {"restaged_sends", g_->n_restaged.load()}};
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
  g_->check_usable(); // and finishes what completed
  auto w = c10::make_intrusive<WorkAccdma>(g_, g_->rank, c10d::OpType::SEND, "send",
                                           g_->timeout_ms);
  w->outputs = {t};
  std::lock_guard<std::mutex> l(g_->mu);
  // FIFO per (dst, tag): a pending send on it is decided (and posted) first,
  // within its grace period; so at most one is pending per channel, the newest.
  if (!g_->pend.empty())
    g_->resolve_locked(true, dst, utag);
  // Every send of >= 64 KiB takes its note, whichever way it goes: the k-th
  // note is then always the k-th send's.
  atc_oplist rdy{};
  if (bytes >= kRegisterMin)
    g_->post_note_recv_locked(dst, tag, &rdy);
  auto keep_note = [&] {
    if (rdy.n)
      g_->notes.push_back(rdy);
  };
  accdma_key key;
  uint64_t off;
  RegTensor reg;
  bool dev = bytes && t.is_contiguous() && atc_dev_find(g_->aw, t.data_ptr(), bytes, &key, &off);
  if (!dev && g_->try_register(t, bytes, &reg)) {
    if (!g_->send_direct && rdy.n) {
      // From the tensor once its note comes, else staged: decided now if the
      // note is already here, else by whatever waits on it next.
      auto p = std::make_shared<PendSend>();
      p->dst = dst;
      p->utag = utag;
      p->bytes = bytes;
      p->t = t;
      p->rdy = rdy;
      p->reg = reg;
      p->deadline = std::chrono::steady_clock::now() + std::chrono::microseconds(grace_us(*g_, bytes));
      g_->pend.push_back(p);
      w->pend = p;
      g_->decide_locked(*p, false);
      return w;
    }
    if (!g_->send_direct) { // no note to wait for: staged
      std::vector<RegTensor> regs{reg};
      g_->unregister_locked(regs, true);
    } else {
      key = reg.key;
      off = 0;
      w->regs.push_back(reg);
      g_->n_reg_send++;
      dev = true;
    }
  }
  keep_note();
  if (dev) {
    // In device memory, or registered with send_direct: sent from where it
    // is, done once the recv has it.
    struct accdma_op op = {};
    op.kind = ACCDMA_OP_SEND;
    op.peer = g_->devs[dst];
    op.tag = utag;
    op.key = key;
    op.offset = off;
    op.length = bytes;
    atc_opdesc d = {ACCDMA_OP_SEND, dst, utag, bytes, "send", -1, 0, 0, -1};
    int rc = atc_post(g_->aw, &w->ol, &op, &d, g_->timeout_ms, nullptr);
    if (rc) {
      g_->unregister_locked(w->regs, true);
      if (rc == -ETIMEDOUT && g_->broken.empty())
        g_->broken = "accdma: posting a send failed: the queue stayed full";
      throw std::runtime_error(std::string("accdma: posting a send failed: ") + strerror(-rc));
    }
    return w;
  }
  w->send = g_->stage_send_locked(t, dst, utag, bytes);
  return w;
}

c10::intrusive_ptr<c10d::Work> ProcessGroupAccdma::recv(std::vector<at::Tensor>& tensors, int src,
                                                        int tag) {
  check_peer(*g_, src, "recv");
  return post_recv(tensors, src, tag, "recv");
}

// A recv of >= 64 KiB from group rank @src is posted: its note tells the
// sender (pend.cpp) that the send may go from its tensor.
void ProcessGroupAccdma::note(int src, int tag, uint64_t bytes) {
  if (src < 0 || bytes < kRegisterMin)
    return;
  std::lock_guard<std::mutex> l(g_->mu);
  g_->send_note_locked(src, tag);
}

// A recv from group rank @src, or from any member (-1: the library's any-source
// recv; the group's id in the tag keeps other groups' messages out).
c10::intrusive_ptr<c10d::Work> ProcessGroupAccdma::post_recv(std::vector<at::Tensor>& tensors,
                                                             int src, int tag, const char* what) {
  const at::Tensor& t = one_tensor(tensors, what);
  uint64_t utag = g_->user_tag(tag), bytes = nbytes(t);
  g_->check_usable(); // and finishes what completed
  auto w = c10::make_intrusive<WorkAccdma>(g_, g_->rank, c10d::OpType::RECV, "recv",
                                           g_->timeout_ms);
  struct accdma_op op = {};
  op.kind = ACCDMA_OP_RECV;
  op.peer = src < 0 ? ACCDMA_ANY_SOURCE : g_->devs[src];
  op.tag = utag;
  op.length = std::max<uint64_t>(bytes, 1);
  atc_opdesc d = {ACCDMA_OP_RECV, src, utag, bytes, what, -1, 0, 0, -1};
  w->outputs = {t};
  if (bytes && t.is_contiguous() && atc_dev_find(g_->aw, t.data_ptr(), bytes, &op.key,
                                                 &op.offset)) {
    // In device memory: the data lands in the tensor itself.
    check_post(*g_, atc_post_recv(g_->aw, &w->ol, &op, &d, bytes, g_->timeout_ms, nullptr),
               "a recv");
    note(src, tag, bytes);
    return w;
  }
  RegTensor reg;
  if (g_->try_register(t, bytes, &reg)) {
    // Registered: the engine copies the message into the tensor itself.
    op.key = reg.key;
    op.offset = 0;
    w->regs.push_back(reg);
    check_post(*g_, atc_post_recv(g_->aw, &w->ol, &op, &d, bytes, g_->timeout_ms, nullptr),
               "a recv");
    g_->n_reg_recv++;
    note(src, tag, bytes);
    return w;
  }
  g_->n_staged_recv++;
  atc_buf b = get_buf(*g_, bytes);
  w->bufs.push_back(b);
  op.key = b.key;
  check_post(*g_, atc_post_recv(g_->aw, &w->ol, &op, &d, op.length, g_->timeout_ms, nullptr),
             "a recv");
  at::Tensor out = t;
  w->on_ok = [out, b]() { stage_out(out, b); };
  note(src, tag, bytes);
  return w;
}

c10::intrusive_ptr<c10d::Work> ProcessGroupAccdma::recvAnysource(std::vector<at::Tensor>& tensors,
                                                                 int tag) {
  return post_recv(tensors, -1, tag, "recv");
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

} // namespace accdma_torch
