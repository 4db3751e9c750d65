// SPDX-License-Identifier: MIT
/*
 * mailbox.c - the device's answers to the host: info, health, reset.
 *
 * Engine 0 serves the mailbox. A reset bumps the device's reset epoch; every
 * engine flushes its queues when it sees a new epoch and acknowledges; the
 * reply goes out once all have.
 */
#include "fw_stub/fw_internal.h"

/* Publish the reply to request @req and wake the waiting host. */
static void answer(struct q_dev_sh *d, uint32_t req, int32_t result)
{
	d->mb.result = result;
	os_store(&d->mb.resp_seq, req, OS_RELEASE);
	os_wake32(&d->mb.resp_seq);
}

static void fill_info(struct fw_device *fd, struct q_mb_info *i)
{
	i->id = fd->sh->id;
	i->numa_node = fd->sh->numa_node;
	i->engines = (int32_t)fd->nengines;
	i->queues = (int32_t)fd->w->g.nq;
	i->mem_size = fd->sh->mem_size;
	i->mem_used = os_load(&fd->sh->mem_used, OS_SEQ_CST);
	i->fw_version = Q_FW_VERSION;
	i->eager_max = fd->eager_max;
	i->eager_slots = fd->w->g.eager_slots;
}

static void fill_health(struct fw_device *fd, struct q_mb_health *h)
{
	uint64_t beats = 0, pending = 0;
	int alive = 1;

	for (uint32_t e = 0; e < fd->nengines; e++) {
		beats += os_load(&fd->sh->engines[e].heartbeats, OS_SEQ_CST);
		alive &= os_load(&fd->sh->engines[e].running, OS_SEQ_CST) != 0;
	}
	for (uint32_t q = 0; q < fd->w->g.nq; q++) {
		struct q_queue_sh *qs = q_queue(fd->w, fd->id, q);

		pending += os_load(&qs->submitted, OS_SEQ_CST) - q_queue_completed(qs);
	}
	h->alive = (uint32_t)alive;
	h->heartbeats = beats;
	h->resets = os_load(&fd->sh->resets, OS_SEQ_CST);
	h->ops_pending = pending;
}

/**
 * fw_mailbox_poll() - serve a pending mailbox request, if any.
 * @fd: the device (called from engine 0).
 * Return: 1 if a request was served or advanced, else 0.
 */
int fw_mailbox_poll(struct fw_device *fd)
{
	struct q_dev_sh *d = fd->sh;
	uint32_t req = os_load(&d->mb.req_seq, OS_ACQUIRE);
	uint32_t epoch;

	if (req == os_load(&d->mb.resp_seq, OS_RELAXED))
		return 0;
	switch (d->mb.cmd) {
	case Q_MB_INFO:
		fill_info(fd, &d->mb.info);
		answer(d, req, 0);
		return 1;
	case Q_MB_HEALTH:
		fill_health(fd, &d->mb.health);
		answer(d, req, 0);
		return 1;
	case Q_MB_RESET:
		if (!fd->reset_pending) {
			fd->reset_pending = 1;
			os_fetch_add(&d->reset_epoch, 1, OS_SEQ_CST);
			q_device_kick(d, 1, fd->nengines);
			return 1;
		}
		epoch = os_load(&d->reset_epoch, OS_SEQ_CST);
		for (uint32_t e = 0; e < fd->nengines; e++)
			if (os_load(&d->engines[e].ack_epoch, OS_SEQ_CST) != epoch)
				return 0;
		fd->reset_pending = 0;
		os_fetch_add(&d->resets, 1, OS_SEQ_CST);
		answer(d, req, 0);
		return 1;
	default:
		answer(d, req, -EINVAL); /* an opcode this firmware does not know */
		return 1;
	}
}
