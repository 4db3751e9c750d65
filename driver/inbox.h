/* SPDX-License-Identifier: MIT */
/*
 * inbox.h - a device's queue of messages from far devices (struct q_msg),
 * filled by a link (loop's senders, verbs' completion poller) and emptied by
 * the device's engine through the link's recv. A ring under a mutex that
 * doubles when full: messages are never dropped for want of room.
 */
#ifndef ACCDMA_DRIVER_INBOX_H
#define ACCDMA_DRIVER_INBOX_H

#include <pthread.h>
#include <stdint.h>

#include "queue/queue.h"

struct drv_inbox {
	pthread_mutex_t lock;
	struct q_msg *msgs;
	uint32_t head, count, cap;
	uint64_t puts, takes; /* messages put and taken so far */
};

/** drv_inbox_init() - an empty inbox. */
void drv_inbox_init(struct drv_inbox *b);

/** drv_inbox_fini() - free an inbox's messages. */
void drv_inbox_fini(struct drv_inbox *b);

/**
 * drv_inbox_put() - append q_msg_bytes() of @m.
 * Return: 0, or -ENOMEM (the inbox could not grow).
 */
int drv_inbox_put(struct drv_inbox *b, const struct q_msg *m);

/**
 * drv_inbox_take() - take the oldest message into @m.
 * Return: 1 if one was taken, 0 if the inbox is empty.
 */
int drv_inbox_take(struct drv_inbox *b, struct q_msg *m);

/**
 * drv_inbox_counts() - how many messages were put into @b (@puts, if not
 * NULL) and taken from it (@takes) so far.
 */
void drv_inbox_counts(struct drv_inbox *b, uint64_t *puts, uint64_t *takes);

#endif /* ACCDMA_DRIVER_INBOX_H */
