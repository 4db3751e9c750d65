// SPDX-License-Identifier: MIT
/*
 * engine.c - engine threads: the device's processors of descriptors.
 *
 * An engine loops over its queues. When a pass changes nothing it spins for a
 * short while (work is often near: a peer is about to post), then announces
 * that it sleeps and waits on its doorbell futex. Whoever publishes work
 * (host post, a completion it may depend on, a mailbox request) kicks it.
 * While a host thread polls the device (fw_device_poll), the engine naps.
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "fw_stub/fw_internal.h"
#include "fw_stub/peer.h"

/* How long an engine naps while a host thread polls its device. */
#define FW_NAP_NS 1000000
/* How long an idle engine sleeps before it looks on its own: the kicks that
 * wake it rely on fences across processes (q_kick_fence()), and one lost
 * wake-up must not leave a message in a ring for good (BENCHMARKS.md). The
 * first look comes after Q_SLEEP_RECHECK_NS, then one every check period. */
#ifndef FW_SLEEP_CHECK_NS
#define FW_SLEEP_CHECK_NS 10000000
#endif
#define FW_RETRY_NS 1000000 /* a full table: look again after this long */

/* One pass of an engine: a pending reset, the mailbox (engine 0), its share of a
 * split copy, then each of its queues. Returns non-zero if anything moved. */
static int engine_pass(struct fw_engine *e)
{
	struct fw_device *fd = e->dev;
	uint32_t epoch = atomic_load_explicit(&fd->sh->reset_epoch, memory_order_acquire);
	int progress = 0, retry = 0;

	if (epoch != e->seen_epoch) {
		for (uint32_t i = 0; i < e->nqueues; i++)
			fw_queue_flush(fd, e->queues[i]);
		e->seen_epoch = epoch;
		atomic_store(&e->sh->ack_epoch, epoch);
		q_engine_kick(fd->sh, 0);
		progress = 1;
	}
	if (e->index == 0)
		progress |= fw_mailbox_poll(fd);
	if (fd->nengines > 1)
		progress |= fw_split_help(fd);
	for (uint32_t i = 0; i < e->nqueues; i++) {
		e->queues[i]->retry = 0;
		progress |= fw_queue_progress(fd, e->queues[i]);
		retry |= e->queues[i]->retry;
	}
	atomic_store_explicit(&e->retry, retry, memory_order_relaxed);
	return progress;
}

/*
 * One pass at a time per engine: the engine thread and a host thread that
 * polls (fw_device_poll) take turns. Returns the pass's progress, or -1 if
 * another thread is running a pass right now.
 */
static int engine_try_pass(struct fw_engine *e)
{
	int progress;

	if (atomic_exchange_explicit(&e->in_pass, 1, memory_order_acquire))
		return -1;
	/* One writer at a time (under in_pass): a heartbeat per pass, whoever runs it. */
	q_single_writer_add(&e->sh->heartbeats, 1);
	progress = engine_pass(e);
	atomic_store_explicit(&e->in_pass, 0, memory_order_release);
	return progress;
}

/**
 * fw_device_poll() - run a pass of each of the device's engines that is idle.
 * @fd: the device (NULL is ignored).
 *
 * A waiting host thread calls this instead of idling, as a polled driver
 * drives its device: on a machine with fewer cores than threads, the work
 * then needs no hand-off to an engine thread. Hardware would ignore it.
 * Return: non-zero if any engine made progress.
 */
void fw_device_poll_begin(struct fw_device *fd)
{
	if (fd)
		atomic_fetch_add_explicit(&fd->pollers, 1, memory_order_relaxed);
}

void fw_device_poll_end(struct fw_device *fd, int wake)
{
	if (!fd)
		return;
	atomic_fetch_sub_explicit(&fd->pollers, 1, memory_order_seq_cst);
	if (wake)
		fw_wake_nappers(fd);
}

int fw_device_poll(struct fw_device *fd)
{
	int progress = 0;

	if (!fd)
		return 0;
	for (uint32_t e = 0; e < fd->nengines; e++)
		progress |= engine_try_pass(&fd->engines[e]) > 0;
	return progress;
}

int fw_device_submit(struct fw_device *fd, uint32_t queue, uint32_t count)
{
	struct fw_queue *q;
	struct fw_engine *e;
	int n;

	if (!fd || queue >= fd->w->g.nq)
		return 0;
	q = &fd->queues[queue];
	e = &fd->engines[q_queue_engine(&fd->w->g, queue)];
	/* a reset in progress is the engine's to finish first */
	if (atomic_load_explicit(&fd->sh->reset_epoch, memory_order_acquire) != e->seen_epoch)
		return 0;
	if (atomic_exchange_explicit(&e->in_pass, 1, memory_order_acquire))
		return 0; /* the engine is in a pass: it reads them */
	n = fw_queue_submit(fd, q, count);
	atomic_store_explicit(&e->in_pass, 0, memory_order_release);
	return n;
}

/* The arena's stop flag stops every engine on it; a shared arena (shm) is
 * only ever stopped device by device, through fd->stop. */
static int stopping(const struct fw_device *fd)
{
	return atomic_load_explicit(&fd->w->sh->stop, memory_order_acquire) ||
	       atomic_load_explicit(&fd->stop, memory_order_acquire);
}

/*
 * While a host thread polls the device it does our work: competing with it for
 * the core only slows both down. Nap instead, without announcing `sleeping`,
 * so that posts ring no doorbell syscall; fw_device_poll_end() wakes us early
 * if the poller gives up before its work is done.
 */
static void engine_nap(struct fw_engine *e)
{
	struct fw_device *fd = e->dev;
	uint32_t seq = atomic_load_explicit(&e->sh->wake_seq, memory_order_acquire);

	/* seq_cst store and load, against fw_device_poll_end()'s: either it sees
	 * us napping, or we see that nobody polls any more. */
	atomic_store_explicit(&e->napping, 1, memory_order_seq_cst);
	if (atomic_load_explicit(&fd->pollers, memory_order_seq_cst) && !stopping(fd))
		q_futex_wait(&e->sh->wake_seq, seq, FW_NAP_NS);
	atomic_store_explicit(&e->napping, 0, memory_order_relaxed);
}

/*
 * Sleep on the doorbell for up to @ns (announced, with @seq read after the
 * announcement); if nobody rang, look once on our own. If @count, work found
 * so is a wake-up that never came: counted (the stall report and world close
 * print it). Not after the short first sleep: what turns up there is mostly
 * work whose kick is late, not lost (its completer woke a host waiter first,
 * which can take its core; BENCHMARKS.md), and counting it would cry wolf.
 * Return: 1 if woken or the look moved something (go round the loop), 0 if
 * still idle.
 */
static int sleep_then_look(struct fw_engine *e, uint32_t seq, int64_t ns, int count)
{
	int progress;

	if (q_futex_wait(&e->sh->wake_seq, seq, ns) != -ETIMEDOUT ||
	    atomic_load_explicit(&e->sh->wake_seq, memory_order_acquire) != seq)
		return 1;
	progress = engine_try_pass(e);
	if (progress > 0 && count)
		q_single_writer_add(&e->sh->late_wakes, 1);
	return progress != 0; /* -1: a host thread runs our pass: go round */
}

/* An engine thread: pass, spin (yielding) while work may be near, nap while a
 * host thread polls the device, otherwise sleep on the doorbell futex. */
static void *engine_main(void *arg)
{
	struct fw_engine *e = arg;
	struct fw_device *fd = e->dev;
	uint64_t idle_since = 0;

	atomic_store(&e->sh->running, 1);
	while (!stopping(fd)) {
		uint32_t seq;
		int progress;

		progress = engine_try_pass(e);
		if (progress > 0) {
			idle_since = 0;
			continue;
		}
		if (atomic_load_explicit(&fd->pollers, memory_order_relaxed)) {
			engine_nap(e);
			idle_since = 0;
			continue;
		}
		if (progress < 0) {
			sched_yield(); /* another thread is running our pass */
			idle_since = 0;
			continue;
		}
		if (!idle_since)
			idle_since = q_now_ns();
		if (q_now_ns() - idle_since < fd->spin_ns) {
			/* Yield rather than pause: with more threads than cores (many
			 * devices, or the host posting beside two engines on two cores)
			 * a pure spin starves the very thread that would give us work. */
			sched_yield();
			continue;
		}
		/* Sleep protocol: announce, then look once more, then wait. A kicker
		 * either sees `sleeping` and bumps wake_seq, or we see its work. */
		atomic_store_explicit(&e->sh->sleeping, 1, memory_order_seq_cst);
		q_sleep_fence(fd->sh);
		seq = atomic_load_explicit(&e->sh->wake_seq, memory_order_acquire);
		if (!engine_try_pass(e) && !stopping(fd)) {
			fw_sleep_race_point(fd->id, e->index);
			/* The retry flag is read after the pass that sets it. */
			if (atomic_load_explicit(&e->retry, memory_order_relaxed))
				q_futex_wait(&e->sh->wake_seq, seq, FW_RETRY_NS);
			/* Never asleep for good. The membarrier that makes a
			 * peer's light kick safe can miss the kicker's CPU (a
			 * kernel fault, BENCHMARKS.md), leaving its stamp unseen
			 * by our look above; it is in memory well within the
			 * first, short sleep. The check period is the backstop. */
			else if (!sleep_then_look(e, seq, Q_SLEEP_RECHECK_NS, 0) && !stopping(fd))
				sleep_then_look(e, seq, FW_SLEEP_CHECK_NS, 1);
		}
		atomic_store_explicit(&e->sh->sleeping, 0, memory_order_relaxed);
		idle_since = 0;
	}
	atomic_store(&e->sh->running, 0);
	return NULL;
}

/* The engine's private view of queue @index: pointers into the arena, and
 * its own op table and pending list (by slot). */
static int queue_init(struct fw_device *fd, struct fw_queue *q, uint32_t index)
{
	uint32_t depth = fd->w->g.depth;

	q->sh = q_queue(fd->w, fd->id, index);
	q->desc = q_descs(fd->w, fd->id, index);
	q->cpl = q_cpls(fd->w, fd->id, index);
	q->sq = q_sq(fd->w, fd->id, index);
	q->index = index;
	q->mask = depth - 1;
	q->head = atomic_load(&q->sh->sq_head);
	q->ops = calloc(depth, sizeof(*q->ops));
	q->pend = calloc(depth, sizeof(*q->pend));
	return q->ops && q->pend ? 0 : -ENOMEM;
}

void fw_device_stop(struct fw_device *fd)
{
	if (!fd)
		return;
	atomic_store_explicit(&fd->stop, 1, memory_order_release);
	for (uint32_t e = 0; e < fd->nengines; e++) {
		if (!fd->engines[e].started)
			continue;
		atomic_fetch_add(&fd->sh->engines[e].wake_seq, 1);
		q_futex_wake(&fd->sh->engines[e].wake_seq);
		pthread_join(fd->engines[e].thread, NULL);
	}
	fw_eager_fini(fd);
	fw_peer_fini(fd);
	for (uint32_t q = 0; fd->queues && q < fd->w->g.nq; q++) {
		free(fd->queues[q].ops);
		free(fd->queues[q].pend);
	}
	for (uint32_t e = 0; fd->engines && e < fd->nengines; e++)
		free(fd->engines[e].queues);
	free(fd->queues);
	free(fd->engines);
	free(fd);
}

int fw_device_start(const struct q_arena *w, const struct dma_space *space, uint32_t dev,
		    uint64_t spin_ns, int threads, int membarrier, struct fw_device **out)
{
	struct fw_device *fd = calloc(1, sizeof(*fd));
	int rc = -ENOMEM;

	if (!fd)
		return -ENOMEM;
	fd->w = w;
	fd->space = space;
	fd->id = dev;
	fd->sh = q_dev(w, dev);
	fd->spin_ns = spin_ns;
	fd->nengines = w->g.engines;
	fd->queues = calloc(w->g.nq, sizeof(*fd->queues));
	fd->engines = calloc(w->g.engines, sizeof(*fd->engines));
	if (!fd->queues || !fd->engines)
		goto fail;
	for (uint32_t q = 0; q < w->g.nq; q++)
		if (queue_init(fd, &fd->queues[q], q))
			goto fail;
	rc = fw_eager_init(fd);
	if (!rc)
		rc = fw_peer_init(fd);
	if (rc)
		goto fail;
	rc = -ENOMEM;
	for (uint32_t e = 0; e < fd->nengines; e++) {
		struct fw_engine *en = &fd->engines[e];

		en->dev = fd;
		en->index = e;
		en->sh = &fd->sh->engines[e];
		en->seen_epoch = atomic_load(&fd->sh->reset_epoch);
		en->queues = calloc(w->g.nq, sizeof(*en->queues));
		if (!en->queues)
			goto fail;
		for (uint32_t q = 0; q < w->g.nq; q++)
			if (q_queue_engine(&w->g, q) == e)
				en->queues[en->nqueues++] = &fd->queues[q];
	}
	fd->sh->polled = !threads; /* before any op can be posted to it */
	/* this process's sleepers will issue the membarrier: peers may kick light */
	atomic_store(&fd->sh->asym, (uint32_t)q_asym_register(membarrier));
	for (uint32_t e = 0; !threads && e < fd->nengines; e++)
		atomic_store(&fd->sh->engines[e].running, 1); /* polled: alive while the device is */
	for (uint32_t e = 0; threads && e < fd->nengines; e++) {
		rc = -pthread_create(&fd->engines[e].thread, NULL, engine_main, &fd->engines[e]);
		if (rc)
			goto fail;
		fd->engines[e].started = 1;
	}
	*out = fd;
	return 0;
fail:
	fw_device_stop(fd);
	return rc;
}
