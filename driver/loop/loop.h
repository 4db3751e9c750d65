/* SPDX-License-Identifier: MIT */
/*
 * loop.h - what the tests may ask of the loop transport (the message-level
 * test double, loop.c): how much crossed its link.
 */
#ifndef ACCDMA_DRIVER_LOOP_H
#define ACCDMA_DRIVER_LOOP_H

#include <stdint.h>

#include "include/accdma.h"
#include "queue/abi.h"

/* Counters: messages by type (enum q_msg_type), then one-sided writes, then
 * the times an engine told the link it goes to sleep (its idle op). */
enum { DRV_LOOP_WRITES = Q_MSG__COUNT, DRV_LOOP_IDLES, DRV_LOOP__COUNT };

/**
 * drv_loop_counts() - what crossed world @w's link so far.
 * @w: a world of the loop transport. @counts: DRV_LOOP__COUNT entries, filled in.
 * Return: 0, or -EINVAL if @w is not an open loop world.
 */
int drv_loop_counts(accdma_world *w, uint64_t *counts);

/**
 * drv_loop_inject() - put message @m into device @m->dst's inbox as if a
 * far device had sent it (the tests' hostile peer).
 * Return: 0, -EINVAL if @w is not an open loop world, -EPIPE if @m->dst is
 * no device.
 */
int drv_loop_inject(accdma_world *w, const struct q_msg *m);

/**
 * drv_loop_refuse_writes() - the link's next @n writes find no room (as a
 * verbs link with every write in flight does): nothing starts, and the
 * engine tries again.
 * Return: 0, or -EINVAL if @w is not an open loop world.
 */
int drv_loop_refuse_writes(accdma_world *w, uint32_t n);

/**
 * drv_loop_hold_writes() - while @hold, the link's writes stay in flight:
 * their data has moved, but nobody learns that they are done (as a verbs
 * write waiting for its acknowledgement). 0 lets them finish.
 * Return: 0, or -EINVAL if @w is not an open loop world.
 */
int drv_loop_hold_writes(accdma_world *w, int hold);

#endif /* ACCDMA_DRIVER_LOOP_H */
