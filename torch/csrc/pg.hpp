// SPDX-License-Identifier: MIT
// pg.hpp - the accdma process group for torch 1.13's c10d: its shared
// state (Group), its work objects and the ProcessGroup subclass.
#pragma once

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <atomic>
#include <chrono>
#include <deque>
#include <map>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "../core/atc.h"

namespace accdma_torch {

// A send whose tensor was copied into device memory: the send's Work may
// complete before the peer's recv matches it (bounded buffering).
struct SendEntry {
  atc_oplist ol{};
  atc_buf buf{};
  uint64_t bytes = 0;
  bool done = false;
};

// An ordinary tensor registered with the library for one op (accdma_mem_register):
// the engines move its bytes with no staging copy (over shm, the other
// process's engine reaches it by cross-memory attach). The reference keeps
// its memory alive while an op may name it.
struct RegTensor {
  accdma_key key = 0;
  at::Tensor t;
};

// The ops of a Work dropped before it completed: they go on, and a later
// call on the group (or its end) finishes them, copying results out.
struct Orphan {
  atc_oplist ol{};
  std::vector<atc_buf> bufs;
  std::vector<RegTensor> regs;
  std::function<void()> on_ok;
};

// A send of an ordinary tensor (registered, >= 64 KiB) whose way is not
// decided yet: it goes from the tensor itself (one copy, by the receiver's
// engine) once the receiver's ready note says the matching recv is posted,
// else it is staged when its grace period ends, so a blocking send never
// waits on a recv that may come only after it (the permutation).
struct PendSend {
  enum State { UNDECIDED, DIRECT, STAGED };
  int dst = 0;
  uint64_t utag = 0, bytes = 0;
  at::Tensor t;
  atc_oplist rdy{}; // the recv of the receiver's ready note for this send
  std::chrono::steady_clock::time_point deadline;
  State state = UNDECIDED;
  bool orphaned = false;            // its Work is gone: the group finishes it
  atc_oplist ol{};                  // DIRECT: the send
  RegTensor reg;                    // the tensor, registered
  std::shared_ptr<SendEntry> staged; // STAGED: the buffered send
};

// What every Work of a group shares: the world, the members, the buffered
// sends and whether the group is broken.
struct Group {
  atc_world* aw = nullptr;
  std::vector<int> devs; // group rank -> world device
  int rank = 0, size = 0;
  uint32_t gid = 0;
  int64_t timeout_ms = 0;
  uint64_t send_bound = 0; // bytes of sends that may wait buffered for their recv
  c10::intrusive_ptr<c10d::Store> store; // the group's (prefixed) store
  std::mutex mu; // the fields below
  std::string broken; // empty while usable
  std::deque<std::shared_ptr<SendEntry>> sends;
  uint64_t send_bytes = 0;
  bool warned = false;
  std::deque<std::unique_ptr<Orphan>> orphans;
  std::deque<std::shared_ptr<PendSend>> pend; // undecided sends, at most one per (dst, tag)
  std::deque<atc_oplist> notes; // ready notes sent, and ready recvs no send waits on
  atc_buf note_buf{};           // what ready notes are sent from and received into
  bool notes_on = true;         // cleared if a note recv could not be posted
  std::set<std::pair<int, int>> quiet; // (dst, tag) whose sends take no notes any more
  int64_t grace_us_per_mib = 0; // a pending send's grace period, per MiB (ACCDMA_TORCH_SEND_GRACE)
  // Registering ordinary tensors (ACCDMA_TORCH_REGISTER, ACCDMA_TORCH_SEND_DIRECT):
  bool reg_on = true;       // sends and recvs register contiguous tensors
  bool send_direct = false; // sends always from the tensor, no grace: done once the recv has it
  std::vector<at::Tensor> pinned; // registered tensors an op may still name: never freed
  // How each p2p op moved its tensor (tests check which path was taken).
  std::atomic<uint64_t> n_reg_send{0}, n_reg_recv{0}, n_staged_send{0}, n_staged_recv{0};
  std::atomic<uint64_t> n_restaged{0}; // pending sends whose grace ended: staged

  // The tag of the ready notes for user tag @tag: a collective tag no plan uses.
  uint64_t note_tag(int tag) const;
  // A recv of >= 64 KiB from @src on @tag was posted: tell @src (its send may
  // then go from its tensor). The caller holds mu.
  void send_note_locked(int src, int tag);
  // Post the recv of the ready note for a send of >= 64 KiB to @dst on @tag.
  void post_note_recv_locked(int dst, int tag, atc_oplist* ol);
  // Decide @p: from its tensor if its note came, else staged once its grace
  // ended (@wait: waiting for the note until then). The caller holds mu.
  void decide_locked(PendSend& p, bool wait);
  // Decide every pending send (@wait: as decide_locked), or only the one on
  // (@dst, @utag) when @dst >= 0. The caller holds mu.
  void resolve_locked(bool wait, int dst = -1, uint64_t utag = 0);
  // Stage @t into device memory and post it as a buffered send. The caller holds mu.
  std::shared_ptr<SendEntry> stage_send_locked(const at::Tensor& t, int dst, uint64_t utag,
                                               uint64_t bytes);

  // Register @t (contiguous, @bytes) for one op: false to stage it instead
  // (too small, not allowed here, out of region slots).
  bool try_register(const at::Tensor& t, uint64_t bytes, RegTensor* out);
  // Give registered tensors back once their ops are done (@reusable), else
  // keep them pinned. The caller holds mu.
  void unregister_locked(std::vector<RegTensor>& regs, bool reusable);

  ~Group();
  // Wait (bounded) for the buffered sends to land and free their staging.
  void drain();
  uint64_t user_tag(int tag) const;
  uint64_t coll_tag() const;
  // Throws if the group is broken (every call after a timeout or a lost peer);
  // finishes the buffered sends and orphans that completed.
  void check_usable();
  void mark_broken(const std::string& why);
  // After a timeout waiting on group rank @peer: publish it in the store and
  // follow the other members' entries; "; cycle of ranks ..." if one comes
  // back here, else "".
  std::string cycle_after_timeout(int peer);
  // Consume the buffered sends and orphans that completed; the caller holds mu.
  void reap_locked();
  // Wait until @e is done or the buffered bytes are within the bound.
  void send_wait(const std::shared_ptr<SendEntry>& e, int64_t timeout_ms);
};

// A Work over an op list: complete once every op is; runs @on_ok then.
class WorkAccdma : public c10d::Work {
 public:
  WorkAccdma(std::shared_ptr<Group> g, int rank, c10d::OpType type, const char* name,
             int64_t timeout_ms);
  ~WorkAccdma() override;
  bool isCompleted() override;
  bool isSuccess() const override;
  std::exception_ptr exception() const override;
  bool wait(std::chrono::milliseconds timeout = kNoTimeout) override;
  std::vector<at::Tensor> result() override;
  // A recv's source (group rank), once complete: dist.recv(t) without src returns it.
  int sourceRank() const override;
  void abort() override;
  // Waits, then returns a completed future (DDP's comm hooks take one).
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;

  atc_oplist ol{};
  std::vector<atc_buf> bufs;        // staging, back to the pool once done
  std::function<void()> on_ok;      // copies results out of staging
  std::vector<at::Tensor> outputs;
  std::shared_ptr<SendEntry> send;  // a send: done when buffered within the bound
  std::vector<RegTensor> regs;      // registered tensors its ops name
  std::shared_ptr<PendSend> pend;   // a send whose way is not decided yet

 private:
  bool progress_locked(int64_t ms); // ms < 0: only test
  void fail_locked(const std::string& msg, bool breaks);
  void release_locked(bool reusable);
  // Take over what deciding pend gave (the send, or the staged entry); g_->mu held.
  void adopt_locked();
  std::shared_ptr<Group> g_;
  int source_ = -1; // a recv that completed: the group rank it took its message from
  const char* name_;
  int64_t timeout_ms_;
};

class ProcessGroupAccdma : public c10d::ProcessGroup {
 public:
  ProcessGroupAccdma(std::shared_ptr<Group> g);
  ~ProcessGroupAccdma() override;
  const std::string getBackendName() const override { return "accdma"; }

  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dst,
                                      int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int src,
                                      int tag) override;
  c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor>& tensors,
                                               int tag) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts) override;

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(
      std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors,
                                        const c10d::ReduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& out,
                                           std::vector<at::Tensor>& in,
                                           const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& out, at::Tensor& in,
                                                 const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& out,
                                        std::vector<at::Tensor>& in,
                                        const c10d::GatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& out,
                                         std::vector<std::vector<at::Tensor>>& in,
                                         const c10d::ScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& out,
                                                std::vector<std::vector<at::Tensor>>& in,
                                                const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(
      at::Tensor& out, at::Tensor& in, const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& out, at::Tensor& in,
                                               std::vector<int64_t>& out_splits,
                                               std::vector<int64_t>& in_splits,
                                               const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& out,
                                          std::vector<at::Tensor>& in,
                                          const c10d::AllToAllOptions& opts) override;

  // Why the group is broken ("" while usable).
  std::string broken_reason();
  // Bytes of sends held in device memory waiting for their recvs.
  uint64_t buffered_bytes();
  // How p2p ops moved their tensors: registered (one copy) or staged.
  std::map<std::string, uint64_t> copy_counts();
  const std::shared_ptr<Group>& group() const { return g_; }

 private:
  int64_t op_timeout(std::chrono::milliseconds t) const;
  c10::intrusive_ptr<c10d::Work> post_recv(std::vector<at::Tensor>& tensors, int src, int tag,
                                           const char* what);
  void note(int src, int tag, uint64_t bytes);
  c10::intrusive_ptr<WorkAccdma> ring_allreduce(const at::Tensor& t, int op, int64_t timeout,
                                                const char* name);
  std::shared_ptr<Group> g_;
};

// Create the group of (@rank, @size) whose members are the default group's
// ranks @globals (empty: this is the default group), over @store.
c10::intrusive_ptr<ProcessGroupAccdma> create(const c10::intrusive_ptr<c10d::Store>& store,
                                              int rank, int size, std::vector<int64_t> globals,
                                              int64_t timeout_ms);
// A zeroed tensor in @pg's device memory: sends and recvs of it (contiguous,
// whole or in part) move with no staging copy.
at::Tensor empty(ProcessGroupAccdma& pg, at::IntArrayRef sizes, at::ScalarType dtype);
// Drain buffered sends and close every world (at interpreter exit).
void shutdown();

// Helpers shared by the two halves of the group.
void check_tensor(const at::Tensor& t, const char* what);
uint64_t nbytes(const at::Tensor& t);
atc_buf get_buf(Group& g, uint64_t bytes);
void stage_in(const atc_buf& b, const at::Tensor& t);
void stage_out(const at::Tensor& t, const atc_buf& b);
void check_post(Group& g, int rc, const char* what);
// A pending send's grace period for @bytes, in microseconds.
uint64_t grace_us(const Group& g, uint64_t bytes);
// Smaller tensors are staged: a copy of them costs less than registering
// (a region slot, and a scan of the queues when it is freed).
constexpr uint64_t kRegisterMin = 64 << 10;

} // namespace accdma_torch
