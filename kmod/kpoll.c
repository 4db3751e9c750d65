// SPDX-License-Identifier: MIT
/*
 * kpoll.c - ACCDMA_IOC_POLL: a waiting process lends its thread to its own
 * devices' engines, as a waiting host does over shm (fw_device_poll()):
 * it runs their passes itself, here in the kernel, so that an op that
 * completes within the wait costs no kick to a kernel thread and no
 * wake-up (io_uring without SQPOLL submits in the caller's context alike).
 * The engine threads stay, for progress when nobody waits; while a thread
 * polls they nap (fw_device_poll_begin()), as over shm.
 *
 * The pass is the engines' own code: engine_try_pass()'s in_pass, a word of
 * the module's own struct fw_engine that no process can write, lets one
 * pass of an engine run at a time, whoever runs it. The pass reads the
 * arena through the engines' own checks; the watched word is read only to
 * be compared. The spin is bounded (KJ_POLL_MAX_NS, and the caller's own
 * budget), preemptible, and ends on a signal: the caller then sleeps in
 * ACCDMA_IOC_WAIT as before.
 */
#include <linux/atomic.h>
#include <linux/minmax.h>
#include <linux/moduleparam.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/sysfs.h>
#include <linux/timekeeping.h>
#include <linux/uaccess.h>

#include "kmod/accdma_ioctl.h"
#include "kmod/kjoin.h"

/* The longest a POLL spins: the caller sleeps past it, as its waits do. */
#define KJ_POLL_MAX_NS (10 * NSEC_PER_MSEC)
/* Idle passes between yields, as a waiter spinning over shm yields
 * (driver/token.c's WAIT_YIELD_EVERY); passes between clock reads. */
#define KJ_POLL_YIELD_EVERY 16

/* Passes run by waiters that moved something: what says, from outside, that
 * waiters do drive their devices (the VM's tests read it). */
static atomic64_t kj_poll_moved = ATOMIC64_INIT(0);

static int kj_poll_moved_get(char *buf, const struct kernel_param *kp)
{
	return sysfs_emit(buf, "%lld\n", (long long)atomic64_read(&kj_poll_moved));
}

static const struct kernel_param_ops kj_poll_moved_ops = {
	.get = kj_poll_moved_get,
};
module_param_cb(poll_moved, &kj_poll_moved_ops, NULL, 0444);
MODULE_PARM_DESC(poll_moved, "read-only: waiters' passes (ACCDMA_IOC_POLL) that moved something");

/* Does the caller run an exec of one of @f's devices? Then it runs no pass:
 * a pass could call into that device again and wait on the caller itself. */
static bool kj_serving(struct kj_file *f)
{
	u32 d;

	for (d = f->first; d < f->first + f->count; d++)
		if (READ_ONCE(f->w->calls[d].taker) == current)
			return true;
	return false;
}

/* One pass of each idle engine of @f's devices: did any move something? */
static bool kj_pass(struct kj_file *f)
{
	bool progress = false;
	u32 d;

	for (d = f->first; d < f->first + f->count; d++)
		progress |= fw_device_poll(f->w->kw.devs[d].fw) != 0;
	return progress;
}

/* Tell @f's devices' engine threads that a thread polls them (nap), or no longer
 * does (@wake: it leaves before its wait is over, so they take over now). */
static void kj_poll_session(struct kj_file *f, bool on, bool wake)
{
	u32 d;

	for (d = f->first; d < f->first + f->count; d++) {
		if (on)
			fw_device_poll_begin(f->w->kw.devs[d].fw);
		else
			fw_device_poll_end(f->w->kw.devs[d].fw, wake);
	}
}

/**
 * kj_poll() - ACCDMA_IOC_POLL: run this file's devices' engine passes on the
 * calling thread until the watched word changes (or, without a watch, a pass
 * moves something), the spin ends, or a signal comes.
 * @f: the file's state (joined).
 * @argp: the user's struct accdma_ioc_poll.
 *
 * Return: 0 (the word changed, or a pass made progress); -ETIMEDOUT (the
 * spin ended: wait instead); -EINTR (a signal: nothing is lost, poll or
 * wait again); -EAGAIN (the caller serves a host call of its devices: it
 * runs no pass, wait instead); -EINVAL; -EFAULT.
 */
long kj_poll(struct kj_file *f, void __user *argp)
{
	struct accdma_ioc_poll a;
	u64 start = 0, spin, now;
	u32 *word = NULL, idle = 0, n = 0;
	long rc;

	if (copy_from_user(&a, argp, sizeof(a)))
		return -EFAULT;
	/* with the devices it joined: kj_join() publishes the world last */
	if (!smp_load_acquire(&f->w) || a.size != sizeof(a) ||
	    (a.flags & ~ACCDMA_POLL_WATCH) || a.pad || memchr_inv(a.reserved, 0, sizeof(a.reserved)))
		return -EINVAL;
	if (a.flags & ACCDMA_POLL_WATCH) {
		/* the module's own arena: only the word's value is the caller's */
		if (a.offset % 4 || a.offset > f->w->kw.a.g.size - 4)
			return -EINVAL;
		word = (u32 *)((char *)f->w->kw.a.sh + a.offset);
	} else if (a.offset || a.val) {
		return -EINVAL;
	}
	if (kj_serving(f))
		return -EAGAIN;
	spin = min_t(u64, a.spin_ns, KJ_POLL_MAX_NS);
	kj_poll_session(f, true, false);
	for (;;) {
		bool progress = kj_pass(f);

		if (progress)
			atomic64_inc(&kj_poll_moved);
		if (word ? READ_ONCE(*word) != a.val : progress) {
			rc = 0;
			break;
		}
		if (signal_pending(current)) {
			rc = -EINTR;
			break;
		}
		/*
		 * The clock every KJ_POLL_YIELD_EVERY passes, from the first
		 * such read: under emulation a read (HPET) costs more than a
		 * pass, and most POLLs end before it; the spin overruns by
		 * those passes at most.
		 */
		if (++n % KJ_POLL_YIELD_EVERY == 0) {
			now = ktime_get_ns();
			if (!start) {
				start = now;
			} else if (now - start >= spin) {
				rc = -ETIMEDOUT;
				break;
			}
		}
		/*
		 * Now and then give the CPU away, as a waiter spinning over shm
		 * does: the peer process this wait needs, or the engine thread
		 * holding the pass it needs, may be queued on this CPU, and
		 * cond_resched() lets them run only once the tick says so.
		 */
		idle = progress ? 0 : idle + 1;
		if (idle && idle % KJ_POLL_YIELD_EVERY == 0) {
			yield();
		} else {
			cond_resched();
			cpu_relax();
		}
	}
	kj_poll_session(f, false, rc != 0);
	return rc;
}
