/* SPDX-License-Identifier: MIT */
/*
 * qt_run_drive.c - the runner's driving: post every local device's program
 * from one thread without blocking (exec steps included), settle tokens, and
 * wait on all blocked devices at once until done or no progress.
 */
#include "qt_run_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* exec function: runs on an engine thread. Touches only its own range. */
static int exec_step(void *p)
{
	struct exec_arg *a = p;

	switch (a->kind) {
	case QE_FAIL:
		return 1;
	case QE_SLEEP: {
		struct timespec ts = { a->ms / 1000, (long)(a->ms % 1000) * 1000000L };

		nanosleep(&ts, NULL);
		return 0;
	}
	case QE_COPY:
		for (int64_t k = 0; k < a->count; k++)
			store_elem(a->type, a->base, k, load_elem(a->src_type, a->src, k));
		return 0;
	default:
		break;
	}
	for (int64_t k = 0; k < a->count; k++) {
		struct qt_val x = load_elem(a->type, a->base, k), v = a->vals[k], res;

		if (a->kind == QE_FILL) {
			res = v;
		} else if (!x.is_float && !v.is_float) {
			uint64_t ux = (uint64_t)x.i, uv = (uint64_t)v.i;

			res = qt_val_int((int64_t)(a->kind == QE_ADD ? ux + uv : ux * uv));
		} else {
			double dx = qt_val_double(x), dv = qt_val_double(v);

			res.is_float = 1;
			res.i = 0;
			res.f = a->kind == QE_ADD ? dx + dv : dx * dv;
		}
		store_elem(a->type, a->base, k, res);
	}
	return 0;
}

void record(struct devrt *d, int idx, enum accdma_status st)
{
	if (idx < 0) {
		d->fail_tok = 0;
		return;
	}
	d->state[idx] = IS_DONE;
	d->status[idx] = (int)st;
}

/* Build the exec argument; values are evaluated here, on the posting thread. */
static struct exec_arg *make_exec_arg(struct run *rn, struct devrt *d, const struct qt_ins *in)
{
	const struct qt_buffer_decl *b = in->buf >= 0 ? &rn->sc->bufs[in->buf] : NULL;
	int64_t count = in->buf >= 0 ? in->hi - in->lo : 0;
	int needs_vals = in->exec == QE_ADD || in->exec == QE_SCALE || in->exec == QE_FILL;
	struct exec_arg *a;

	a = calloc(1, sizeof(*a) + (needs_vals ? sizeof(struct qt_val) * (size_t)count : 0));
	if (!a)
		return NULL;
	a->next = rn->args;
	rn->args = a;
	a->kind = in->exec;
	a->ms = in->value;
	a->count = count;
	if (b) {
		a->type = b->type;
		a->base = d->ptr[in->buf] + in->lo * (int64_t)qt_type_size(b->type);
	}
	if (in->exec == QE_COPY) {
		a->src_type = rn->sc->bufs[in->buf2].type;
		a->src = d->ptr[in->buf2] + in->off2 * (int64_t)qt_type_size(a->src_type);
	}
	if (needs_vals) {
		struct qt_var store[QT_ENV_MAX];
		struct qt_env env = { store, 0, QT_ENV_MAX };
		char msg[200];

		memcpy(store, in->env->vars, sizeof(struct qt_var) * (size_t)in->env->n);
		env.n = in->env->n;
		if (qt_env_set(&env, "i", qt_val_int(0))) {
			rfail(rn, "%s:%d: too many variables", rn->sc->file, in->st->line);
			return NULL;
		}
		for (int64_t k = 0; k < count; k++) {
			env.vars[env.n - 1].v = qt_val_int(in->lo + k);
			if (qt_eval(in->st->arg, &env, &a->vals[k], msg, sizeof(msg))) {
				rfail(rn, "%s:%s (rank %d)", rn->sc->file, msg, d->rank);
				return NULL;
			}
		}
	}
	return a;
}

/*
 * Post instruction @idx of @d. Return: 1 posted (or settled without posting),
 * 0 blocked on a full queue, -1 scenario error.
 */
static int exec_fail(void *arg)
{
	(void)arg;
	return 1;
}

static int post_one(struct run *rn, struct devrt *d, int idx)
{
	const struct qt_ins *in = &d->dp->ins[idx];
	accdma_token deps[ACCDMA_MAX_DEPS], tok = 0;
	int ndeps = 0, rc, failed_dep = 0;
	struct accdma_op op;

	for (int k = 0; k < in->ndeps; k++) {
		int j = in->deps[k];

		switch (d->state[j]) {
		case IS_OUT:
			deps[ndeps++] = d->tok[j];
			break;
		case IS_DONE:
			/* consumed early (full queue or wait): if it failed, depend on a
			 * stand-in failed op so the library still completes this op
			 * NOT_ATTEMPTED (and its partner PEER_ERROR) */
			if (d->status[j] != ACCDMA_OK && !failed_dep) {
				failed_dep = 1;
				if (!d->fail_tok) {
					struct accdma_op f;

					memset(&f, 0, sizeof(f));
					f.kind = ACCDMA_OP_EXEC;
					f.fn = exec_fail;
					rc = accdma_post(d->q, &f, 1, &d->fail_tok);
					if (rc == -EAGAIN)
						return 0;
					if (rc < 0) {
						d->fail_tok = 0;
						rfail(rn, "rank %d: posting a stand-in op failed: %s",
						      d->rank, strerror(-rc));
						return -1;
					}
				}
				deps[ndeps++] = d->fail_tok;
			}
			break;
		default:
			break; /* released: not tracked */
		}
	}
	memset(&op, 0, sizeof(op));
	op.deps = ndeps ? deps : NULL;
	op.num_deps = ndeps;
	op.peer = in->peer;
	op.tag = in->tag;
	if (in->buf >= 0) {
		size_t esz = qt_type_size(rn->sc->bufs[in->buf].type);

		op.key = in->badkey ? QT_BAD_KEY : d->keys[in->buf];
		op.offset = (uint64_t)in->lo * esz;
		op.length = (uint64_t)(in->hi - in->lo) * esz;
	}
	switch (in->op) {
	case QO_SEND:
		op.kind = ACCDMA_OP_SEND;
		break;
	case QO_RECV:
		op.kind = ACCDMA_OP_RECV;
		break;
	case QO_WRITE: {
		op.kind = ACCDMA_OP_WRITE;
		/* the peer's key for that buffer (exchanged between processes under shm);
		 * a peer out of range is refused by accdma_post() */
		op.remote_key = in->peer >= 0 && in->peer < rn->plan->N ?
			rn->keys_all[(size_t)in->peer * QT_MAX_BUFFERS + (size_t)in->buf2] : 0;
		op.remote_offset = (uint64_t)in->off2 * qt_type_size(rn->sc->bufs[in->buf2].type);
		break;
	}
	case QO_FENCE:
		op.kind = ACCDMA_OP_FENCE;
		break;
	case QO_AFTER_ALL:
		op.kind = ACCDMA_OP_AFTER_ALL;
		if (ndeps == 0) {
			/* every joined token already completed OK: join nothing, nothing to post */
			record(d, idx, ACCDMA_OK);
			return 1;
		}
		break;
	case QO_EXEC: {
		struct exec_arg *a = make_exec_arg(rn, d, in);

		if (!a) {
			if (!rn->failed)
				rfail(rn, "out of memory");
			return -1;
		}
		op.kind = ACCDMA_OP_EXEC;
		op.fn = exec_step;
		op.arg = a;
		break;
	}
	case QO_BARRIER:
	case QO_PERMUTE:
		break;
	}
	if (in->op == QO_BARRIER) {
		rc = accdma_barrier(d->q, op.deps, ndeps, &tok);
	} else if (in->op == QO_PERMUTE) {
		size_t esz = qt_type_size(rn->sc->bufs[in->buf].type);

		rc = accdma_permute(d->q, in->pairs, in->npairs, in->tag, d->keys[in->buf], op.offset,
				    d->keys[in->buf2],
				    (uint64_t)in->off2 * qt_type_size(rn->sc->bufs[in->buf2].type),
				    op.length, op.deps, ndeps, &tok);
		(void)esz;
	} else {
		rc = accdma_post(d->q, &op, 1, &tok);
		if (rc == 1)
			rc = 0;
	}
	if (rc == -EAGAIN)
		return 0;
	if (rc < 0) {
		rfail(rn, "%s:%d: rank %d: posting %s failed: %s", rn->sc->file, in->st->line,
		      d->rank, op_name(in), strerror(-rc));
		return -1;
	}
	d->tok[idx] = tok;
	d->state[idx] = IS_OUT;
	rn->r->ops++;
	if (in->op == QO_SEND || in->op == QO_WRITE || in->op == QO_PERMUTE)
		rn->r->bytes += op.length;
	return 1;
}

/* Test token @idx without blocking. Return 1 if it is settled, 0 if pending, -1 on error. */
static int try_settle(struct run *rn, struct devrt *d, int idx)
{
	enum accdma_status st;
	int rc;

	if (d->state[idx] != IS_OUT)
		return 1;
	rc = accdma_test(rn->w, d->tok[idx], &st);
	if (rc == 0) {
		record(d, idx, st);
		return 1;
	}
	if (rc == -EAGAIN) {
		d->blocking = d->tok[idx];
		d->blocking_ins = idx;
		return 0;
	}
	rfail(rn, "%s:%d: rank %d: accdma_test failed: %s", rn->sc->file,
	      d->dp->ins[idx].st->line, d->rank, strerror(-rc));
	return -1;
}

/* The oldest outstanding token of @d, or -1. */
static int oldest_out(struct devrt *d)
{
	while (d->oldest < d->dp->nins && d->state[d->oldest] != IS_OUT)
		d->oldest++;
	return d->oldest < d->dp->nins ? d->oldest : -1;
}

/*
 * The token to wait for at the end of the program: the oldest outstanding one
 * not expected to time out, so that expected stalls are waited for last.
 */
static int final_pick(struct devrt *d)
{
	while (d->oldest_nt < d->dp->nins &&
	       (d->state[d->oldest_nt] != IS_OUT ||
		d->dp->ins[d->oldest_nt].expect == QT_EXPECT_TIMEOUT))
		d->oldest_nt++;
	if (d->oldest_nt < d->dp->nins)
		return d->oldest_nt;
	return oldest_out(d);
}

/* Advance one device as far as it goes without blocking. Return: progress made (1/0), -1 error. */
static int step_device(struct run *rn, struct devrt *d)
{
	int progress = 0;

	while (!d->done) {
		if (d->pc >= d->dp->nins) {
			/* the implicit `wait all` at the end of every program */
			int j = final_pick(d);

			if (j < 0 && d->fail_tok) {
				enum accdma_status st;
				int rc = accdma_test(rn->w, d->fail_tok, &st);

				if (rc == -EAGAIN) {
					d->blocking = d->fail_tok;
					d->blocking_ins = -1;
					return progress;
				}
				d->fail_tok = 0;
				continue;
			}
			if (j < 0) {
				d->done = 1;
				return 1;
			}
			int rc = try_settle(rn, d, j);

			if (rc <= 0)
				return rc < 0 ? -1 : progress;
			progress = 1;
			continue;
		}
		const struct qt_ins *in = &d->dp->ins[d->pc];

		if (in->kind == QI_OP) {
			int rc = post_one(rn, d, d->pc);

			if (rc < 0)
				return -1;
			if (rc == 0) {
				/* full queue: free a slot by settling our oldest token */
				int j = oldest_out(d);

				if (j < 0) {
					/* nothing of ours to wait for: the library frees slots on
					 * its own; retry until the no-progress timeout */
					double t = now_ms();

					if (!d->eagain_since)
						d->eagain_since = t;
					if (t - d->eagain_since > (double)rn->timeout) {
						rfail(rn, "%s:%d: rank %d: queue full for %lld ms with no op "
						      "outstanding (does %s need more slots than the queue "
						      "depth?)", rn->sc->file, in->st->line, d->rank,
						      (long long)rn->timeout, op_name(in));
						return -1;
					}
					d->spinning = 1;
					return progress;
				}
				rc = try_settle(rn, d, j);
				if (rc <= 0)
					return rc < 0 ? -1 : progress;
				progress = 1;
				continue;
			}
			d->pc++;
			d->eagain_since = 0;
			progress = 1;
		} else if (in->kind == QI_WAIT) {
			while (d->wpos < in->nwaits) {
				int rc = try_settle(rn, d, in->waits[d->wpos]);

				if (rc <= 0)
					return rc < 0 ? -1 : progress;
				d->wpos++;
				progress = 1;
			}
			d->wpos = 0;
			d->pc++;
			progress = 1;
		} else {
			for (int k = 0; k < in->nwaits; k++) {
				int j = in->waits[k];

				if (d->state[j] == IS_OUT) {
					int rc = accdma_release(rn->w, d->tok[j]);

					if (rc < 0) {
						rfail(rn, "%s:%d: rank %d: release failed: %s",
						      rn->sc->file, in->st->line, d->rank,
						      strerror(-rc));
						return -1;
					}
				}
				d->state[j] = IS_RELEASED;
			}
			d->pc++;
			progress = 1;
		}
	}
	return progress;
}

/* Drive every device until all are done, a stall, or an error. Return 0 done, 1 stalled, -1 error. */
int drive(struct run *rn)
{
	accdma_token *blk = calloc((size_t)rn->ndev, sizeof(*blk));
	int *blkdev = calloc((size_t)rn->ndev, sizeof(*blkdev));
	int ret = 0;

	if (!blk || !blkdev) {
		free(blk);
		free(blkdev);
		rfail(rn, "out of memory");
		return -1;
	}
	for (;;) {
		int progress = 0, alldone = 1, nb = 0, spinning = 0;

		for (int k = 0; k < rn->ndev; k++) {
			struct devrt *d = &rn->dev[k];
			int rc;

			if (d->done)
				continue;
			d->spinning = 0;
			rc = step_device(rn, d);
			spinning |= d->spinning;
			if (rc < 0) {
				ret = -1;
				goto out;
			}
			progress |= rc;
			if (!d->done)
				alldone = 0;
		}
		if (alldone)
			break;
		if (progress)
			continue;
		if (spinning) {
			struct timespec ts = { 0, 1000000 };

			nanosleep(&ts, NULL);
			continue;
		}
		for (int k = 0; k < rn->ndev; k++)
			if (!rn->dev[k].done) {
				blk[nb] = rn->dev[k].blocking;
				blkdev[nb++] = k;
			}
		enum accdma_status st;
		int rc = accdma_wait_any(rn->w, blk, nb, rn->timeout, &st);

		if (rc >= 0 && rc < nb) {
			struct devrt *d = &rn->dev[blkdev[rc]];

			record(d, d->blocking_ins, st);
			continue;
		}
		if (rc == -ETIMEDOUT) {
			ret = 1;
			break;
		}
		rfail(rn, "accdma_wait_any failed: %s", rc < 0 ? strerror(-rc) : "bad index");
		ret = -1;
		break;
	}
out:
	free(blk);
	free(blkdev);
	return ret;
}
