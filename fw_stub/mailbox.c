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
	atomic_store_explicit(&d->mb.resp_seq, req, memory_order_release);
	q_futex_wake(&d->mb.resp_seq);
}

static void fill_info(struct fw_device *fd, struct accdma_device_info *i)
{
	i->id = fd->sh->id;
	i->numa_node = fd->sh->numa_node;
	i->engines = (int)fd->nengines;
	i->queues = (int)fd->w->g.nq;
	i->mem_size = fd->sh->mem_size;
	i->mem_used = atomic_load(&fd->sh->mem_used);
	i->fw_version = Q_FW_VERSION;
	i->eager_max = fd->eager_max;
	i->eager_slots = fd->w->g.eager_slots;
}

static void fill_health(struct fw_device *fd, struct accdma_device_health *h)
{
	uint64_t beats = 0, pending = 0;
	int alive = 1;

	for (uint32_t e = 0; e < fd->nengines; e++) {
		beats += atomic_load(&fd->sh->engines[e].heartbeats);
		alive &= atomic_load(&fd->sh->engines[e].running) != 0;
	}
	for (uint32_t q = 0; q < fd->w->g.nq; q++) {
		struct q_queue_sh *qs = q_queue(fd->w, fd->id, q);

		pending += atomic_load(&qs->submitted) - q_queue_completed(qs);
	}
	h->alive = alive;
	h->heartbeats = beats;
	h->resets = atomic_load(&fd->sh->resets);
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
	uint32_t req = atomic_load_explicit(&d->mb.req_seq, memory_order_acquire);
	uint32_t epoch;

	if (req == atomic_load_explicit(&d->mb.resp_seq, memory_order_relaxed))
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
			atomic_fetch_add(&d->reset_epoch, 1);
			q_device_kick(d, 1, fd->nengines);
			return 1;
		}
		epoch = atomic_load(&d->reset_epoch);
		for (uint32_t e = 0; e < fd->nengines; e++)
			if (atomic_load(&d->engines[e].ack_epoch) != epoch)
				return 0;
		fd->reset_pending = 0;
		atomic_fetch_add(&d->resets, 1);
		answer(d, req, 0);
		return 1;
	default:
		answer(d, req, -22 /* -EINVAL */);
		return 1;
	}
}
