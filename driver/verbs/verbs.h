/* SPDX-License-Identifier: MIT */
/*
 * verbs.h - the verbs transport: processes on several hosts, one per rank,
 * joined by RDMA (libibverbs). docs/transports.md ("verbs").
 *
 *   boot.c   ranks find each other over TCP (MASTER_ADDR, ACCDMA_BOOT_PORT),
 *            trade what their queue pairs need, and keep the connection as
 *            the liveness channel, beside the device's own events
 *   link.c   the engines' link (fw_stub/link.h) over RC queue pairs: messages
 *            by SEND into a shared receive queue, data by RDMA WRITE; one
 *            completion queue and its poller thread
 *   region.c device memory registered when allocated, its keys published to
 *            every peer before the call returns, revoked before it is freed
 *   stage.c  the slots medium sends from other hosts are written into, each
 *            with its message ahead of it by one RDMA WRITE with immediate
 *   verbs.c  the transport table
 */
#ifndef ACCDMA_DRIVER_VERBS_H
#define ACCDMA_DRIVER_VERBS_H

#include <infiniband/verbs.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "driver/inbox.h"
#include "driver/internal.h"
#include "fw_stub/link.h"

/* The link's own messages (never handed to an engine): above the engines' types. */
/* A work request's id: what it is (below) in its low two bits. */
#define WR_WRITE 0u /* a write: its slot's index << 2 */
#define WR_SEND 1u  /* a send buffer's index << 2; VB_SEND_BUFS + proc: an inline send (its number << 32) */
#define WR_RECV 2u  /* a receive buffer's index << 2 */
#define WR_PART 3u  /* an unsignaled part of a write: completes only in error */

enum vb_ctl {
	VB_PING = 64, VB_REGION, VB_REVOKE, VB_ACK, VB_STAGE,
	VB_BYE /* the last message to a peer at close: its completion says all before it arrived */
};

#define VB_MSG_BYTES ((uint32_t)sizeof(struct q_msg))
#define VB_RECV_BUFS 1024 /* receive buffers in the shared receive queue */
/* Send buffers, for messages too long to go inline and staged sends' heads (each signaled). */
#define VB_SEND_BUFS 512
#define VB_SIGNAL_EVERY 64 /* an inline send in this many asks for a completion */
#define VB_INLINE_MAX 256  /* inline sends to one process not yet known complete, at most */
/* The poller's nap while others poll: each nap is a timer interrupt, which
 * costs the pollers' cores (under emulation, dearly). An engine that goes to
 * sleep cuts it short (link_idle()); a host waiter that stops polling hands
 * the queue to its engines first. With engine threads, one that is awake
 * polls the queue in each pass, and one that naps resumes within its own
 * naps, so the poller naps until one goes to sleep (the long nap only
 * bounds a wake-up gone missing); with none, nobody would cut it short. */
#define VB_POLLER_NAP_NS 1000000
#define VB_POLLER_LONG_NAP_NS 100000000
/* With no engine threads, hosts that keep polling double the poller's nap
 * up to this: each wake-up costs their cores, and a device's message that
 * lands while none polls waits for a host anyway; only the link's own (a
 * region published or revoked, and its acknowledgement) wait for the
 * poller, up to this long. */
#define VB_POLLER_MAX_NAP_NS 16000000
/* A waiter on one small transfer polls this long before it sleeps: five
 * times the driver's default, as a round trip through soft-RoCE under
 * emulation (200-600 us) outlasts that, and each waiter that sleeps then
 * costs its process a hand-off to its engine thread and back. */
#define VB_WAIT_SPIN_SMALL_NS 1000000
/* A staging slot: the message that names a staged send, then its data. */
#define VB_SLOT_HEAD 128u
#define VB_SLOT_BYTES (VB_SLOT_HEAD + Q_STAGE_BYTES)
#define VB_CHUNKS 16               /* work requests a write is cut into, at most */
#define VB_CHUNK_MIN (1u << 20)    /* ... each of at least this many bytes */
#define VB_WRITES 32               /* writes in flight in a process, at most */
/* sends, inline and buffered, plus every write in flight (VB_CHUNKS requests each) */
#define VB_SQ_DEPTH (VB_INLINE_MAX + VB_SEND_BUFS + VB_WRITES * VB_CHUNKS)

#define VB_BOOT_MAGIC 0xacc0b0e5u /* every message of the join, and the hello */

/** struct vb_hello - what a process tells the others at join (crosses hosts). */
struct vb_hello {
	uint32_t magic;
	uint32_t version;
	uint64_t cookie;
	uint32_t rank, nprocs, local_devices, ndev;
	uint32_t queues, engines, depth, eager_max;
	uint32_t mtu, pad;
	uint8_t gid[16];
	char dev[32]; /* the RDMA device, for messages */
	/* then nprocs queue pair numbers: the one this process made for each peer */
};

/** struct vb_rregion - a peer's region as published to us (written by the poller). */
struct vb_rregion {
	_Atomic uint32_t key; /* 0: none; set last, cleared first */
	uint32_t rkey;
	uint64_t addr, size;
};

/**
 * struct vb_write - an RDMA WRITE in flight, or a free slot for one. Its
 * completion's wr_id points here, in memory the link owns: an op that stops
 * waiting for it (its engine stopped) leaves nothing the poller could write
 * after it is freed.
 * @done/@status: set by whoever polls its completion (ibv_wc_status).
 * @gen: bumped at each use; a handle names (slot, gen).
 * @proc/@len: whom it went to, how much (for the message if it fails).
 */
struct vb_write {
	_Atomic uint32_t done;
	_Atomic int status;
	uint32_t gen;
	int proc;
	uint64_t len;
};

/** struct vb_rstage - where a peer keeps its staging slots for our devices (stage.c). */
struct vb_rstage {
	_Atomic int known; /* set last */
	uint32_t rkey;
	uint64_t addr;
};

/** struct vb_lregion - a region of ours and its registration. */
struct vb_lregion {
	void *addr;
	uint64_t size;
	struct ibv_mr *mr;
	uint32_t key;
};

/**
 * struct vb - the transport's state in one process.
 * @link: the engines' link (first: fw_link's handle is this).
 * @nprocs/@self/@L: processes, ours, devices per process.
 * @hellos: every process's hello, @qpns: its queue pair numbers (nprocs each).
 */
struct vb {
	struct fw_link link;
	struct accdma_world *w;
	int nprocs, self, L;
	struct vb_hello *hellos;
	uint32_t *qpns;
	/* libibverbs */
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq;
	struct ibv_srq *srq;
	struct ibv_qp **qp; /* by process (NULL for ourselves) */
	int port, gid_index;
	union ibv_gid gid;
	enum ibv_mtu mtu;
	char devname[32];
	uint32_t max_inline;
	char *rbuf, *sbuf;
	struct ibv_mr *rmr, *smr;
	pthread_mutex_t slock; /* the free send buffers */
	uint32_t *sfree, nsfree;
	_Atomic uint32_t *inline_sent; /* by process: inline sends to it (every VB_SIGNAL_EVERY-th signaled) */
	_Atomic uint32_t *inline_done; /* by process: those known complete (up to its last signaled one) */
	_Atomic uint32_t *buf_sent;    /* by process: sends to it from a send buffer (all signaled) */
	_Atomic uint32_t *buf_done;    /* by process: those complete */
	int32_t *sproc;        /* by send buffer: the process it went to */
	struct vb_write writes[VB_WRITES];
	uint32_t wfree[VB_WRITES], nwfree; /* free write slots, under slock */
	pthread_mutex_t cq_lock;
	_Atomic int others_polled; /* an engine or host polled the queue since the poller looked */
	_Atomic uint32_t nap_seq;  /* the poller naps on it; link_idle() bumps it */
	_Atomic int napping;
	struct drv_inbox *inbox; /* by device (only ours used) */
	struct vb_rregion *rreg; /* [ndev][Q_MAX_REGIONS] */
	pthread_mutex_t pub_lock;  /* one publication at a time */
	pthread_mutex_t lreg_lock; /* the table below */
	struct vb_lregion *lreg; /* [L][Q_MAX_REGIONS] */
	uint32_t pub_seq;          /* publications so far (under pub_lock) */
	_Atomic uint32_t *acked;   /* by process: the last publication it acknowledged */
	uint8_t *told;             /* by process: the publication under way went to it (under pub_lock) */
	uint8_t *stage;           /* staging slots, by sending process (stage.c) */
	size_t stage_len;
	struct ibv_mr **stage_mr; /* by process: its block */
	struct vb_rstage *rstage; /* by process: its slots for us */
	_Atomic uint32_t *pings;    /* by process: its ping arrived */
	_Atomic uint32_t *proc_lost; /* by process */
	_Atomic int cut_off;         /* our port or device failed: every peer is lost */
	pthread_t poller;
	int poller_started;
	_Atomic int stop;
	/* boot.c */
	int listen_fd, conn;  /* rank 0: its listener; others: the connection to rank 0 */
	int *conns;           /* rank 0: by rank */
	int efd;              /* wakes the monitor at close */
	pthread_t monitor;
	int monitor_started;
	uint64_t cookie;
	char where[96];
};

static inline struct vb *vb_of(struct accdma_world *w)
{
	return (struct vb *)w->tp_state;
}

/* The link's state from the engines' link, its first member. */
static inline struct vb *vb_link(struct fw_link *l)
{
	return (struct vb *)l;
}

static inline int vb_proc_of(const struct vb *v, uint32_t dev)
{
	return (int)(dev / (uint32_t)v->L);
}

/* boot.c */
int vb_boot_join(struct vb *v, const struct vb_hello *mine);
const char *vb_hello_wrong(const struct vb *v, const struct vb_hello *mine, const struct vb_hello *h);
int vb_boot_ready(struct vb *v, const char *err);
int vb_boot_monitor_start(struct vb *v);
void vb_boot_end(struct vb *v);

/* link.c */
int vb_link_open(struct vb *v);
int vb_link_start(struct vb *v);
int vb_link_connect(struct vb *v, char *err, size_t errlen);
int vb_link_poll(struct vb *v);
enum accdma_status vb_link_write(struct fw_link *l, uint32_t dev, uint32_t key, uint64_t off, uint64_t len,
			       const void *local, uint64_t *req);
int vb_link_write_done(struct fw_link *l, uint64_t req, enum accdma_status *st);
void vb_link_flush(struct vb *v);
int vb_link_check_paths(struct vb *v, char *err, size_t errlen);
void vb_link_close(struct vb *v);
int vb_msg_sender(const struct vb *v, const struct q_msg *m, uint32_t bytes, uint32_t qpn);
int vb_ctl_send(struct vb *v, int proc, const struct q_msg *m);
void vb_mark_lost(struct vb *v, int proc, uint32_t why);
void vb_deliver(struct vb *v, const struct q_msg *m);
void vb_gid_str(const uint8_t *gid, char *out, size_t len);

/* stage.c */
uint64_t vb_stage_bytes(const struct vb *v);
int vb_stage_open(struct vb *v);
void vb_stage_close(struct vb *v);
int vb_stage_tell(struct vb *v, int proc);
void vb_stage_serve(struct vb *v, int proc, const struct q_msg *m);
enum accdma_status vb_link_stage(struct fw_link *l, uint32_t slot, const void *src, uint64_t len,
				 const struct q_msg *m);
void *vb_link_staged(struct fw_link *l, uint32_t dev, uint32_t src, uint32_t slot);
uint32_t vb_stage_index(const struct vb *v, uint32_t src, uint32_t dlocal, uint32_t slot);
int vb_stage_arrived(const struct vb *v, int proc, uint32_t index, uint32_t bytes, struct q_msg *m);
void vb_stage_landed(struct vb *v, int proc, uint32_t index, uint32_t bytes);
int vb_post_headed(struct vb *v, int proc, struct ibv_send_wr *wr, const struct ibv_sge *data, const struct q_msg *m);

/* region.c */
int vb_region_added(struct accdma_world *w, int dev, uint32_t key, void *addr, uint64_t size);
void vb_region_removed(struct accdma_world *w, int dev, uint32_t key);
void vb_region_serve(struct vb *v, const struct q_msg *m);
uint32_t vb_lkey_of(struct vb *v, const void *addr, uint64_t len);

extern const struct fw_link_ops vb_link_ops;

#endif /* ACCDMA_DRIVER_VERBS_H */
