// SPDX-License-Identifier: MIT
/*
 * inbox.c - a device's queue of messages from far devices (inbox.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "driver/inbox.h"

void drv_inbox_init(struct drv_inbox *b)
{
	memset(b, 0, sizeof(*b));
	pthread_mutex_init(&b->lock, NULL);
}

void drv_inbox_fini(struct drv_inbox *b)
{
	pthread_mutex_destroy(&b->lock);
	free(b->msgs);
	b->msgs = NULL;
}

static int grow(struct drv_inbox *b)
{
	uint32_t cap = b->cap ? 2 * b->cap : 64;
	struct q_msg *m = malloc((size_t)cap * sizeof(*m));

	if (!m)
		return -ENOMEM;
	for (uint32_t i = 0; i < b->count; i++)
		memcpy(&m[i], &b->msgs[(b->head + i) % b->cap], q_msg_bytes(&b->msgs[(b->head + i) % b->cap]));
	free(b->msgs);
	b->msgs = m;
	b->head = 0;
	b->cap = cap;
	return 0;
}

int drv_inbox_put(struct drv_inbox *b, const struct q_msg *m)
{
	int rc = 0;

	pthread_mutex_lock(&b->lock);
	if (b->count == b->cap)
		rc = grow(b);
	if (!rc) {
		memcpy(&b->msgs[(b->head + b->count) % b->cap], m, q_msg_bytes(m));
		b->count++;
		b->puts++;
	}
	pthread_mutex_unlock(&b->lock);
	return rc;
}

int drv_inbox_take(struct drv_inbox *b, struct q_msg *m)
{
	int got = 0;

	pthread_mutex_lock(&b->lock);
	if (b->count) {
		const struct q_msg *src = &b->msgs[b->head];

		memcpy(m, src, q_msg_bytes(src));
		b->head = (b->head + 1) % b->cap;
		b->count--;
		b->takes++;
		got = 1;
	}
	pthread_mutex_unlock(&b->lock);
	return got;
}

void drv_inbox_counts(struct drv_inbox *b, uint64_t *puts, uint64_t *takes)
{
	pthread_mutex_lock(&b->lock);
	if (puts)
		*puts = b->puts;
	*takes = b->takes;
	pthread_mutex_unlock(&b->lock);
}
