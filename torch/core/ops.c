// SPDX-License-Identifier: MIT
/*
 * ops.c - op lists: posting with back-pressure, waiting in order, and the
 * messages that name a failed or stuck op in the group's terms.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "atc.h"

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void atc_ops_free(struct atc_oplist *ol)
{
	for (int i = 0; i < ol->nred; i++)
		free(ol->reds[i]);
	free(ol->reds);
	free(ol->tok);
	free(ol->st);
	free(ol->desc);
	memset(ol, 0, sizeof(*ol));
}

static int grow(struct atc_oplist *ol)
{
	int cap = ol->cap ? ol->cap * 2 : 4;
	accdma_token *t = realloc(ol->tok, (size_t)cap * sizeof(*t));
	enum accdma_status *s;
	struct atc_opdesc *d;

	if (!t)
		return -ENOMEM;
	ol->tok = t;
	s = realloc(ol->st, (size_t)cap * sizeof(*s));
	if (!s)
		return -ENOMEM;
	ol->st = s;
	d = realloc(ol->desc, (size_t)cap * sizeof(*d));
	if (!d)
		return -ENOMEM;
	ol->desc = d;
	ol->cap = cap;
	return 0;
}

struct atc_red *atc_add_red(struct atc_oplist *ol)
{
	struct atc_red *r;

	if (ol->nred == ol->capred) {
		int cap = ol->capred ? ol->capred * 2 : 4;
		struct atc_red **n = realloc(ol->reds, (size_t)cap * sizeof(*n));

		if (!n)
			return NULL;
		ol->reds = n;
		ol->capred = cap;
	}
	r = calloc(1, sizeof(*r));
	if (r)
		ol->reds[ol->nred++] = r;
	return r;
}

int atc_post(struct atc_world *aw, struct atc_oplist *ol, const struct accdma_op *op,
	     const struct atc_opdesc *desc, int64_t timeout_ms, accdma_token *tok)
{
	int64_t deadline = 0;
	accdma_token t;
	int rc;

	if (ol->n == ol->cap && (rc = grow(ol)))
		return rc;
	for (;;) {
		pthread_mutex_lock(&aw->lock);
		rc = accdma_post(aw->q, op, 1, &t);
		pthread_mutex_unlock(&aw->lock);
		if (rc != -EAGAIN)
			break;
		/* The queue is full of ops in flight: they finish on the
		 * engine; give it the core for a while rather than spin. */
		if (!deadline)
			deadline = now_ms() + timeout_ms;
		else if (now_ms() > deadline)
			return -ETIMEDOUT;
		nanosleep(&(struct timespec){ 0, 50000 }, NULL);
	}
	if (rc < 0)
		return rc;
	ol->tok[ol->n] = t;
	ol->st[ol->n] = ACCDMA_OK;
	ol->desc[ol->n] = *desc;
	ol->desc[ol->n].guard_of = -1;
	ol->desc[ol->n].guarded = 0;
	ol->n++;
	if (tok)
		*tok = t;
	return 0;
}

int atc_post_recv(struct atc_world *aw, struct atc_oplist *ol, const struct accdma_op *op,
		  const struct atc_opdesc *desc, uint64_t expect, int64_t timeout_ms,
		  accdma_token *tok)
{
	struct atc_opdesc g = *desc;
	accdma_token r;
	int rc = atc_post(aw, ol, op, desc, timeout_ms, &r), i = ol->n - 1;

	if (rc)
		return rc;
	g.kind = ACCDMA_OP_AFTER_ALL;
	rc = atc_post(aw, ol,
		      &(struct accdma_op){ .kind = ACCDMA_OP_AFTER_ALL, .deps = &r, .num_deps = 1 }, &g,
		      timeout_ms, NULL);
	if (rc)
		return rc; /* the recv stays in the list, unguarded */
	ol->desc[i].guarded = 1;
	ol->desc[i].expect = expect;
	ol->desc[ol->n - 1].guard_of = i;
	if (tok)
		*tok = r;
	return 0;
}

char *atc_describe(const struct atc_oplist *ol, int i, char *buf, size_t size)
{
	const struct atc_opdesc *d = &ol->desc[i];
	const char *dir = d->kind == ACCDMA_OP_SEND ? "to" : "from";
	uint64_t tag = d->tag & ~(ATC_TAG_COLL | ((uint64_t)ATC_GID_MAX << ATC_GID_SHIFT));

	if (d->kind == ACCDMA_OP_RECV && d->peer < 0) {
		snprintf(buf, size, "%s: recv from any rank (tag %llu, %llu bytes)", d->what,
			 (unsigned long long)tag, (unsigned long long)d->bytes);
	} else if (d->kind == ACCDMA_OP_SEND || d->kind == ACCDMA_OP_RECV) {
		if (d->tag & ATC_TAG_COLL)
			snprintf(buf, size, "%s: %s %s rank %d (%llu bytes)", d->what,
				 accdma_op_kind_str(d->kind), dir, d->peer,
				 (unsigned long long)d->bytes);
		else
			snprintf(buf, size, "%s: %s %s rank %d (tag %llu, %llu bytes)", d->what,
				 accdma_op_kind_str(d->kind), dir, d->peer,
				 (unsigned long long)tag, (unsigned long long)d->bytes);
	} else {
		snprintf(buf, size, "%s: %s (%llu elements)", d->what, accdma_op_kind_str(d->kind),
			 (unsigned long long)d->bytes);
	}
	return buf;
}

/* The op whose failure explains the others: the first that did not fail
 * only because a dependency did. */
static int root_cause(const struct atc_oplist *ol)
{
	int first = -1;

	for (int i = 0; i < ol->n; i++) {
		if (ol->st[i] == ACCDMA_OK || ol->desc[i].guard_of >= 0)
			continue;
		if (ol->st[i] != ACCDMA_ST_NOT_ATTEMPTED)
			return i;
		if (first < 0)
			first = i;
	}
	return first;
}

static void stuck_msg(struct atc_world *aw, const struct atc_oplist *ol, int i, int64_t ms,
		      char *err, size_t errlen)
{
	struct accdma_op_info info;
	char what[160];
	const char *where = "";
	int cyc[16], nc;
	size_t len;

	/* A guard waits on its recv: name the recv. */
	if (ol->desc[i].guard_of >= 0)
		i = ol->desc[i].guard_of;
	if (!accdma_op_info(aw->w, ol->tok[i], &info)) {
		where = accdma_op_stage_str(info.stage);
		if ((info.kind == ACCDMA_OP_SEND || info.kind == ACCDMA_OP_RECV) &&
		    info.stage == ACCDMA_STAGE_PEER && !info.peer_posted)
			where = info.kind == ACCDMA_OP_SEND ?
					"waiting for peer: it has not posted the matching recv" :
					"waiting for peer: it has not posted the matching send";
	}
	snprintf(err, errlen, "accdma: timed out after %lld ms: %s, %s", (long long)ms,
		 atc_describe(ol, i, what, sizeof(what)), where);
	nc = accdma_find_cycle(aw->w, cyc, 16);
	len = strlen(err);
	for (int k = 0; k < nc && len + 16 < errlen; k++) {
		snprintf(err + len, errlen - len, "%s%d", k ? " -> " : "; cycle of devices: ", cyc[k]);
		len = strlen(err);
	}
}

/* Consume op @i (a guard: its recv too, checking the bytes that landed).
 * @ms < 0: only test. Return: 0, -EAGAIN / -ETIMEDOUT while pending, or
 * another negative errno from the library. */
static int consume(struct atc_world *aw, struct atc_oplist *ol, int i, int64_t ms)
{
	uint64_t moved;
	int rc, r = ol->desc[i].guard_of;

	rc = ms < 0 ? accdma_test(aw->w, ol->tok[i], &ol->st[i]) :
		      accdma_wait(aw->w, ol->tok[i], ms, &ol->st[i]);
	if (rc)
		return rc;
	ol->tok[i] = 0;
	if (r < 0)
		return 0;
	moved = ol->desc[r].expect;
	/* the source too: an any-source recv's is known only here */
	if (accdma_wait_source(aw->w, ol->tok[r], 0, &ol->st[r], &moved, &ol->desc[r].src_dev))
		ol->st[r] = ACCDMA_ST_FLUSHED;
	ol->tok[r] = 0;
	if (ol->st[r] == ACCDMA_OK && moved != ol->desc[r].expect && !ol->short1) {
		ol->short1 = r + 1;
		ol->got = moved;
	}
	return 0;
}

int atc_wait(struct atc_world *aw, struct atc_oplist *ol, int64_t timeout_ms, char *err,
	     size_t errlen, enum accdma_status *failed)
{
	int64_t deadline = now_ms() + timeout_ms;
	char what[160];
	int c;

	for (int i = ol->done; i < ol->n; i++) {
		int64_t left;
		int rc;

		if (!ol->tok[i] || ol->desc[i].guarded)
			continue;
		left = deadline - now_ms();
		rc = consume(aw, ol, i, left > 0 ? left : 0);
		if (rc == -ETIMEDOUT) {
			stuck_msg(aw, ol, i, timeout_ms, err, errlen);
			*failed = ACCDMA_OK;
			return rc;
		}
		if (rc) {
			snprintf(err, errlen, "accdma: waiting on %s: %s",
				 atc_describe(ol, i, what, sizeof(what)), strerror(-rc));
			*failed = ACCDMA_ST_FLUSHED;
			return rc;
		}
	}
	ol->done = ol->n;
	c = root_cause(ol);
	if (c >= 0) {
		const char *why = ol->st[c] == ACCDMA_ST_PEER_LOST ? " (the peer's process died)" :
				  ol->st[c] == ACCDMA_ST_TRUNCATED ?
								 " (the peer sent more bytes than the tensor holds)" :
								 "";

		snprintf(err, errlen, "accdma: %s failed: %s%s", atc_describe(ol, c, what, sizeof(what)),
			 accdma_status_str(ol->st[c]), why);
		*failed = ol->st[c];
		return -EIO;
	}
	if (ol->short1) {
		int r = ol->short1 - 1;

		snprintf(err, errlen, "accdma: %s received %llu bytes: the tensor holds %llu",
			 atc_describe(ol, r, what, sizeof(what)), (unsigned long long)ol->got,
			 (unsigned long long)ol->desc[r].expect);
		*failed = ACCDMA_ST_TRUNCATED;
		return -EMSGSIZE;
	}
	return 0;
}

int atc_stuck(const struct atc_oplist *ol)
{
	for (int i = ol->done; i < ol->n; i++) {
		if (!ol->tok[i] || ol->desc[i].guarded)
			continue;
		return ol->desc[i].guard_of >= 0 ? ol->desc[i].guard_of : i;
	}
	return -1;
}

int atc_test(struct atc_world *aw, struct atc_oplist *ol)
{
	for (int i = ol->done; i < ol->n; i++) {
		if (!ol->tok[i] || ol->desc[i].guarded)
			continue;
		if (consume(aw, ol, i, -1))
			return 0; /* pending, or an error atc_wait() will report */
	}
	return 1;
}

int atc_cancel(struct atc_world *aw, struct atc_oplist *ol, int64_t ms)
{
	int64_t deadline = now_ms() + ms;
	int left = 0;

	for (int i = ol->done; i < ol->n; i++)
		if (ol->tok[i])
			accdma_cancel(aw->w, ol->tok[i]);
	for (int i = ol->done; i < ol->n; i++) {
		int64_t t = deadline - now_ms();

		if (ol->tok[i] && !accdma_wait(aw->w, ol->tok[i], t > 0 ? t : 0, &ol->st[i]))
			ol->tok[i] = 0;
		left += ol->tok[i] != 0;
	}
	return !left;
}
