/* SPDX-License-Identifier: MIT */
/*
 * kjoin.h - processes joining worlds through /dev/accdma (kjoin.c, and
 * kpoll.c's waiters that run passes): a world of processes, and what
 * chardev.c calls for a file.
 */
#ifndef ACCDMA_KMOD_KJOIN_H
#define ACCDMA_KMOD_KJOIN_H

#include <linux/compiler_types.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/uidgid.h>
#include <linux/wait.h>

#include "kmod/kworld.h"

struct task_struct;
struct vm_area_struct;

/* A host call's states: an engine asks, the process's thread takes and answers. */
enum { KJ_CALL_IDLE, KJ_CALL_ASKED, KJ_CALL_TAKEN, KJ_CALL_ANSWERED };

/**
 * struct kj_call - one device's host call (an exec: the process runs it).
 * @lock: the device's engines call one at a time.
 * @answered: the engine waits here.
 * @state: KJ_CALL_* (under the world's @call_lock).
 * @queue: the exec's queue.
 * @handle: its handle.
 * @result: the answer.
 * @gone: the device's process left: calls fail at once.
 * @taker: the task that took the call, while it runs the exec: it runs no
 *         pass of its devices (kj_poll()), which could wait on this very call.
 */
struct kj_call {
	struct mutex lock;
	wait_queue_head_t answered;
	u32 state;
	u32 queue;
	u64 handle;
	int result;
	bool gone;
	struct task_struct *taker;
};

/**
 * struct kj_world - a world processes join.
 * @node: in kj_worlds while it takes joins.
 * @ref: the files that joined it.
 * @uid: its user.
 * @key: its rendezvous.
 * @shape: as the first process asked.
 * @kw: the arena, memory and engines (geometry is @kw.a.g, the module's own).
 * @arena_pages: pages of the arena's mapping.
 * @seg_pages: pages of each device's memory.
 * @claimed: devices claimed so far.
 * @owner: per device, claimed or not.
 * @dead: a member left: no more joins (under kj_lock).
 * @joined: woken when a device is claimed or a member leaves.
 * @calls: per device, its host call.
 * @call_lock: the calls' states.
 * @calls_wq: the processes' call threads wait here for a call.
 */
struct kj_world {
	struct list_head node;
	struct kref ref;
	kuid_t uid;
	u64 key;
	struct kw_shape shape;
	struct kw_world kw;
	unsigned long arena_pages;
	unsigned long seg_pages;
	u32 claimed;
	u8 *owner;
	bool dead;
	wait_queue_head_t joined;
	struct kj_call *calls;
	spinlock_t call_lock;
	wait_queue_head_t calls_wq;
};

/**
 * struct kj_file - an open /dev/accdma.
 * @w: the world it joined, or NULL.
 * @first: its first device.
 * @count: its devices.
 * @call_stop: ACCDMA_CALL_STOP came: its CALLs end.
 */
struct kj_file {
	struct kj_world *w;
	u32 first;
	u32 count;
	bool call_stop;
};

long kj_join(struct kj_file *f, void __user *argp);
long kj_wait(struct kj_file *f, void __user *argp);
long kj_wake(struct kj_file *f, void __user *argp);
long kj_call(struct kj_file *f, void __user *argp);
long kj_poll(struct kj_file *f, void __user *argp);
int kj_mmap(struct kj_file *f, struct vm_area_struct *vma);
void kj_release(struct kj_file *f);

#endif /* ACCDMA_KMOD_KJOIN_H */
