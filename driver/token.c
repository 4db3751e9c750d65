// SPDX-License-Identifier: MIT
/*
 * token.c - waiting on, testing, releasing and canceling tokens.
 *
 * A waiter spins briefly on the completion record (completions are often
 * microseconds away), then sleeps on its device's completion counter, which
 * every completion bumps. Every wait has a deadline.
 */
#include <sched.h>
#include <stdio.h>

#include "driver/internal.h"

/* How long a waiter polls before it sleeps, where engine threads could do
 * the work instead; a build may move it (0: every wait sleeps at once). */
#ifndef WAIT_SPIN_NS
#define WAIT_SPIN_NS 20000
#endif
/* The same for a wait on one small transfer (a send, recv or write of at
 * most WAIT_SMALL_BYTES): its completion is a hand-off away unless its peer
 * is late, and a waiter that sleeps hands the work to an engine thread that
 * may share its CPU, whose turns then lengthen the rounds around it.
 * Large copies keep the short spin: a longer
 * one would take that much CPU from the engine copying beside it. */
#ifndef WAIT_SPIN_SMALL_NS
#define WAIT_SPIN_SMALL_NS 200000
#endif
#define WAIT_SMALL_BYTES ACCDMA_EAGER_MAX
#define WAIT_YIELD_EVERY 16 /* idle polls between yields while a waiter spins */
#define WAIT_SLICE_NS 10000000ull /* a sleeping waiter looks again after this long */
#define WAIT_ALL_KEEP 8     /* records accdma_wait_all() keeps from its check, not looked up twice */

/* The host's view of the queue a (checked) token names: no walk through the arena's offsets. */
static struct accdma_queue *token_queue(struct accdma_world *w, accdma_token t)
{
	return &w->queues[q_token_dev(t) * (uint32_t)w->opts.queues + q_token_queue(t)];
}

/**
 * drv_wait_spin_ns() - how long a waiter on @t polls before it sleeps.
 * @w: the world. @t: a checked token of a local device, or 0 (several ops).
 * Return: the transport's small_spin_ns (default WAIT_SPIN_SMALL_NS) for a
 * send, recv or write of at most WAIT_SMALL_BYTES, else WAIT_SPIN_NS. Read
 * from the op's descriptor, which this process wrote and which stays put
 * while the token is live.
 */
uint64_t drv_wait_spin_ns(struct accdma_world *w, accdma_token t)
{
	const struct q_desc *d;

	if (!t)
		return WAIT_SPIN_NS;
	d = &token_queue(w, t)->desc[q_token_slot(t)];
	switch (d->kind) {
	case ACCDMA_OP_SEND:
	case ACCDMA_OP_RECV:
	case ACCDMA_OP_WRITE:
		if (d->length > WAIT_SMALL_BYTES)
			return WAIT_SPIN_NS;
		return w->tp->small_spin_ns ? w->tp->small_spin_ns : WAIT_SPIN_SMALL_NS;
	default:
		return WAIT_SPIN_NS;
	}
}

/* drv_token_cpl() for a caller that has checked the world. Inlined: every
 * wait looks up each of its tokens, and the call cost a third of the look. */
static inline __attribute__((always_inline)) int
token_lookup(struct accdma_world *w, accdma_token t, struct q_queue_sh **qs, struct q_cpl **c)
{
	uint32_t dev = q_token_dev(t);
	struct accdma_queue *q;

	/* gen 0 covers token 0; a local device is in the world (below first_local
	 * the difference wraps to a large unsigned value: one compare for both ends) */
	if (q_token_gen(t) == 0 || (uint32_t)((int)dev - w->first_local) >= (uint32_t)w->nlocal ||
	    q_token_queue(t) >= (uint32_t)w->opts.queues || q_token_slot(t) >= w->opts.queue_depth)
		return -EINVAL;
	q = token_queue(w, t);
	*qs = q->sh;
	*c = &q->cpl[q_token_slot(t)];
	/* State before generation: a reused slot's POSTED orders its new generation before our read. */
	if (atomic_load_explicit(&(*c)->state, memory_order_acquire) < Q_SLOT_POSTED ||
	    atomic_load_explicit(&(*c)->gen, memory_order_acquire) != q_token_gen(t) ||
	    !atomic_load_explicit(&(*c)->token, memory_order_acquire))
		return -ESTALE;
	return 0;
}

/**
 * drv_token_cpl() - find the completion record a token names.
 * @w: the world. @t: the token. @qs/@c: the queue and record.
 * Return: 0 if the token is live and still owned by the caller; -EBADF;
 * -EINVAL for a malformed token; -ESTALE if consumed or never issued.
 */
int drv_token_cpl(struct accdma_world *w, accdma_token t, struct q_queue_sh **qs, struct q_cpl **c)
{
	if (drv_world_check(w))
		return -EBADF;
	return token_lookup(w, t, qs, c);
}

/* The record of a token drv_token_cpl() has already accepted. */
static struct q_cpl *token_cpl_checked(struct accdma_world *w, accdma_token t)
{
	return &token_queue(w, t)->cpl[q_token_slot(t)];
}

/* The op is complete (acquire: its status and bytes are visible). */
static int is_done(struct q_cpl *c)
{
	return atomic_load_explicit(&c->state, memory_order_acquire) == Q_SLOT_DONE;
}

/* Give the token back: read the status first, the slot may be reused after. */
static inline __attribute__((always_inline)) int
consume_src(struct accdma_world *w, struct q_cpl *c, enum accdma_status *status, uint64_t *bytes, int *src)
{
	enum accdma_status st = atomic_load_explicit(&c->status, memory_order_relaxed);
	uint64_t moved = bytes ? atomic_load_explicit(&c->bytes, memory_order_relaxed) : 0;
	int32_t from = src ? atomic_load_explicit(&c->src, memory_order_relaxed) : 0;

	if (q_slot_consume_token(c, w->opts.queues > 1))
		return -ESTALE;
	if (status)
		*status = st;
	if (bytes)
		*bytes = moved;
	if (src)
		*src = from;
	return 0;
}

static inline __attribute__((always_inline)) int
consume_bytes(struct accdma_world *w, struct q_cpl *c, enum accdma_status *status, uint64_t *bytes)
{
	return consume_src(w, c, status, bytes, NULL);
}

static inline __attribute__((always_inline)) int
consume(struct accdma_world *w, struct q_cpl *c, enum accdma_status *status)
{
	return consume_bytes(w, c, status, NULL);
}

/* A negative timeout means the world's default. */
static int64_t timeout_of(const struct accdma_world *w, int64_t timeout_ms)
{
	return timeout_ms < 0 ? w->opts.timeout_ms : timeout_ms;
}

/**
 * drv_poll() - run an idle pass of every local device's engines on this thread.
 * @w: the world. Return: non-zero if anything progressed (0 when polling is off).
 */
int drv_poll(struct accdma_world *w)
{
	int progress = 0;

	if (!w->host_poll && w->threaded)
		return 0;
	for (int d = w->first_local; d < w->first_local + w->nlocal; d++)
		progress |= fw_device_poll(w->devs[d].fw);
	return progress;
}

/* Tell the local devices a host thread polls them (@on), or stops (@wake: it
 * leaves work behind, so their engine threads should not finish their nap). */
static void drv_poll_session(struct accdma_world *w, int on, int wake)
{
	if (!w->host_poll || !w->threaded)
		return;
	for (int d = w->first_local; d < w->first_local + w->nlocal; d++) {
		if (on)
			fw_device_poll_begin(w->devs[d].fw);
		else
			fw_device_poll_end(w->devs[d].fw, wake);
	}
}

/* A wait's timeout, turned into a deadline only when the clock is first read:
 * a clock read costs as much as a few polls, and most waits end
 * before the first one. */
struct wait_clock {
	int64_t ms;
	uint64_t deadline; /* 0 until computed */
	accdma_token token; /* the one (checked) op waited for, which sets the spin; 0: several */
};

static uint64_t wait_deadline(struct wait_clock *wc, uint64_t now)
{
	if (!wc->deadline)
		wc->deadline = (uint64_t)wc->ms > (UINT64_MAX - now) / 1000000ull
				       ? UINT64_MAX /* "forever" saturates */
				       : now + (uint64_t)wc->ms * 1000000ull;
	return wc->deadline;
}

static void (*_Atomic wait_race_fn)(void *arg);
static void *_Atomic wait_race_arg;

void drv_wait_race_set(void (*fn)(void *arg), void *arg)
{
	/* The argument before the function, and never cleared: a call racing
	 * this one gets a function with its own argument. */
	if (fn)
		atomic_store(&wait_race_arg, arg);
	atomic_store(&wait_race_fn, fn);
}

static void wait_race_point(void)
{
	void (*fn)(void *) = atomic_load_explicit(&wait_race_fn, memory_order_acquire);

	if (fn)
		fn(atomic_load(&wait_race_arg));
}

/* Where the engines run in the kernel (kmod), the waiter lends them its
 * thread there: each call runs passes until @watch (the op's record; NULL:
 * until a pass moves something) changes or the spin ends, with no system
 * call per pass. The clock is read only once a call ends early: under
 * emulation a read (HPET) costs as much as a round. 0 when @done(),
 * -ESHUTDOWN once the world closes, or -ETIMEDOUT when the spin is over
 * (then sleep); the spin is at most twice the wait's. */
static int spin_in_transport(struct accdma_world *w, _Atomic uint32_t *watch, int (*done)(void *),
			     void *arg, struct wait_clock *wc)
{
	uint64_t spin = drv_wait_spin_ns(w, wc->token), end = 0, now;
	int rc;

	if ((uint64_t)wc->ms <= spin / 1000000)
		spin = (uint64_t)wc->ms * 1000000;
	for (;;) {
		/* the word's value before the look: a change after it ends the call */
		uint32_t val = watch ? atomic_load_explicit(watch, memory_order_acquire) : 0;

		if (done(arg))
			return 0;
		if (drv_closing(w))
			return -ESHUTDOWN;
		if (end) {
			now = q_now_ns();
			if (now >= end)
				return -ETIMEDOUT;
			spin = end - now;
		}
		/* -EINTR: the handler ran, look again; -EAGAIN: no pass here */
		rc = w->tp->poll(w, watch, val, spin);
		if (rc == -ETIMEDOUT || rc == -EAGAIN)
			return done(arg) ? 0 : -ETIMEDOUT;
		if (!end)
			end = q_now_ns() + spin;
	}
}

/* Wait until @done() or the deadline of @wc, polling first (unless the
 * timeout is 0), then sleeping on the completion counter @seq_word
 * (registered in @waiters); @dev: a device of this process, whose waiters
 * these are (it says how the sleep is fenced); @watch: a word whose change
 * may mean @done() (the op's record), or NULL. The caller is registered
 * (drv_block_enter()). 0, -ETIMEDOUT, or -ESHUTDOWN once the world closes. */
static int sleep_on(struct accdma_world *w, _Atomic uint32_t *seq_word, _Atomic uint32_t *waiters,
		    struct q_dev_sh *dev, int (*done)(void *), void *arg, _Atomic uint32_t *watch,
		    struct wait_clock *wc)
{
	uint64_t now, spin_end = 0, slice = 0;
	unsigned int idle = 0;
	int rc = -ETIMEDOUT, unwoken = 0;

	drv_note_wait(w);
	if (wc->ms > 0 && w->host_poll && w->tp->poll) {
		rc = spin_in_transport(w, watch, done, arg, wc);
		if (rc != -ETIMEDOUT)
			return rc;
	} else if (wc->ms > 0) {
		drv_poll_session(w, 1, 0);
		for (unsigned int i = 1;; i++) {
			if (done(arg)) {
				drv_poll_session(w, 0, 0);
				return 0;
			}
			/* Move the work along ourselves when allowed. With nothing to
			 * do, pause and look again (a peer's message is often a few
			 * hundred ns away, and a yield is a syscall); yield now and
			 * then, for the engines or peers that may need our core. */
			if (drv_poll(w))
				idle = 0;
			else if (++idle % WAIT_YIELD_EVERY == 0)
				sched_yield();
			else
				q_cpu_relax();
			if (i % 16)
				continue;
			now = q_now_ns();
			wait_deadline(wc, now);
			if (!spin_end) /* polled devices move only while we poll */
				spin_end = w->threaded ? now + drv_wait_spin_ns(w, wc->token) : wc->deadline;
			if (drv_closing(w)) {
				drv_poll_session(w, 0, 1);
				return -ESHUTDOWN;
			}
			if (now >= spin_end || now >= wc->deadline)
				break;
		}
		drv_poll_session(w, 0, 1); /* going to sleep: the engines take over now */
	}
	atomic_fetch_add_explicit(waiters, 1, memory_order_seq_cst);
	/* Registered: from here every completer that misses DONE sees us (the
	 * membarrier makes its light kick a real fence, see q_kick_fence()). */
	q_sleep_fence(dev);
	for (;;) {
		uint32_t seq = atomic_load_explicit(seq_word, memory_order_seq_cst);

		atomic_thread_fence(memory_order_seq_cst);
		uint64_t left;

		if (done(arg)) {
			/* Done, and nobody woke us through a full slice: count it
			 * (not after the short first one: see sleep_then_look() in
			 * fw_stub/engine.c for why that would cry wolf). */
			if (unwoken)
				atomic_fetch_add_explicit(&w->late_waits, 1, memory_order_relaxed);
			rc = 0;
			break;
		}
		if (drv_closing(w)) {
			rc = -ESHUTDOWN;
			break;
		}
		now = q_now_ns();
		if (now >= wait_deadline(wc, now))
			break;
		left = wc->deadline - now;
		/* Look again now and then: a wake-up that went missing (they rely on
		 * fences across processes, see Q_SLEEP_RECHECK_NS) then costs the
		 * short first slice, or at worst one slice, not the deadline. */
		slice = slice ? WAIT_SLICE_NS : (uint64_t)Q_SLEEP_RECHECK_NS;
		wait_race_point();
		unwoken = q_futex_wait(seq_word, seq, (int64_t)(left < slice ? left : slice)) == -ETIMEDOUT &&
			  slice == WAIT_SLICE_NS && left >= slice &&
			  atomic_load_explicit(seq_word, memory_order_relaxed) == seq;
	}
	atomic_fetch_sub_explicit(waiters, 1, memory_order_relaxed);
	return rc;
}

/* sleep_on() the completion counter of device @dev. */
static int sleep_until(struct accdma_world *w, uint32_t dev, int (*done)(void *), void *arg,
		       _Atomic uint32_t *watch, struct wait_clock *wc)
{
	struct q_dev_sh *ds = q_dev(&w->a, dev);

	return sleep_on(w, &ds->cq_seq, &ds->cq_waiters, ds, done, arg, watch, wc);
}

static int cpl_done(void *arg)
{
	return is_done(arg);
}

/* accdma_wait() and accdma_wait_bytes(): the op's record is read only while
 * the thread is either on the fast path (the op found done) or registered. */
static inline __attribute__((always_inline)) int
wait_one(struct accdma_world *w, accdma_token t, int64_t timeout_ms, enum accdma_status *status,
	 uint64_t *bytes, int *src)
{
	struct wait_clock wc = { 0, 0, 0 };
	struct q_queue_sh *qs;
	struct q_cpl *c;
	int rc = drv_token_cpl(w, t, &qs, &c);

	if (rc)
		return rc;
	if (is_done(c))
		return consume_src(w, c, status, bytes, src);
	if (drv_block_enter(w))
		return -ESHUTDOWN;
	wc.ms = timeout_of(w, timeout_ms);
	wc.token = t;
	rc = sleep_until(w, q_token_dev(t), cpl_done, c, &c->state, &wc);
	if (rc == -ETIMEDOUT)
		drv_log_timeout(w, t, wc.ms);
	else if (rc == 0)
		rc = consume_src(w, c, status, bytes, src);
	drv_block_leave(w);
	return rc;
}

int accdma_wait(accdma_world *w, accdma_token t, int64_t timeout_ms, enum accdma_status *status)
{
	return wait_one(w, t, timeout_ms, status, NULL, NULL);
}

int accdma_wait_bytes(accdma_world *w, accdma_token t, int64_t timeout_ms,
		      enum accdma_status *status, uint64_t *bytes)
{
	return wait_one(w, t, timeout_ms, status, bytes, NULL);
}

int accdma_wait_source(accdma_world *w, accdma_token t, int64_t timeout_ms,
		       enum accdma_status *status, uint64_t *bytes, int *source)
{
	return wait_one(w, t, timeout_ms, status, bytes, source);
}

int accdma_test(accdma_world *w, accdma_token t, enum accdma_status *status)
{
	struct q_queue_sh *qs;
	struct q_cpl *c;
	int rc = drv_token_cpl(w, t, &qs, &c);

	if (rc)
		return rc;
	if (!is_done(c)) {
		drv_note_wait(w);
		if (!w->threaded)
			drv_poll(w); /* a polled device moves only when someone polls it */
	}
	return is_done(c) ? consume(w, c, status) : -EAGAIN;
}

int accdma_wait_all(accdma_world *w, accdma_token *tokens, int count, int64_t timeout_ms,
		    enum accdma_status *statuses)
{
	struct wait_clock wc = { 0, 0, 0 };
	struct q_queue_sh *qs;
	struct q_cpl *c, *first[WAIT_ALL_KEEP];
	int rc, entered = 0, sorted = 1;

	if (drv_world_check(w))
		return -EBADF;
	if (!tokens || count < 0)
		return -EINVAL;
	for (int i = 0; i < count; i++) {
		rc = token_lookup(w, tokens[i], &qs, &c);
		if (rc)
			return rc;
		if (i < WAIT_ALL_KEEP)
			first[i] = c;
		/* slots (device, queue, slot: a token's low half) in strictly
		 * increasing order, as one queue's posts are, cannot repeat */
		if (i && (uint32_t)tokens[i] <= (uint32_t)tokens[i - 1])
			sorted = 0;
	}
	if (!sorted) {
		rc = drv_tokens_repeat(tokens, count);
		if (rc)
			return rc < 0 ? rc : -EINVAL;
	}
	wc.ms = timeout_of(w, timeout_ms); /* one deadline for all of them */
	for (int i = 0; i < count; i++) {
		c = i < WAIT_ALL_KEEP ? first[i] : token_cpl_checked(w, tokens[i]);
		wc.token = tokens[i];
		if (!is_done(c)) {
			if (!entered && drv_block_enter(w))
				return -ESHUTDOWN;
			entered = 1;
			rc = sleep_until(w, q_token_dev(tokens[i]), cpl_done, c, &c->state, &wc);
			if (rc == -ESHUTDOWN)
				goto out;
			if (rc) {
				/* Consume what is done, so the caller only keeps the stuck ones. */
				for (int j = i; j < count; j++) {
					c = token_cpl_checked(w, tokens[j]);
					if (is_done(c) && consume(w, c, statuses ? &statuses[j] : NULL) == 0)
						tokens[j] = 0;
				}
				drv_log_timeout(w, tokens[i], wc.ms);
				rc = -ETIMEDOUT;
				goto out;
			}
		}
		rc = consume(w, c, statuses ? &statuses[i] : NULL);
		if (rc)
			goto out;
		tokens[i] = 0;
	}
	q_trace(Q_TRACE_WAITED);
	rc = 0;
out:
	if (entered)
		drv_block_leave(w);
	return rc;
}

struct any_arg {
	struct accdma_world *w;
	accdma_token *tokens;
	int count;
	int found;
};

static int any_done(void *arg)
{
	struct any_arg *a = arg;
	struct q_queue_sh *qs;
	struct q_cpl *c;

	for (int i = 0; i < a->count; i++) {
		if (a->tokens[i] && token_lookup(a->w, a->tokens[i], &qs, &c) == 0 && is_done(c)) {
			a->found = i;
			return 1;
		}
	}
	return 0;
}

int accdma_wait_any(accdma_world *w, accdma_token *tokens, int count, int64_t timeout_ms,
		    enum accdma_status *status)
{
	struct any_arg a = { w, tokens, count, -1 };
	struct wait_clock wc = { 0, 0, 0 };
	struct q_queue_sh *qs;
	struct q_cpl *c;
	uint32_t dev = 0;
	int live = 0, same_dev = 1, entered = 0, rc;
	int64_t ms;

	if (drv_world_check(w))
		return -EBADF;
	if (!tokens || count < 0)
		return -EINVAL;
	for (int i = 0; i < count; i++) {
		if (!tokens[i])
			continue;
		rc = drv_token_cpl(w, tokens[i], &qs, &c);
		if (rc)
			return rc;
		if (live++ == 0)
			dev = q_token_dev(tokens[i]);
		else if (q_token_dev(tokens[i]) != dev)
			same_dev = 0;
	}
	if (!live)
		return -EINVAL;
	ms = timeout_of(w, timeout_ms);
	wc.ms = ms;
	if (any_done(&a)) {
		drv_note_wait(w); /* as sleep_on() would have, before its first look */
	} else { /* only a wait that blocks registers */
		if (drv_block_enter(w))
			return -ESHUTDOWN;
		entered = 1;
		/* Tokens of several devices: sleep on the world's counter of any completion. */
		rc = same_dev ? sleep_until(w, dev, any_done, &a, NULL, &wc)
			      : sleep_on(w, &w->a.sh->any_seq, &w->a.sh->any_waiters, q_dev(&w->a, dev),
					 any_done, &a, NULL, &wc);
		if (rc) {
			for (int i = 0; rc == -ETIMEDOUT && i < count; i++)
				if (tokens[i]) {
					drv_log_timeout(w, tokens[i], ms);
					break;
				}
			drv_block_leave(w);
			return rc;
		}
	}
	token_lookup(w, tokens[a.found], &qs, &c);
	rc = consume(w, c, status);
	if (rc == 0) {
		tokens[a.found] = 0;
		rc = a.found;
	}
	if (entered)
		drv_block_leave(w);
	return rc;
}

int accdma_release(accdma_world *w, accdma_token t)
{
	struct q_queue_sh *qs;
	struct q_cpl *c;
	int rc = drv_token_cpl(w, t, &qs, &c);

	if (rc)
		return rc;
	return consume(w, c, NULL);
}

int accdma_cancel(accdma_world *w, accdma_token t)
{
	struct q_queue_sh *qs;
	struct q_cpl *c;
	int rc = drv_token_cpl(w, t, &qs, &c);

	if (rc)
		return rc;
	atomic_store_explicit(&c->cancel, 1, memory_order_relaxed);
	q_engine_kick(q_dev(&w->a, q_token_dev(t)), q_queue_engine(&w->a.g, q_token_queue(t)));
	return 0;
}
