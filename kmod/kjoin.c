// SPDX-License-Identifier: MIT
/*
 * kjoin.c - processes join worlds through /dev/accdma: the module is the
 * rendezvous of one host's processes. The first process to join a (user,
 * key) starts the world (kw_open(): the arena, every device's memory, every
 * engine as a kernel thread); each claims its devices and maps the arena
 * and its own devices' memory through a fault handler. The file's release
 * is the death notice: its devices are marked lost and every engine kicked,
 * so partners' ops with them complete PEER_LOST. The world goes with the
 * last file (a mapping holds its file, so with the last mapping too).
 *
 * Trust: the geometry, the segments and who owns which device are the
 * module's own (struct kj_world); nothing is read back from what a process
 * can write but through the engines' own checks (the scribbler self-test).
 */
#define pr_fmt(fmt) "accdma: " fmt

#include <linux/cred.h>
#include <linux/fs.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mm.h>
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>
#include <linux/wait.h>

#include "kmod/accdma_ioctl.h"
#include "kmod/kjoin.h"
#include "kmod/kworld.h"

/* A device's memory is vmalloc'd whole at the join (a memfd's pages come
 * when touched, these cannot: the engines need one kernel range), so a
 * world asking for more (the library's default is 4 GiB) gets this much. */
static uint mem_max_mb = 32;
module_param(mem_max_mb, uint, 0644);
MODULE_PARM_DESC(mem_max_mb, "most device memory a process's device gets, MiB (32)");

/* The worlds taking joins, and every claim and leave. */
static LIST_HEAD(kj_worlds);
static DEFINE_MUTEX(kj_lock);

static void kj_world_free(struct kref *ref)
{
	struct kj_world *w = container_of(ref, struct kj_world, ref);

	kw_close(&w->kw); /* stops every engine first */
	kfree(w->calls);
	kfree(w->owner);
	kfree(w);
}

/* Under kj_lock: the world is over for joins; every engine looks again. */
static void kj_kill(struct kj_world *w)
{
	u32 d;

	if (!w->dead) {
		w->dead = true;
		list_del_init(&w->node);
	}
	os_store(&w->kw.a.sh->lost_any, 1, OS_RELEASE);
	for (d = 0; d < w->kw.a.g.ndev; d++)
		q_device_kick(q_dev(&w->kw.a, d), 0, w->kw.a.g.engines);
	wake_up_all(&w->joined);
}

/* The call's engine may stop waiting: answered, or nobody will answer. */
static bool kj_answered(const struct kj_call *c)
{
	return READ_ONCE(c->state) == KJ_CALL_ANSWERED || READ_ONCE(c->gone);
}

/**
 * kj_exec_run() - the engines' host call in a processes' world: ask the
 * device's process to run the exec, and wait for its answer (the engine
 * blocks as it would running the function itself, so a chain recv -> exec
 * -> send runs as in user space). TASK_IDLE: an exec may take long.
 * @ctx: the world.
 * @dev: the device.
 * @queue: the exec's queue.
 * @handle: its handle, resolved (and checked) by the process.
 *
 * A process's thread running the pass (kj_poll()) waits killably: its own
 * process answers, and a process killed meanwhile must still be able to exit
 * (its file's release is what ends its engines' calls).
 *
 * Return: 0 the function returned 0, 1 it failed, nobody serves the device
 * or the polling process is being killed, < 0 the process found no such exec.
 */
static int kj_exec_run(void *ctx, u32 dev, u32 queue, u64 handle)
{
	bool kthread = current->flags & PF_KTHREAD;
	struct kj_world *w = ctx;
	struct kj_call *c;
	int rc = 1;

	if (dev >= w->kw.a.g.ndev)
		return -EINVAL;
	c = &w->calls[dev];
	if (kthread)
		mutex_lock(&c->lock);
	else if (mutex_lock_killable(&c->lock))
		return 1;
	spin_lock(&w->call_lock);
	if (c->gone || !READ_ONCE(w->owner[dev])) {
		spin_unlock(&w->call_lock);
		goto out;
	}
	c->queue = queue;
	c->handle = handle;
	c->state = KJ_CALL_ASKED;
	spin_unlock(&w->call_lock);
	wake_up_all(&w->calls_wq);
	if (kthread)
		wait_event_idle(c->answered, kj_answered(c));
	else
		wait_event_killable(c->answered, kj_answered(c));
	spin_lock(&w->call_lock);
	if (c->state == KJ_CALL_ANSWERED)
		rc = c->result;
	/* killed before the answer: the call is withdrawn, a late answer is refused */
	c->state = KJ_CALL_IDLE;
	c->taker = NULL;
	spin_unlock(&w->call_lock);
out:
	mutex_unlock(&c->lock);
	return rc;
}

/* @j's shape, checked: what kw_open() and the mappings rely on. */
static int kj_shape(const struct accdma_ioc_join *j, struct kw_shape *s)
{
	u64 mem;

	if (j->devices < 1 || j->devices > Q_MAX_DEVICES || j->engines < 1 ||
	    j->engines > Q_MAX_ENGINES || j->count < 1 || j->first >= j->devices ||
	    j->count > j->devices - j->first || !j->mem_size)
		return -EINVAL;
	/* at most mem_max_mb a device, and a quarter of the RAM for the world */
	mem = min_t(u64, j->mem_size, (u64)mem_max_mb << 20);
	mem = PAGE_ALIGN(min_t(u64, mem, ((u64)totalram_pages() << PAGE_SHIFT) / 4 / j->devices));
	if (!mem)
		return -ENOMEM;
	*s = (struct kw_shape){ .ndev = j->devices, .nq = j->queues, .engines = j->engines,
				.depth = j->depth, .eager_max = j->eager_max, .mem_size = mem,
				/* an engine spins preemptibly, but not for long */
				.spin_ns = min_t(u64, j->spin_ns, 10 * NSEC_PER_MSEC),
				.exec = kj_exec_run };
	return 0;
}

static struct kj_world *kj_world_new(const struct kw_shape *s, u64 key)
{
	struct kj_world *w = kzalloc(sizeof(*w), GFP_KERNEL);
	struct kw_shape ks = *s;
	u32 d;

	if (!w)
		return ERR_PTR(-ENOMEM);
	w->owner = kcalloc(s->ndev, sizeof(*w->owner), GFP_KERNEL);
	w->calls = kcalloc(s->ndev, sizeof(*w->calls), GFP_KERNEL);
	if (!w->owner || !w->calls)
		goto fail;
	for (d = 0; d < s->ndev; d++) {
		mutex_init(&w->calls[d].lock);
		init_waitqueue_head(&w->calls[d].answered);
	}
	spin_lock_init(&w->call_lock);
	init_waitqueue_head(&w->calls_wq);
	ks.exec_ctx = w;
	if (kw_open(&w->kw, &ks))
		goto fail;
	kref_init(&w->ref);
	INIT_LIST_HEAD(&w->node);
	init_waitqueue_head(&w->joined);
	w->uid = current_euid();
	w->key = key;
	w->shape = *s;
	w->arena_pages = PAGE_ALIGN(w->kw.a.g.size) >> PAGE_SHIFT;
	w->seg_pages = s->mem_size >> PAGE_SHIFT;
	return w;
fail:
	kfree(w->calls);
	kfree(w->owner);
	kfree(w);
	return ERR_PTR(-ENOMEM);
}

/**
 * kj_join() - ACCDMA_IOC_JOIN: join or start a world, claim devices, wait
 * for the others.
 * @f: the file's state.
 * @argp: the user's struct accdma_ioc_join.
 *
 * Return: 0; -EINVAL (bad arguments, or a world of that key with another
 * shape), -EBUSY (a device claimed already, or the file joined before),
 * -ETIMEDOUT, -EINTR, -EPIPE (a member left while waiting), -ENOMEM, -EFAULT.
 */
long kj_join(struct kj_file *f, void __user *argp)
{
	struct accdma_ioc_join j;
	struct kj_world *w = NULL, *it;
	struct kw_shape s;
	long left;
	u32 d;
	int rc;

	if (copy_from_user(&j, argp, sizeof(j)))
		return -EFAULT;
	if (j.size != sizeof(j) || j.flags || j.pad || j.arena_size || j.seg_offset ||
	    j.seg_stride || memchr_inv(j.reserved, 0, sizeof(j.reserved)))
		return -EINVAL;
	rc = kj_shape(&j, &s);
	if (rc)
		return rc;
	mutex_lock(&kj_lock);
	if (f->w) {
		rc = -EBUSY;
		goto unlock;
	}
	list_for_each_entry(it, &kj_worlds, node)
		if (it->key == j.key && uid_eq(it->uid, current_euid()))
			w = it;
	if (w && memcmp(&w->shape, &s, sizeof(s))) {
		rc = -EINVAL;
		goto unlock;
	}
	for (d = j.first; w && d < j.first + j.count; d++)
		if (w->owner[d]) {
			rc = -EBUSY;
			goto unlock;
		}
	if (w) {
		kref_get(&w->ref);
	} else {
		w = kj_world_new(&s, j.key);
		if (IS_ERR(w)) {
			rc = PTR_ERR(w);
			goto unlock;
		}
		list_add(&w->node, &kj_worlds);
	}
	for (d = j.first; d < j.first + j.count; d++) {
		w->owner[d] = 1;
		os_store(&q_dev(&w->kw.a, d)->owner_pid, task_tgid_nr(current), OS_RELAXED);
	}
	w->claimed += j.count;
	f->first = j.first;
	f->count = j.count;
	/* last: a POLL racing the join takes the devices only with the world */
	smp_store_release(&f->w, w);
	wake_up_all(&w->joined);
	mutex_unlock(&kj_lock);

	left = wait_event_interruptible_timeout(w->joined,
						READ_ONCE(w->claimed) == s.ndev || READ_ONCE(w->dead),
						nsecs_to_jiffies(j.timeout_ns));
	/* A member that never came, or left: the world cannot run. The file
	 * leaves on release; the caller closes it. A signal is EINTR, not a
	 * restart: the claim is made, a second JOIN would be EBUSY. */
	if (left < 0)
		return -EINTR;
	if (READ_ONCE(w->dead))
		return -EPIPE;
	if (!left)
		return -ETIMEDOUT;
	j.arena_size = (u64)w->arena_pages << PAGE_SHIFT;
	j.seg_offset = j.arena_size;
	j.seg_stride = s.mem_size;
	return copy_to_user(argp, &j, sizeof(j)) ? -EFAULT : 0;
unlock:
	mutex_unlock(&kj_lock);
	return rc;
}

/* The arena's word at @offset, for WAIT and WAKE: in the module's own arena. */
static u32 *kj_word(struct kj_file *f, const struct accdma_ioc_word *a)
{
	if (!f->w || a->size != sizeof(*a) || a->reserved || a->offset % 4 ||
	    a->offset > f->w->kw.a.g.size - 4)
		return NULL;
	return (u32 *)((char *)f->w->kw.a.sh + a->offset);
}

/**
 * kj_wait() - ACCDMA_IOC_WAIT: sleep while the arena's word holds a value.
 * @f: the file's state (joined).
 * @argp: the user's struct accdma_ioc_word.
 *
 * Return: 0 (woken, or the word differs), -ETIMEDOUT, -EINTR, -EINVAL, -EFAULT.
 */
long kj_wait(struct kj_file *f, void __user *argp)
{
	struct accdma_ioc_word a;
	u32 *word;

	if (copy_from_user(&a, argp, sizeof(a)))
		return -EFAULT;
	word = kj_word(f, &a);
	if (!word)
		return -EINVAL;
	/* past an hour is forever: no deadline overflows */
	if (a.timeout_ns > 3600 * NSEC_PER_SEC)
		a.timeout_ns = -1;
	return os_wait32(word, a.val, a.timeout_ns);
}

/**
 * kj_wake() - ACCDMA_IOC_WAKE: wake every sleeper on the arena's word, a
 * kernel engine or a process in kj_wait().
 * @f: the file's state (joined).
 * @argp: the user's struct accdma_ioc_word.
 *
 * Return: 0, -EINVAL, -EFAULT.
 */
long kj_wake(struct kj_file *f, void __user *argp)
{
	struct accdma_ioc_word a;
	u32 *word;

	if (copy_from_user(&a, argp, sizeof(a)))
		return -EFAULT;
	word = kj_word(f, &a);
	if (!word || a.val || a.timeout_ns)
		return -EINVAL;
	os_wake32(word);
	return 0;
}

/* Take the call asked of device @a->dev, if any, into @a. */
static bool kj_take(struct kj_world *w, struct accdma_ioc_call *a)
{
	struct kj_call *c = &w->calls[a->dev];
	bool took = false;

	spin_lock(&w->call_lock);
	if (c->state == KJ_CALL_ASKED) {
		c->state = KJ_CALL_TAKEN;
		c->taker = current;
		a->queue = c->queue;
		a->handle = c->handle;
		took = true;
	}
	spin_unlock(&w->call_lock);
	return took;
}

/**
 * kj_call() - ACCDMA_IOC_CALL: answer device @dev's last host call, then
 * wait for its next one (a thread per device: one device's exec that blocks
 * holds no other device's).
 * @f: the file's state (joined).
 * @argp: the user's struct accdma_ioc_call.
 *
 * Return: 0 (a call is in @argp, or STOP was done), -ESHUTDOWN (STOP came
 * while waiting), -EINVAL (bad arguments, or no call of @dev to answer),
 * -EINTR on a signal (never restarted: the restart would give an answer
 * given already again, -EINVAL), -EFAULT.
 */
long kj_call(struct kj_file *f, void __user *argp)
{
	struct kj_world *w = f->w;
	struct accdma_ioc_call a;
	struct kj_call *c;
	bool took = false;
	int rc;

	if (copy_from_user(&a, argp, sizeof(a)))
		return -EFAULT;
	if (!w || a.size != sizeof(a) || (a.flags & ~(ACCDMA_CALL_ANSWER | ACCDMA_CALL_STOP)) ||
	    a.pad || memchr_inv(a.reserved, 0, sizeof(a.reserved)))
		return -EINVAL;
	if (a.flags & ACCDMA_CALL_STOP) {
		WRITE_ONCE(f->call_stop, true);
		wake_up_all(&w->calls_wq);
		return 0;
	}
	if (a.dev < f->first || a.dev - f->first >= f->count)
		return -EINVAL;
	c = &w->calls[a.dev];
	if (a.flags & ACCDMA_CALL_ANSWER) {
		spin_lock(&w->call_lock);
		rc = c->state == KJ_CALL_TAKEN ? 0 : -EINVAL;
		if (!rc) {
			c->result = clamp(a.result, -EINVAL, 1);
			c->state = KJ_CALL_ANSWERED;
			c->taker = NULL;
		}
		spin_unlock(&w->call_lock);
		if (rc)
			return rc;
		wake_up_all(&c->answered);
	}
	/* the condition's last evaluation is the one that ended the wait */
	rc = wait_event_interruptible(w->calls_wq,
				      (took = kj_take(w, &a)) || READ_ONCE(f->call_stop));
	if (rc)
		return -EINTR;
	if (!took)
		return -ESHUTDOWN;
	return copy_to_user(argp, &a, sizeof(a)) ? -EFAULT : 0;
}

/**
 * kj_release() - the file's last reference is gone (the process closed it
 * and unmapped, or died): its devices are lost to their partners.
 * @f: the file's state.
 */
void kj_release(struct kj_file *f)
{
	struct kj_world *w = f->w;
	u32 d;

	if (!w)
		return;
	mutex_lock(&kj_lock);
	for (d = f->first; d < f->first + f->count; d++) {
		u32 alive = Q_DEV_ALIVE;

		/* a process that closed its world said so already (CLOSED) */
		os_cas(&q_dev(&w->kw.a, d)->lost, &alive, Q_DEV_LOST_DIED, OS_SEQ_CST,
		       OS_RELAXED);
		/* nobody answers its engines' calls any more */
		spin_lock(&w->call_lock);
		w->calls[d].gone = true;
		spin_unlock(&w->call_lock);
		wake_up_all(&w->calls[d].answered);
	}
	kj_kill(w);
	mutex_unlock(&kj_lock);
	f->w = NULL;
	kref_put(&w->ref, kj_world_free);
}

/* A page of the world: the arena, then each device's memory (vmalloc'd). */
static vm_fault_t kj_fault(struct vm_fault *vmf)
{
	struct kj_world *w = vmf->vma->vm_private_data;
	unsigned long pg = vmf->pgoff;
	struct page *page;
	char *kaddr;

	if (pg < w->arena_pages) {
		kaddr = (char *)w->kw.a.sh + (pg << PAGE_SHIFT);
	} else {
		pg -= w->arena_pages;
		if (pg / w->seg_pages >= w->kw.a.g.ndev)
			return VM_FAULT_SIGBUS;
		kaddr = w->kw.devs[pg / w->seg_pages].seg + ((pg % w->seg_pages) << PAGE_SHIFT);
	}
	page = vmalloc_to_page(kaddr);
	if (!page)
		return VM_FAULT_SIGBUS;
	get_page(page);
	vmf->page = page;
	return 0;
}

static const struct vm_operations_struct kj_vm_ops = {
	.fault = kj_fault,
};

/**
 * kj_mmap() - map the arena, or this file's own devices' memory: never
 * another process's device memory.
 * @f: the file's state (joined).
 * @vma: the mapping: shared; it is not copied into a forked child
 *       (VM_DONTCOPY), never grows and is left out of core dumps.
 *
 * Return: 0, -ENODEV (not joined), -EINVAL.
 */
int kj_mmap(struct kj_file *f, struct vm_area_struct *vma)
{
	struct kj_world *w = f->w;
	unsigned long start = vma->vm_pgoff, n = vma_pages(vma), lo, hi;

	if (!w)
		return -ENODEV;
	if (!(vma->vm_flags & VM_SHARED))
		return -EINVAL;
	lo = w->arena_pages + (unsigned long)f->first * w->seg_pages;
	hi = lo + (unsigned long)f->count * w->seg_pages;
	if (!(start + n <= w->arena_pages && start + n >= start) &&
	    !(start >= lo && start <= hi && n <= hi - start))
		return -EINVAL;
	vma->vm_flags |= VM_DONTCOPY | VM_DONTEXPAND | VM_DONTDUMP;
	vma->vm_ops = &kj_vm_ops;
	vma->vm_private_data = w;
	return 0;
}
