// SPDX-License-Identifier: MIT
/*
 * mailbox.c - host side of the device mailbox: info, health, reset.
 */
#include <string.h>

#include "driver/internal.h"

#define DRV_MAILBOX_TIMEOUT_NS (5ull * 1000000000ull)

/**
 * drv_mailbox_call() - send one command to a device and wait for the answer.
 * @w: the world. @dev: a local device (checked). @cmd: Q_MB_*.
 * The caller holds the device's mb_lock and reads the reply from the mailbox.
 * Return: the firmware's result, or -ETIMEDOUT.
 */
int drv_mailbox_call(struct accdma_world *w, int dev, uint32_t cmd)
{
	struct q_dev_sh *ds = q_dev(&w->a, (uint32_t)dev);
	uint64_t deadline = q_now_ns() + DRV_MAILBOX_TIMEOUT_NS;
	uint32_t req;

	ds->mb.cmd = cmd;
	req = atomic_load(&ds->mb.req_seq) + 1;
	atomic_store_explicit(&ds->mb.req_seq, req, memory_order_release);
	q_engine_kick(ds, 0);
	for (;;) {
		uint32_t resp = atomic_load_explicit(&ds->mb.resp_seq, memory_order_acquire);
		uint64_t now = q_now_ns();

		if (resp == req)
			return ds->mb.result;
		if (now >= deadline)
			return -ETIMEDOUT;
		if (!w->threaded) {
			fw_device_poll(w->devs[dev].fw); /* a polled device answers when we poll it */
			continue;
		}
		q_futex_wait(&ds->mb.resp_seq, resp, (int64_t)(deadline - now));
	}
}

/* One mailbox exchange with a local device; copies the reply out under the lock. */
static int mailbox(struct accdma_world *w, int dev, uint32_t cmd, void *reply, size_t len)
{
	struct q_dev_sh *ds;
	int rc = drv_dev_check(w, dev);

	if (rc)
		return rc;
	if (drv_block_enter(w)) /* a close waits for the answer before it stops the engines */
		return -ESHUTDOWN;
	ds = q_dev(&w->a, (uint32_t)dev);
	pthread_mutex_lock(&w->devs[dev].mb_lock);
	rc = drv_mailbox_call(w, dev, cmd);
	if (rc == 0 && reply)
		memcpy(reply, cmd == Q_MB_INFO ? (void *)&ds->mb.info : (void *)&ds->mb.health, len);
	pthread_mutex_unlock(&w->devs[dev].mb_lock);
	drv_block_leave(w);
	return rc;
}

int accdma_device_info(accdma_world *w, int dev, struct accdma_device_info *info)
{
	struct q_mb_info r;
	int rc;

	if (!info)
		return drv_world_check(w) ? -EBADF : -EINVAL;
	memset(info, 0, sizeof(*info)); /* zeros on failure */
	rc = mailbox(w, dev, Q_MB_INFO, &r, sizeof(r));
	if (rc)
		return rc;
	*info = (struct accdma_device_info){
		.id = r.id, .numa_node = r.numa_node, .engines = r.engines, .queues = r.queues,
		.mem_size = r.mem_size, .mem_used = r.mem_used, .fw_version = r.fw_version,
		.eager_max = r.eager_max, .eager_slots = r.eager_slots,
	};
	return 0;
}

int accdma_device_health(accdma_world *w, int dev, struct accdma_device_health *health)
{
	struct q_mb_health r;
	int rc;

	if (!health)
		return drv_world_check(w) ? -EBADF : -EINVAL;
	memset(health, 0, sizeof(*health)); /* zeros on failure */
	rc = mailbox(w, dev, Q_MB_HEALTH, &r, sizeof(r));
	if (rc)
		return rc;
	*health = (struct accdma_device_health){
		.alive = (int)r.alive, .heartbeats = r.heartbeats, .resets = r.resets,
		.ops_pending = r.ops_pending,
	};
	return 0;
}

int accdma_device_reset(accdma_world *w, int dev)
{
	return mailbox(w, dev, Q_MB_RESET, NULL, 0);
}
