// SPDX-License-Identifier: MIT
// pend.cpp - sends of ordinary tensors that go from the tensor itself when
// their receiver is ready (one copy), else staged once a grace period ends,
// and the ready notes receivers send to say so.
//
// Why notes and not withdrawing the send: the library numbers a send when it
// is posted, and a canceled send leaves a marker that fails the recv with
// its number (PEER_ERROR), so a send posted from the tensor cannot be taken
// back and posted again staged. A note instead tells the sender, before it
// posts, that the matching recv is there: the k-th recv of >= 64 KiB on
// (src, tag) sends the k-th note, and the sender's k-th send of >= 64 KiB to
// that peer on that tag takes it (recvs from any source send none: fewer
// notes than recvs only costs a staging copy). So a send posted from its
// tensor always has its recv posted, and completes without its receiver's
// host: nothing else waits on it.
#include "pg.hpp"

#include <sched.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace accdma_torch {

namespace {

using Clock = std::chrono::steady_clock;

// Where notes are sent from and received into: their one byte means nothing.
constexpr uint64_t kNoteSendOff = 0, kNoteRecvOff = 64;
// Notes (sent, or recvs no send waits on) left pending at most: a quarter of
// the queue the world opens with.
constexpr size_t kMaxNotes = 256;

// A post failed with the group's lock held (check_post() would take it).
[[noreturn]] void post_failed_locked(Group& g, int rc) {
  std::string msg = std::string("accdma: posting a send failed: ") + strerror(-rc);
  if (rc == -ETIMEDOUT) {
    msg += " (the queue stayed full)";
    if (g.broken.empty())
      g.broken = msg;
  }
  throw std::runtime_error(msg);
}

} // namespace

uint64_t Group::note_tag(int tag) const {
  // Collectives use the collective bit with user bits 0; tags are < 2^31.
  return ((uint64_t)gid << ATC_GID_SHIFT) | ATC_TAG_COLL | ((uint64_t)tag + 1);
}

void Group::send_note_locked(int src, int tag) {
  if (!notes_on || (!note_buf.key && atc_buf_get(aw, 4096, &note_buf)))
    return; // no note: the sender stages after its grace period
  struct accdma_op op = {};
  op.kind = ACCDMA_OP_SEND;
  op.peer = devs[src];
  op.tag = note_tag(tag);
  op.key = note_buf.key;
  op.offset = kNoteSendOff;
  op.length = 1;
  atc_opdesc d = {ACCDMA_OP_SEND, src, op.tag, 1, "recv (ready note)", -1, 0, 0, -1};
  atc_oplist ol{};
  if (atc_post(aw, &ol, &op, &d, timeout_ms, nullptr)) {
    atc_ops_free(&ol);
    return; // fewer notes than recvs is safe
  }
  notes.push_back(ol);
}

void Group::post_note_recv_locked(int dst, int tag, atc_oplist* ol) {
  auto chan = std::make_pair(dst, tag);
  if (!notes_on || quiet.count(chan))
    return;
  if (notes.size() >= kMaxNotes) {
    // A receiver that recvs from any source sends no notes, and each note
    // recv left waiting holds a queue slot: this channel stages from now on
    // (skipping one note recv and not the next would pair notes wrongly).
    quiet.insert(chan);
    return;
  }
  if (!note_buf.key && atc_buf_get(aw, 4096, &note_buf)) {
    notes_on = false;
    return;
  }
  struct accdma_op op = {};
  op.kind = ACCDMA_OP_RECV;
  op.peer = devs[dst];
  op.tag = note_tag(tag);
  op.key = note_buf.key;
  op.offset = kNoteRecvOff;
  op.length = 1;
  atc_opdesc d = {ACCDMA_OP_RECV, dst, op.tag, 1, "send (ready note)", -1, 0, 0, -1};
  if (atc_post(aw, ol, &op, &d, timeout_ms, nullptr)) {
    // A send without its note recv would take the next send's note: from
    // now on every send of this group stages.
    atc_ops_free(ol);
    notes_on = false;
  }
}

std::shared_ptr<SendEntry> Group::stage_send_locked(const at::Tensor& t, int dst, uint64_t utag,
                                                    uint64_t bytes) {
  auto e = std::make_shared<SendEntry>();
  e->buf = get_buf(*this, bytes);
  e->bytes = std::max<uint64_t>(bytes, 1); // a zero-length tensor travels as one byte
  stage_in(e->buf, t);
  struct accdma_op op = {};
  op.kind = ACCDMA_OP_SEND;
  op.peer = devs[dst];
  op.tag = utag;
  op.key = e->buf.key;
  op.length = e->bytes;
  atc_opdesc d = {ACCDMA_OP_SEND, dst, utag, bytes, "send", -1, 0, 0, -1};
  int rc = atc_post(aw, &e->ol, &op, &d, timeout_ms, nullptr);
  if (rc) {
    atc_buf_put(aw, &e->buf);
    atc_ops_free(&e->ol);
    post_failed_locked(*this, rc);
  }
  sends.push_back(e);
  send_bytes += e->bytes;
  n_staged_send++;
  return e;
}

// Whether @p's note came; with @wait, waiting for it until @p's deadline.
// In whole milliseconds a library wait: this thread then runs the device's
// passes itself and matches the note as it lands, where a look now and then
// left it to an engine woken for it (0.5-1 ms a 16 MiB round where the ranks
// are not bound to a CPU each); it stays under the 1 s from which a timed-out
// wait is logged. The last part of a millisecond, yielding between looks.
static bool note_came(atc_world* aw, PendSend& p, bool wait) {
  if (!p.rdy.n)
    return false;
  for (;;) {
    if (atc_test(aw, &p.rdy))
      return p.rdy.st[0] == ACCDMA_OK;
    if (!wait)
      return false;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(p.deadline - Clock::now()).count();
    if (left >= 1) {
      char err[256];
      enum accdma_status failed;
      (void)atc_wait(aw, &p.rdy, std::min<int64_t>(left, 100), err, sizeof(err), &failed);
    } else if (Clock::now() >= p.deadline) {
      return false;
    } else {
      sched_yield();
    }
  }
}

// Races: a note that lands after its send was staged is taken by that send's
// note recv (kept in notes), never by the next send's; and deciding, a Work
// dropping its entry and posting on the channel all hold mu, so an entry is
// decided once and its orphaned flag is seen by whoever decides it.
void Group::decide_locked(PendSend& p, bool wait) {
  if (p.state != PendSend::UNDECIDED)
    return;
  bool ready = note_came(aw, p, wait);
  if (!ready && Clock::now() < p.deadline && !wait)
    return;
  std::vector<RegTensor> regs{p.reg};
  if (ready) {
    struct accdma_op op = {};
    op.kind = ACCDMA_OP_SEND;
    op.peer = devs[p.dst];
    op.tag = p.utag;
    op.key = p.reg.key;
    op.length = p.bytes;
    atc_opdesc d = {ACCDMA_OP_SEND, p.dst, p.utag, p.bytes, "send", -1, 0, 0, -1};
    int rc = atc_post(aw, &p.ol, &op, &d, timeout_ms, nullptr);
    if (rc) {
      atc_ops_free(&p.ol);
      post_failed_locked(*this, rc);
    }
    atc_ops_free(&p.rdy);
    n_reg_send++;
    p.state = PendSend::DIRECT;
  } else {
    p.staged = stage_send_locked(p.t, p.dst, p.utag, p.bytes);
    unregister_locked(regs, true);
    p.reg = RegTensor{};
    if (p.rdy.n) { // its note is still to come: a later reap consumes it
      notes.push_back(p.rdy);
      p.rdy = atc_oplist{};
    }
    n_restaged++;
    p.state = PendSend::STAGED;
  }
  p.t = at::Tensor();
  for (auto it = pend.begin(); it != pend.end(); ++it)
    if (it->get() == &p) {
      pend.erase(it);
      break;
    }
  if (p.orphaned && p.state == PendSend::DIRECT) {
    auto o = std::make_unique<Orphan>();
    o->ol = p.ol;
    p.ol = atc_oplist{};
    o->regs.push_back(p.reg);
    p.reg = RegTensor{};
    orphans.push_back(std::move(o));
  }
}

void Group::resolve_locked(bool wait, int dst, uint64_t utag) {
  auto list = pend; // decide_locked() takes entries out of pend
  for (auto& p : list) {
    if (dst >= 0 && (p->dst != dst || p->utag != utag))
      continue;
    if (dst >= 0) {
      decide_locked(*p, wait); // its channel's next send waits on this: errors are the caller's
      continue;
    }
    try {
      decide_locked(*p, wait);
    } catch (const std::exception&) {
      // Left pending: its own Work reports the error when it is waited on.
    }
  }
}

void WorkAccdma::adopt_locked() {
  if (!pend || pend->state == PendSend::UNDECIDED)
    return;
  if (pend->state == PendSend::DIRECT) {
    ol = pend->ol;
    pend->ol = atc_oplist{};
    regs.push_back(pend->reg);
    pend->reg = RegTensor{};
  } else {
    send = pend->staged;
  }
  pend.reset();
}

uint64_t grace_us(const Group& g, uint64_t bytes) {
  // The floor covers the note's trip when the receiver's engine naps.
  if (!g.grace_us_per_mib)
    return 0;
  return std::max<uint64_t>(50, (uint64_t)g.grace_us_per_mib * bytes >> 20);
}

} // namespace accdma_torch
