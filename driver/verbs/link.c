// SPDX-License-Identifier: MIT
/*
 * link.c - the engines' link (fw_stub/link.h) over libibverbs.
 *
 * One reliable-connected queue pair per pair of processes, one shared
 * receive queue and one completion queue per process. A message is a SEND
 * from a registered send buffer (inline when the device takes it) into a
 * receive buffer of the peer's shared queue, which its poller hands to the
 * device's inbox and posts again at once; a staged send is an RDMA WRITE
 * with immediate whose completion is its message (stage.c). Data moves by
 * RDMA WRITE (write.c). RNR retries are unlimited: a receiver short of
 * buffers slows its senders down, never fails them.
 *
 * The poller thread polls the completion queue, spinning while traffic may
 * be near, then sleeping on the completion channel. Any thread that waits
 * for a completion polls too when the poller is not; while engines or a
 * waiting host poll, the poller naps instead of spinning, until an engine
 * goes to sleep.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "driver/verbs/verbs.h"

static uint64_t ns_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void vb_gid_str(const uint8_t *gid, char *out, size_t len)
{
	size_t n = 0;

	for (int i = 0; i < 16 && n + 3 < len; i += 2)
		n += (size_t)snprintf(out + n, len - n, "%s%02x%02x", i ? ":" : "", gid[i], gid[i + 1]);
}

static int post_recv(struct vb *v, uint32_t i)
{
	struct ibv_sge sge = { (uintptr_t)(v->rbuf + (size_t)i * VB_MSG_BYTES), VB_MSG_BYTES, v->rmr->lkey };
	struct ibv_recv_wr wr = { .wr_id = ((uint64_t)i << 2) | WR_RECV, .sg_list = &sge, .num_sge = 1 }, *bad;

	return ibv_post_srq_recv(v->srq, &wr, &bad);
}

/* Kick every engine of our devices: they may sleep on what just changed. */
static void kick_local(struct vb *v)
{
	struct accdma_world *w = v->w;

	for (int d = w->first_local; d < w->first_local + w->nlocal; d++)
		q_device_kick(q_dev(&w->a, (uint32_t)d), 0, w->a.g.engines);
}

/**
 * vb_mark_lost() - process @proc is gone (@why: Q_DEV_LOST_*): its devices are
 * lost here, its queue pair is flushed (so that no read or write waits on
 * it), and our engines look at their ops with it.
 */
void vb_mark_lost(struct vb *v, int proc, uint32_t why)
{
	struct accdma_world *w = v->w;
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
	uint32_t alive = 0;
	int changed = 0;

	if (proc < 0 || proc >= v->nprocs || proc == v->self)
		return;
	if (!atomic_compare_exchange_strong(&v->proc_lost[proc], &alive, 1))
		return;
	for (int d = proc * v->L; d < (proc + 1) * v->L; d++) {
		uint32_t ok = Q_DEV_ALIVE;

		changed |= atomic_compare_exchange_strong(&q_dev(&w->a, (uint32_t)d)->lost, &ok, why);
	}
	if (changed)
		atomic_store_explicit(&w->a.sh->lost_any, 1, memory_order_release);
	if (v->qp && v->qp[proc])
		ibv_modify_qp(v->qp[proc], &a, IBV_QP_STATE);
	if (why == Q_DEV_LOST_DIED && !atomic_load(&v->cut_off) && w->opts.log_level >= 1)
		fprintf(stderr, "accdma: verbs: rank %d (%s) is gone; ops with it complete PEER_LOST\n", proc,
			v->hellos[proc].dev);
	kick_local(v);
}

/* vb_deliver() - engine message @m for our device @m->dst (the caller checked
 * it) into that device's inbox: the message is the doorbell. */
void vb_deliver(struct vb *v, const struct q_msg *m)
{
	if (!drv_inbox_put(&v->inbox[m->dst], m))
		q_engine_kick(q_dev(&v->w->a, (uint32_t)m->dst), 0);
}

/**
 * vb_msg_sender() - the process that sent message @m, @bytes long, which
 * arrived on our queue pair numbered @qpn: the process of the device @m says
 * it is from, if that process's queue pair is the one it came on.
 * Return: the process, or -1 for a torn message, or one that speaks for
 * another process or for us (whose every message would be believed).
 */
int vb_msg_sender(const struct vb *v, const struct q_msg *m, uint32_t bytes, uint32_t qpn)
{
	int proc;

	if (bytes < Q_MSG_HEAD_BYTES || bytes != q_msg_bytes(m))
		return -1;
	if (m->src < 0 || (uint32_t)m->src >= v->w->a.g.ndev)
		return -1;
	proc = vb_proc_of(v, (uint32_t)m->src);
	if (proc >= v->nprocs || proc == v->self || !v->qp || !v->qp[proc] || v->qp[proc]->qp_num != qpn)
		return -1;
	return proc;
}

/* A message arrived in receive buffer @i on our queue pair @qpn: an engine's
 * goes to its device's inbox, the link's own is answered by the caller after
 * the poll. Receive buffers take no remote writes, so it cannot change now. */
static void arrived(struct vb *v, uint32_t i, uint32_t bytes, uint32_t qpn, struct q_msg *ctl, int *nctl)
{
	const struct q_msg *m = (const struct q_msg *)(v->rbuf + (size_t)i * VB_MSG_BYTES);
	struct accdma_world *w = v->w;
	uint32_t dst = (uint32_t)m->dst;

	if (vb_msg_sender(v, m, bytes, qpn) < 0)
		return; /* torn, lying, or from another than it says: dropped */
	if (m->type >= VB_PING) {
		memcpy(&ctl[(*nctl)++], m, Q_MSG_HEAD_BYTES);
		return;
	}
	if (dst < (uint32_t)w->first_local || dst >= (uint32_t)(w->first_local + w->nlocal))
		return;
	vb_deliver(v, m);
}

/* Which process the queue pair of ours numbered @qpn is for, or -1. */
static int proc_of_qpn(const struct vb *v, uint32_t qpn)
{
	for (int p = 0; p < v->nprocs; p++)
		if (v->qp[p] && v->qp[p]->qp_num == qpn)
			return p;
	return -1;
}

/* The link's own messages, once the completion queue is let go. */
static void serve_ctl(struct vb *v, const struct q_msg *m)
{
	int proc = m->src >= 0 ? vb_proc_of(v, (uint32_t)m->src) : -1;

	if (proc < 0 || proc >= v->nprocs || proc == v->self)
		return;
	switch (m->type) {
	case VB_PING:
		atomic_store(&v->pings[proc], 1);
		break;
	case VB_REGION:
	case VB_REVOKE:
		vb_region_serve(v, m);
		break;
	case VB_ACK: /* it names the publication it answers */
		atomic_store(&v->acked[proc], (uint32_t)m->seq);
		break;
	case VB_STAGE:
		vb_stage_serve(v, proc, m);
		break;
	default:
		break;
	}
}

/* Poll the completion queue once if nobody else is. Return: completions seen, -1 if busy. */
static int poll_cq_as(struct vb *v, int poller)
{
	struct ibv_wc wc[32];
	struct q_msg ctl[32];
	int n, nctl = 0, nwrites = 0;

	if (!poller && !atomic_load_explicit(&v->others_polled, memory_order_relaxed))
		atomic_store_explicit(&v->others_polled, 1, memory_order_relaxed);
	if (pthread_mutex_trylock(&v->cq_lock))
		return -1;
	n = ibv_poll_cq(v->cq, 32, wc);
	for (int k = 0; k < n; k++) {
		uint64_t id = wc[k].wr_id;
		uint32_t i = (uint32_t)(id >> 2) & 0x3fffffffu;

		switch (id & 3) {
		case WR_RECV:
			if (wc[k].status != IBV_WC_SUCCESS)
				break; /* flushed at close */
			if (wc[k].opcode == IBV_WC_RECV_RDMA_WITH_IMM) /* a staged send */
				vb_stage_landed(v, proc_of_qpn(v, wc[k].qp_num), ntohl(wc[k].imm_data),
						wc[k].byte_len);
			else
				arrived(v, i, wc[k].byte_len, wc[k].qp_num, ctl, &nctl);
			post_recv(v, i);
			break;
		case WR_SEND:
			if (i >= VB_SEND_BUFS) { /* inline: no buffer to give back */
				if (i - VB_SEND_BUFS >= (uint32_t)v->nprocs)
					break;
				if (wc[k].status != IBV_WC_SUCCESS && !atomic_load(&v->stop))
					vb_mark_lost(v, (int)(i - VB_SEND_BUFS), Q_DEV_LOST_DIED);
				else /* in order on its queue pair: every earlier one is done too */
					atomic_store_explicit(&v->inline_done[i - VB_SEND_BUFS], (uint32_t)(id >> 32) + 1,
							      memory_order_release);
				break;
			}
			if (wc[k].status != IBV_WC_SUCCESS && !atomic_load(&v->stop))
				vb_mark_lost(v, v->sproc[i], Q_DEV_LOST_DIED);
			atomic_fetch_add_explicit(&v->buf_done[v->sproc[i]], 1, memory_order_release);
			pthread_mutex_lock(&v->slock);
			v->sfree[v->nsfree++] = i;
			pthread_mutex_unlock(&v->slock);
			break;
		case WR_PART:
			break; /* the last part's completion (flushed, if this failed) tells */
		default:
			if (i < VB_WRITES) {
				atomic_store_explicit(&v->writes[i].status, (int)wc[k].status, memory_order_relaxed);
				atomic_store_explicit(&v->writes[i].done, 1, memory_order_release);
				nwrites++;
			}
		}
	}
	pthread_mutex_unlock(&v->cq_lock);
	for (int k = 0; k < nctl; k++)
		serve_ctl(v, &ctl[k]);
	if (nwrites) /* an engine with writes in flight may sleep */
		kick_local(v);
	return n < 0 ? 0 : n;
}

/** vb_link_poll() - poll the completion queue once, if nobody else is: completions seen, -1 if busy. */
int vb_link_poll(struct vb *v)
{
	return poll_cq_as(v, 0);
}

/* Is an engine of ours asleep? Then nobody polls the queue for it. */
static int engine_asleep(struct vb *v)
{
	struct accdma_world *w = v->w;

	for (int d = w->first_local; d < w->first_local + w->nlocal; d++)
		for (uint32_t e = 0; e < w->a.g.engines; e++)
			if (atomic_load_explicit(&q_dev(&w->a, (uint32_t)d)->engines[e].sleeping, memory_order_seq_cst))
				return 1;
	return 0;
}

/* The poller's nap of @ns, cut short by link_idle() and by close. */
static void nap(struct vb *v, uint64_t ns)
{
	uint32_t seq = atomic_load_explicit(&v->nap_seq, memory_order_seq_cst);

	atomic_store_explicit(&v->napping, 1, memory_order_seq_cst);
	if (!engine_asleep(v))
		os_wait32(&v->nap_seq, seq, ns);
	atomic_store_explicit(&v->napping, 0, memory_order_relaxed);
}

/* An engine goes to sleep (it announced it first): a napping poller must
 * watch the queue now, not when its nap ends, or a message that lands
 * meanwhile waits for it. */
static void link_idle(struct fw_link *l)
{
	struct vb *v = vb_link(l);

	atomic_fetch_add_explicit(&v->nap_seq, 1, memory_order_seq_cst);
	if (atomic_load_explicit(&v->napping, memory_order_seq_cst))
		os_wake32(&v->nap_seq);
}

static void *poller_main(void *arg)
{
	struct vb *v = arg;
	uint64_t spin = v->w->spin_ns ? v->w->spin_ns : 50000, idle = 0, nap_ns = VB_POLLER_NAP_NS;

	while (!atomic_load(&v->stop)) {
		struct pollfd pf = { .fd = v->ch->fd, .events = POLLIN };
		struct ibv_cq *cq;
		void *ctx;
		int n = poll_cq_as(v, 1);

		if (n != 0) {
			idle = 0;
			if (n < 0)
				sched_yield();
			continue;
		}
		/* An engine or a waiting host polls the queue: leave it to them, and
		 * nap instead of spinning beside them for the same cores. */
		if (atomic_exchange_explicit(&v->others_polled, 0, memory_order_relaxed) && !engine_asleep(v)) {
			if (v->w->threaded) {
				nap(v, VB_POLLER_LONG_NAP_NS);
			} else { /* longer each time hosts polled all through the last */
				nap(v, nap_ns);
				nap_ns = nap_ns * 2 > VB_POLLER_MAX_NAP_NS ? VB_POLLER_MAX_NAP_NS : nap_ns * 2;
			}
			idle = 0;
			continue;
		}
		nap_ns = VB_POLLER_NAP_NS;
		if (!idle)
			idle = ns_now();
		if (ns_now() - idle < spin) {
			sched_yield();
			continue;
		}
		/* Arm, look once more, then sleep until a completion (or a look now and then for stop). */
		ibv_req_notify_cq(v->cq, 0);
		if (poll_cq_as(v, 1) != 0)
			continue;
		if (poll(&pf, 1, 100) > 0 && !ibv_get_cq_event(v->ch, &cq, &ctx))
			ibv_ack_cq_events(cq, 1);
		idle = 0;
	}
	return NULL;
}

/* No room for a send to @proc yet: poll the completion queue once for the
 * completions that make some. Return: 0, or -1 if stopping or @proc is gone. */
static int await_room(struct vb *v, int proc)
{
	if (atomic_load(&v->stop) || atomic_load(&v->proc_lost[proc]))
		return -1;
	if (vb_link_poll(v) <= 0)
		sched_yield();
	return 0;
}

/* A free send buffer, polling for one if none is free. Return: its index, or -1 if stopping. */
static int take_sbuf(struct vb *v, int proc)
{
	for (;;) {
		pthread_mutex_lock(&v->slock);
		if (v->nsfree) {
			uint32_t i = v->sfree[--v->nsfree];

			v->sproc[i] = proc;
			pthread_mutex_unlock(&v->slock);
			return (int)i;
		}
		pthread_mutex_unlock(&v->slock);
		if (await_room(v, proc))
			return -1;
	}
}

/* A message the device takes inline: copied into the work request as it is
 * posted, so it needs no send buffer, and only every VB_SIGNAL_EVERY-th asks
 * for a completion (which lets the send queue's slots go): an error
 * completes a request whether it asked or not. */
static int send_inline(struct vb *v, int proc, const struct q_msg *m, uint32_t len, int signal)
{
	struct ibv_sge sge = { (uintptr_t)m, len, 0 };
	struct ibv_send_wr wr = { 0 }, *bad;
	uint32_t n = atomic_fetch_add_explicit(&v->inline_sent[proc], 1, memory_order_relaxed);

	/* Room in the send queue: a receiver short of buffers holds our sends
	 * back (RNR retries), and a post into a full queue would fail. */
	while (n - atomic_load_explicit(&v->inline_done[proc], memory_order_acquire) >= VB_INLINE_MAX)
		if (await_room(v, proc))
			return -EPIPE;
	wr.wr_id = ((uint64_t)n << 32) | ((uint64_t)(VB_SEND_BUFS + (uint32_t)proc) << 2) | WR_SEND;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_INLINE |
			(signal || n % VB_SIGNAL_EVERY == VB_SIGNAL_EVERY - 1 ? IBV_SEND_SIGNALED : 0);
	if (ibv_post_send(v->qp[proc], &wr, &bad)) {
		vb_mark_lost(v, proc, Q_DEV_LOST_DIED);
		return -EPIPE;
	}
	return 0;
}

/* Post @wr (its opcode, remote side and immediate set) to peer process @proc
 * (the caller checked it) from a send buffer: @len bytes of @m's copy there,
 * then @more (NULL for none), in one signaled request. Return: 0, or -EPIPE
 * if @proc is gone. */
static int post_buffered(struct vb *v, int proc, struct ibv_send_wr *wr, const struct q_msg *m, uint32_t len,
			 const struct ibv_sge *more)
{
	struct ibv_sge sge[2];
	struct ibv_send_wr *bad;
	char *buf;
	int i;

	i = take_sbuf(v, proc);
	if (i < 0)
		return -EPIPE;
	buf = v->sbuf + (size_t)i * VB_MSG_BYTES;
	memset(buf + q_msg_bytes(m), 0, len - q_msg_bytes(m)); /* what travels is ours to say */
	memcpy(buf, m, q_msg_bytes(m));
	sge[0] = (struct ibv_sge){ (uintptr_t)buf, len, v->smr->lkey };
	if (more)
		sge[1] = *more;
	wr->wr_id = ((uint64_t)i << 2) | WR_SEND;
	wr->sg_list = sge;
	wr->num_sge = more ? 2 : 1;
	wr->send_flags = IBV_SEND_SIGNALED;
	atomic_fetch_add_explicit(&v->buf_sent[proc], 1, memory_order_relaxed);
	if (ibv_post_send(v->qp[proc], wr, &bad)) {
		pthread_mutex_lock(&v->slock);
		v->sfree[v->nsfree++] = (uint32_t)i;
		pthread_mutex_unlock(&v->slock);
		vb_mark_lost(v, proc, Q_DEV_LOST_DIED);
		return -EPIPE;
	}
	return 0;
}

static int send_to(struct vb *v, int proc, const struct q_msg *m)
{
	uint32_t len = q_msg_bytes(m);
	struct ibv_send_wr wr = { .opcode = IBV_WR_SEND };

	if (proc < 0 || proc >= v->nprocs || proc == v->self || atomic_load(&v->proc_lost[proc]))
		return -EPIPE;
	if (len <= v->max_inline)
		return send_inline(v, proc, m, len, 0);
	return post_buffered(v, proc, &wr, m, len, NULL);
}

/**
 * vb_post_headed() - post @wr, an RDMA WRITE with immediate (remote side and
 * immediate set) of @data, with message @m ahead of the data (VB_SLOT_HEAD
 * bytes): the peer's one completion tells it both have landed. @proc is a
 * peer process, not ours, that the caller found alive.
 * Return: 0, or -EPIPE if @proc is gone.
 */
int vb_post_headed(struct vb *v, int proc, struct ibv_send_wr *wr, const struct ibv_sge *data, const struct q_msg *m)
{
	wr->opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
	return post_buffered(v, proc, wr, m, VB_SLOT_HEAD, data);
}

/** vb_ctl_send() - send one of the link's own messages to process @proc. */
int vb_ctl_send(struct vb *v, int proc, const struct q_msg *m)
{
	return send_to(v, proc, m);
}

/* Post the goodbye message @m to @proc, signaled. Return: the counter its
 * completion moves and the value it moves it to, or NULL if @proc is gone. */
static _Atomic uint32_t *post_bye(struct vb *v, int proc, const struct q_msg *m, uint32_t *upto)
{
	struct ibv_send_wr wr = { .opcode = IBV_WR_SEND };

	if (v->max_inline >= Q_MSG_HEAD_BYTES) {
		*upto = atomic_load_explicit(&v->inline_sent[proc], memory_order_relaxed) + 1;
		return send_inline(v, proc, m, Q_MSG_HEAD_BYTES, 1) ? NULL : &v->inline_done[proc];
	}
	if (post_buffered(v, proc, &wr, m, Q_MSG_HEAD_BYTES, NULL))
		return NULL;
	/* counted, not numbered: when every send counted so far is done, so is ours */
	*upto = atomic_load_explicit(&v->buf_sent[proc], memory_order_relaxed);
	return &v->buf_done[proc];
}

/**
 * vb_link_flush() - at close, before the goodbye: wait until every message
 * we sent has reached its peer (a second at most). A queue pair completes
 * in order, so a last signaled message to each live peer says when; else
 * a send's finish, posted after its write, could still be on its way when
 * the goodbye overtakes it, and its recv would end PEER_LOST.
 */
void vb_link_flush(struct vb *v)
{
	uint64_t end = ns_now() + 1000000000ull;
	struct q_msg m;

	memset(&m, 0, sizeof(m));
	m.type = VB_BYE;
	m.src = (int32_t)(v->self * v->L);
	for (int p = 0; p < v->nprocs; p++) {
		_Atomic uint32_t *done;
		uint32_t upto;

		if (p == v->self || atomic_load(&v->proc_lost[p]))
			continue;
		m.dst = (int32_t)(p * v->L);
		done = post_bye(v, p, &m, &upto);
		/* done up to and past ours (serial arithmetic), or the peer went */
		while (done && (int32_t)(atomic_load_explicit(done, memory_order_acquire) - upto) < 0 &&
		       !atomic_load(&v->proc_lost[p]) && ns_now() < end)
			if (vb_link_poll(v) <= 0)
				sched_yield();
	}
}

static int link_send(struct fw_link *l, const struct q_msg *m)
{
	struct vb *v = vb_link(l);

	if (m->dst < 0 || (uint32_t)m->dst >= v->w->a.g.ndev)
		return -EPIPE;
	return send_to(v, vb_proc_of(v, (uint32_t)m->dst), m);
}

static int link_recv(struct fw_link *l, uint32_t dev, struct q_msg *m)
{
	struct vb *v = vb_link(l);

	if (drv_inbox_take(&v->inbox[dev], m))
		return 1;
	/* An engine that looks polls the completion queue itself, rather than
	 * wait for the poller thread to wake and hand the message over. */
	return vb_link_poll(v) > 0 && drv_inbox_take(&v->inbox[dev], m);
}

const struct fw_link_ops vb_link_ops = {
	.send = link_send,
	.recv = link_recv,
	.write = vb_link_write,
	.write_done = vb_link_write_done,
	.idle = link_idle,
	.stage = vb_link_stage,
	.staged = vb_link_staged,
};

/** vb_link_start() - start the completion queue's poller. Return: 0 or -EAGAIN. */
int vb_link_start(struct vb *v)
{
	if (pthread_create(&v->poller, NULL, poller_main, v))
		return -EAGAIN;
	v->poller_started = 1;
	return 0;
}
