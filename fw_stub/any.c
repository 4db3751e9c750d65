// SPDX-License-Identifier: MIT
/*
 * any.c - recvs the engine numbers: any-source recvs, and the recvs posted
 * behind one on its tag.
 *
 * Matching is by (source, tag, sequence number), and the host numbers every
 * recv at post time (driver/seq.c). An any-source recv has no source to be
 * numbered from until a message is there, and every later recv with its tag
 * on the device depends on what it takes: once it took (A, T, k), the next
 * recv from A with T must take (A, T, k + 1). So while a tag has an
 * any-source recv that has not matched, the host gives its recvs a place in
 * the tag's order instead of a number (Q_DF_DEFER), and the engines number
 * them here, in that order, through the host's recv_order call: a specific
 * recv takes the next number of its source at once; an any-source recv
 * waits until some source's next message is there (in its ring, or a send
 * or a failed send's marker in our rendezvous table: the receiver owns both,
 * also for far senders, whose messages land there through msg.c), and takes
 * that source's number. A sender that has not sent yet is never waited for:
 * whoever's message is there first is taken. Once numbered, the recv is an
 * ordinary recv: nothing below the numbering changed.
 *
 * A deferred recv that ends before it is numbered (cancel, a failed
 * dependency, a reset, every peer lost) takes no number: it gives its place
 * up (FW_ORDER_SKIP), and the message it would have taken stays for the
 * next recv.
 */

#include "fw_stub/fw_internal.h"
#include "fw_stub/peer.h"

/* shm: is every device but this one gone? Then no message can come any more. */
static int all_others_lost(const struct fw_device *fd)
{
	if (!os_load(&fd->w->sh->lost_any, OS_ACQUIRE))
		return 0;
	for (uint32_t d = 0; d < fd->w->g.ndev; d++)
		if (d != fd->id && !fw_peer_lost(fd, d))
			return 0;
	return 1;
}

/* The source whose next message with @tag is there, looking from
 * fd->any_next on (in turn, so that no source is starved); -1 if none. */
static int32_t pick(struct fw_device *fd, uint64_t tag)
{
	uint32_t n = fd->w->g.ndev;

	for (uint32_t i = 0; i < n; i++) {
		uint32_t s = (fd->any_next + i) % n;

		if (fw_eager_probe(fd, s, tag, fd->any_seqs[s]))
			return (int32_t)s;
	}
	return fw_match_probe_send(fd, tag, fd->any_seqs, n, fd->any_next);
}

/* Let the device's other engines see the turn move on (a deferred recv of
 * theirs may be next). With one engine, the pass goes on to it anyway. */
static void turn_moved(struct fw_device *fd)
{
	if (fd->nengines > 1)
		fw_peer_kick(fd, fd->id);
}

/* An any-source recv: take the number of a source whose message is there. */
static int number_any(struct fw_device *fd, struct fw_queue *q, struct fw_op *op)
{
	const struct fw_host *h = fd->host;
	int32_t src;
	uint64_t seq;
	int rc;

	fw_eager_lock(fd, &fd->any_lock);
	if (!fd->any_seqs)
		fd->any_seqs = os_zalloc(fd->w->g.ndev, sizeof(*fd->any_seqs));
	rc = fd->any_seqs ? h->recv_order(h->ctx, fd->id, op->d.tag, op->d.seq, ACCDMA_ANY_SOURCE,
					    FW_ORDER_PEEK, fd->any_seqs) : -ENOMEM;
	src = rc ? -1 : pick(fd, op->d.tag);
	fw_eager_unlock(fd, &fd->any_lock);
	if (rc == -EAGAIN)
		return 0;
	if (rc)
		return FW_ANY_FAILED;
	if (src < 0)
		return all_others_lost(fd) ? FW_ANY_LOST : 0;
	/* Nobody else numbers this tag before our turn ends: the number taken
	 * is the one just found there. */
	if (h->recv_order(h->ctx, fd->id, op->d.tag, op->d.seq, src, FW_ORDER_TAKE, &seq))
		return FW_ANY_FAILED;
	op->d.peer = src;
	op->d.seq = seq;
	op->d.flags &= (uint16_t)~Q_DF_DEFER;
	os_store(&q->cpl[op->slot].src, src, OS_RELAXED); /* published with its completion */
	fd->any_next = ((uint32_t)src + 1) % fd->w->g.ndev;
	turn_moved(fd);
	return 1;
}

/**
 * fw_any_number() - number a deferred recv (Q_DF_DEFER) if it is its turn.
 * @fd/@q/@op: the recv, pending (its dependencies need not be met: a recv
 * posted earlier is numbered first whatever it waits for, as at post time).
 * Return: 1 if numbered (@op is an ordinary recv now), 0 if it must wait
 * (not its turn, or no message for an any-source recv yet), FW_ANY_LOST
 * (every other device is gone and nothing is there), FW_ANY_FAILED.
 */
int fw_any_number(struct fw_device *fd, struct fw_queue *q, struct fw_op *op)
{
	const struct fw_host *h = fd->host;
	uint64_t seq;
	int rc;

	if (!h->recv_order)
		return FW_ANY_FAILED;
	if (op->d.peer == ACCDMA_ANY_SOURCE)
		return number_any(fd, q, op);
	rc = h->recv_order(h->ctx, fd->id, op->d.tag, op->d.seq, op->d.peer, FW_ORDER_TAKE, &seq);
	if (rc == -EAGAIN)
		return 0;
	if (rc)
		return FW_ANY_FAILED;
	op->d.seq = seq;
	op->d.flags &= (uint16_t)~Q_DF_DEFER;
	turn_moved(fd);
	return 1;
}

/**
 * fw_any_skip() - a deferred recv ends unnumbered: give its place up.
 * @fd: the device. @op: the recv (Q_DF_DEFER still set).
 */
void fw_any_skip(struct fw_device *fd, struct fw_op *op)
{
	const struct fw_host *h = fd->host;
	uint64_t seq;

	if (h->recv_order &&
	    !h->recv_order(h->ctx, fd->id, op->d.tag, op->d.seq, op->d.peer, FW_ORDER_SKIP, &seq))
		turn_moved(fd);
}
