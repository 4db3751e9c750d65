// SPDX-License-Identifier: MIT
/*
 * engine.c - engine threads: the device's processors of descriptors.
 *
 * An engine loops over its queues. When a pass changes nothing it spins for a
 * short while (work is often near: a peer is about to post), then announces
 * that it sleeps and waits on its doorbell futex. Whoever publishes work
 * (host post, a completion it may depend on, a mailbox request) kicks it.
 * While a host thread polls the device (fw_device_poll), the engine naps, and
 * naps on for a nap after a host whose wait ended done: it is usually back
 * within a round.
 */

#include "fw_stub/fw_internal.h"
#include "fw_stub/peer.h"

/* How long an engine naps while a host thread polls its device (fw.h). */
_Atomic uint32_t fw_nap_us = 1000;
/* How long an idle engine sleeps before it looks on its own: the kicks that
 * wake it rely on fences across processes (q_kick_fence()), and one lost
 * wake-up must not leave a message in a ring for good. The first look comes
 * after Q_SLEEP_RECHECK_NS, the next after the check period, each later one
 * after twice as long as the last, up to the longest: an idle engine wakes
 * about once in that time. */
#ifndef FW_SLEEP_CHECK_NS
#define FW_SLEEP_CHECK_NS 10000000
#endif
#define FW_SLEEP_CHECK_MAX_NS 2000000000ll
#define FW_RETRY_NS 1000000 /* a full table: look again after this long */

/* One pass of an engine: a pending reset, the mailbox (engine 0), its share of a
 * split copy, then each of its queues. Returns non-zero if anything moved. */
static int engine_pass(struct fw_engine *e)
{
	struct fw_device *fd = e->dev;
	uint32_t epoch = os_load(&fd->sh->reset_epoch, OS_ACQUIRE);
	int progress = 0, retry = 0;

	if (epoch != e->seen_epoch) {
		for (uint32_t i = 0; i < e->nqueues; i++)
			fw_queue_flush(fd, e->queues[i]);
		e->seen_epoch = epoch;
		os_store(&e->sh->ack_epoch, epoch, OS_SEQ_CST);
		q_engine_kick(fd->sh, 0);
		progress = 1;
	}
	if (e->index == 0) {
		progress |= fw_mailbox_poll(fd) | fw_peer_poll(fd);
		fw_race_point(FW_RACE_PASS, fd->id, e->index);
	}
	if (fd->nengines > 1)
		progress |= fw_split_help(fd);
	for (uint32_t i = 0; i < e->nqueues; i++) {
		e->queues[i]->retry = 0;
		progress |= fw_queue_progress(fd, e->queues[i]);
		retry |= e->queues[i]->retry;
	}
	os_store(&e->retry, retry, OS_RELAXED);
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

	if (os_exchange(&e->in_pass, 1, OS_ACQUIRE))
		return -1;
	/* One writer at a time (under in_pass): a heartbeat per pass, whoever runs it. */
	q_single_writer_add(&e->sh->heartbeats, 1);
	progress = engine_pass(e);
	os_store(&e->in_pass, 0, OS_RELEASE);
	return progress;
}

/* fw_device_poll_begin(): the poller count makes the engine threads nap
 * (engine_nap()) rather than compete with the polling host for the core. */
void fw_device_poll_begin(struct fw_device *fd)
{
	if (!fd)
		return;
	os_fetch_add(&fd->pollers, 1, OS_RELAXED);
	os_fetch_add(&fd->poll_sessions, 1, OS_RELAXED);
}

/* Does an engine nap longer than fw_nap_us with work (ops posted and not
 * read yet, or waiting on a partner, a dependency or the link)? A host that
 * leaves with its op done may not wait again soon, so that work should not
 * sit out the nap. */
static int held_in_long_nap(struct fw_device *fd)
{
	for (uint32_t i = 0; i < fd->nengines; i++) {
		struct fw_engine *e = &fd->engines[i];
		int held = 0;

		if (os_load(&e->napping, OS_SEQ_CST) != FW_NAP_LONG)
			continue;
		if (os_exchange(&e->in_pass, 1, OS_ACQUIRE))
			continue; /* a pass runs: its thread sees the work */
		/* Under in_pass: the engine's pending lists are ours to read. */
		for (uint32_t q = 0; q < e->nqueues && !held; q++)
			held = e->queues[q]->npend ||
			       e->queues[q]->head != os_load(&e->queues[q]->sh->sq_tail, OS_ACQUIRE);
		os_store(&e->in_pass, 0, OS_RELEASE);
		if (held)
			return 1;
	}
	return 0;
}

/* fw_device_poll_end(): @wake cuts the nap short when the poller leaves work behind. */
void fw_device_poll_end(struct fw_device *fd, int wake)
{
	if (!fd)
		return;
	os_fetch_sub(&fd->pollers, 1, OS_SEQ_CST);
	if (!wake && fd->host->nap_max_us > os_load(&fw_nap_us, OS_RELAXED))
		wake = held_in_long_nap(fd);
	if (wake) {
		os_fetch_add(&fd->poll_handoffs, 1, OS_SEQ_CST);
		fw_wake_nappers(fd);
	}
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
int fw_device_poll(struct fw_device *fd)
{
	int progress = 0;

	if (!fd)
		return 0;
	for (uint32_t e = 0; e < fd->nengines; e++)
		progress |= engine_try_pass(&fd->engines[e]) > 0;
	return progress;
}

int fw_device_submit(struct fw_device *fd, uint32_t queue, uint32_t count, int *idle)
{
	struct fw_queue *q;
	struct fw_engine *e;
	int n;

	*idle = 0;
	if (!fd || queue >= fd->w->g.nq)
		return 0;
	q = &fd->queues[queue];
	e = &fd->engines[q_queue_engine(&fd->w->g, queue)];
	/* a reset in progress is the engine's to finish first */
	if (os_load(&fd->sh->reset_epoch, OS_ACQUIRE) != e->seen_epoch)
		return 0;
	if (os_exchange(&e->in_pass, 1, OS_ACQUIRE))
		return 0; /* the engine is in a pass: it reads them */
	n = fw_queue_submit(fd, q, count);
	/* Under in_pass: the engine's pending lists are ours to read. */
	*idle = n > 0;
	for (uint32_t i = 0; i < e->nqueues && *idle; i++)
		*idle = !e->queues[i]->npend;
	os_store(&e->in_pass, 0, OS_RELEASE);
	return n;
}

/* The arena's stop flag stops every engine on it; a shared arena (shm) is
 * only ever stopped device by device, through fd->stop. */
static int stopping(const struct fw_device *fd)
{
	return os_load(&fd->w->sh->stop, OS_ACQUIRE) ||
	       os_load(&fd->stop, OS_ACQUIRE);
}

/*
 * While a host thread polls the device it does our work: competing with it for
 * the core only slows both down. Nap instead, without announcing `sleeping`,
 * so that posts ring no doorbell syscall; fw_device_poll_end() wakes us early
 * if the poller gives up before its work is done.
 *
 * A host whose wait ended with its op done usually posts the next step and
 * waits again within a round, so a nap in which a host polled is followed by
 * another even if nobody polls right now (hosted_lately()). Without it, an
 * engine that woke between two such waits would go to sleep, and every post
 * or message after it would pay for a wake-up (a context switch per round
 * where cores are few). So work a host leaves behind on success waits two
 * naps at most; a host that gives up hands it over at once.
 */
static void engine_nap(struct fw_engine *e)
{
	struct fw_device *fd = e->dev;
	uint32_t seq = os_load(&e->sh->wake_seq, OS_ACQUIRE);
	uint32_t sessions = os_load(&fd->poll_sessions, OS_RELAXED), handoffs;
	uint32_t base = os_load(&fw_nap_us, OS_RELAXED), us = e->nap_us > base ? e->nap_us : base;

	/* seq_cst store and loads, against fw_device_poll_end()'s: either it sees
	 * us napping, or we see that nobody polls any more, or that it handed over. */
	os_store(&e->napping, us > base ? FW_NAP_LONG : FW_NAP_SHORT, OS_SEQ_CST);
	handoffs = os_load(&fd->poll_handoffs, OS_SEQ_CST);
	if ((os_load(&fd->pollers, OS_SEQ_CST) || handoffs == e->seen_handoffs) && !stopping(fd)) {
		e->seen_sessions = sessions;
		e->seen_handoffs = handoffs;
		q_single_writer_add(&e->sh->naps, 1);
		os_wait32(&e->sh->wake_seq, seq, (int64_t)us * 1000);
	}
	os_store(&e->napping, FW_NAP_NONE, OS_RELAXED);
	/* A host that polled again during the nap waits in a loop (a ping-pong,
	 * a blocking recv a step), and each nap's end takes its core for a
	 * moment where cores are few: nap longer next time, up to the host's cap. */
	if ((os_load(&fd->pollers, OS_RELAXED) || os_load(&fd->poll_sessions, OS_RELAXED) != sessions) &&
	    os_load(&e->sh->wake_seq, OS_RELAXED) == seq && fd->host->nap_max_us > base)
		e->nap_us = us >= fd->host->nap_max_us / 2 ? fd->host->nap_max_us : us * 2;
	else
		e->nap_us = base;
}

/* Did a host thread start polling since we last looked, and nobody hand work
 * over since? Then nap on (engine_nap()). */
static int hosted_lately(const struct fw_engine *e)
{
	const struct fw_device *fd = e->dev;

	return os_load(&fd->poll_sessions, OS_RELAXED) != e->seen_sessions &&
	       os_load(&fd->poll_handoffs, OS_RELAXED) == e->seen_handoffs;
}

/* Forget the sessions so far: those of our sleep say nothing about now. */
static void seen_now(struct fw_engine *e)
{
	e->seen_sessions = os_load(&e->dev->poll_sessions, OS_RELAXED);
	e->seen_handoffs = os_load(&e->dev->poll_handoffs, OS_RELAXED);
}

/*
 * Sleep on the doorbell for up to @ns (announced, with @seq read after the
 * announcement); if nobody rang, look once on our own. If @count, work found
 * so is a wake-up that never came: counted (the stall report and world close
 * print it). Not after the short first sleep: what turns up there is mostly
 * work whose kick is late, not lost (its completer woke a host waiter first,
 * which can take its core), and counting it would cry wolf.
 * Return: 1 if woken or the look moved something (go round the loop), 0 if
 * still idle.
 */
static int sleep_then_look(struct fw_engine *e, uint32_t seq, int64_t ns, int count)
{
	int progress;

	if (os_wait32(&e->sh->wake_seq, seq, ns) != -ETIMEDOUT ||
	    os_load(&e->sh->wake_seq, OS_ACQUIRE) != seq)
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

	os_store(&e->sh->running, 1, OS_SEQ_CST);
	while (!stopping(fd)) {
		uint32_t seq;
		int progress;

		progress = engine_try_pass(e);
		if (progress > 0) {
			idle_since = 0;
			continue;
		}
		if (os_load(&fd->pollers, OS_RELAXED) || hosted_lately(e)) {
			engine_nap(e);
			idle_since = 0;
			continue;
		}
		if (progress < 0) {
			os_yield(); /* another thread is running our pass */
			idle_since = 0;
			continue;
		}
		if (!idle_since)
			idle_since = q_now_ns();
		if (q_now_ns() - idle_since < fd->spin_ns) {
			/* Yield rather than pause: with more threads than cores (many
			 * devices, or the host posting beside two engines on two cores)
			 * a pure spin starves the very thread that would give us work. */
			os_yield();
			continue;
		}
		/* Sleep protocol: announce, then look once more, then wait. A kicker
		 * either sees `sleeping` and bumps wake_seq, or we see its work. */
		os_store(&e->sh->sleeping, 1, OS_SEQ_CST);
		if (fd->link && fd->link->ops->idle)
			fd->link->ops->idle(fd->link); /* its messages must still wake us */
		q_sleep_fence(fd->sh);
		seq = os_load(&e->sh->wake_seq, OS_ACQUIRE);
		if (!engine_try_pass(e) && !stopping(fd)) {
			fw_race_point(FW_RACE_SLEEP, fd->id, e->index);
			/* The retry flag is read after the pass that sets it. */
			if (os_load(&e->retry, OS_RELAXED))
				os_wait32(&e->sh->wake_seq, seq, FW_RETRY_NS);
			/* A kick that raced the announcement is covered by the
			 * short first sleep: the membarrier that makes a peer's
			 * light kick safe can miss the kicker's CPU (a kernel
			 * fault: queue.h, q_kick_fence()), but the kicker's store
			 * is in memory well within it, and any later kicker reads
			 * `sleeping` set long before and wakes us. So the engine
			 * then sleeps on, still announced, with a backstop look
			 * that backs off to once a second: an idle world costs
			 * next to nothing, and a wake-up lost to a fault nobody
			 * foresaw still ends (counted in late_wakes). */
			else if (!sleep_then_look(e, seq, Q_SLEEP_RECHECK_NS, 0))
				for (int64_t ns = FW_SLEEP_CHECK_NS;
				     !stopping(fd) && !sleep_then_look(e, seq, ns, 1);)
					ns = ns < FW_SLEEP_CHECK_MAX_NS / 2 ? 2 * ns : FW_SLEEP_CHECK_MAX_NS;
		}
		os_store(&e->sh->sleeping, 0, OS_RELAXED);
		seen_now(e);
		idle_since = 0;
	}
	os_store(&e->sh->running, 0, OS_SEQ_CST);
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
	q->head = os_load(&q->sh->sq_head, OS_SEQ_CST);
	q->ops = os_zalloc(depth, sizeof(*q->ops));
	q->pend = os_zalloc(depth, sizeof(*q->pend));
	return q->ops && q->pend ? 0 : -ENOMEM;
}

void fw_device_stop(struct fw_device *fd)
{
	if (!fd)
		return;
	os_store(&fd->stop, 1, OS_RELEASE);
	for (uint32_t e = 0; e < fd->nengines; e++) {
		if (!fd->engines[e].started)
			continue;
		os_fetch_add(&fd->sh->engines[e].wake_seq, 1, OS_SEQ_CST);
		os_wake32(&fd->sh->engines[e].wake_seq);
		os_thread_join(&fd->engines[e].thread);
	}
	fw_eager_fini(fd);
	fw_stage_fini(fd);
	fw_peer_fini(fd);
	for (uint32_t q = 0; fd->queues && q < fd->w->g.nq; q++) {
		os_free(fd->queues[q].ops);
		os_free(fd->queues[q].pend);
	}
	for (uint32_t e = 0; fd->engines && e < fd->nengines; e++)
		os_free(fd->engines[e].queues);
	os_free(fd->queues);
	os_free(fd->engines);
	os_free(fd);
}

int fw_device_start(const struct q_arena *w, const struct dma_space *space, uint32_t dev,
		    uint64_t spin_ns, int threads, int membarrier, const struct fw_host *host,
		    struct fw_device **out)
{
	struct fw_device *fd = os_zalloc(1, sizeof(*fd));
	int rc = -ENOMEM;

	if (!fd)
		return -ENOMEM;
	fd->w = w;
	fd->space = space;
	fd->host = host;
	fd->id = dev;
	fd->link = host->link;
	fd->near_lo = !fd->link ? 0 : fd->link->solo ? dev : fd->link->near_lo;
	fd->near_n = !fd->link ? w->g.ndev : fd->link->solo ? 1 : fd->link->near_n;
	fd->sh = q_dev(w, dev);
	fd->spin_ns = spin_ns;
	fd->nengines = w->g.engines;
	fd->queues = os_zalloc(w->g.nq, sizeof(*fd->queues));
	fd->engines = os_zalloc(w->g.engines, sizeof(*fd->engines));
	if (!fd->queues || !fd->engines)
		goto fail;
	for (uint32_t q = 0; q < w->g.nq; q++)
		if (queue_init(fd, &fd->queues[q], q))
			goto fail;
	rc = fw_eager_init(fd);
	if (!rc)
		rc = fw_peer_init(fd);
	if (!rc)
		rc = fw_stage_init(fd);
	if (rc)
		goto fail;
	rc = -ENOMEM;
	for (uint32_t e = 0; e < fd->nengines; e++) {
		struct fw_engine *en = &fd->engines[e];

		en->dev = fd;
		en->index = e;
		en->sh = &fd->sh->engines[e];
		en->seen_epoch = os_load(&fd->sh->reset_epoch, OS_SEQ_CST);
		en->queues = os_zalloc(w->g.nq, sizeof(*en->queues));
		if (!en->queues)
			goto fail;
		for (uint32_t q = 0; q < w->g.nq; q++)
			if (q_queue_engine(&w->g, q) == e)
				en->queues[en->nqueues++] = &fd->queues[q];
	}
	fd->sh->polled = !threads; /* before any op can be posted to it */
	/* this process's sleepers will issue the membarrier: peers may kick light */
	os_store(&fd->sh->asym, (uint32_t)q_asym_register(membarrier), OS_SEQ_CST);
	for (uint32_t e = 0; !threads && e < fd->nengines; e++)
		os_store(&fd->sh->engines[e].running, 1, OS_SEQ_CST); /* polled: alive while the device is */
	for (uint32_t e = 0; threads && e < fd->nengines; e++) {
		rc = os_thread_start(&fd->engines[e].thread, "accdma-engine", engine_main, &fd->engines[e]);
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
