// SPDX-License-Identifier: MIT
/*
 * os_kernel.c - queue/os.h in the kernel: kernel threads, waiting on a word
 * through the hashed wait queues of wait_var_event(), kvmalloc, device
 * memory from vmalloc on the device's node, ktime and printk.
 */
#define pr_fmt(fmt) "accdma: " fmt

#ifdef CONFIG_X86_64
#include <asm/fpu/api.h>
#endif
#include <linux/hrtimer.h>
#include <linux/kthread.h>
#include <linux/mm.h>
#include <linux/nodemask.h>
#include <linux/printk.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/timekeeping.h>
#include <linux/vmalloc.h>
#include <linux/wait_bit.h>

#include "queue/os.h"

/* A kernel thread runs int (*)(void *); the core's threads return a pointer. */
struct os_kthread {
	struct task_struct *task;
	void *(*fn)(void *);
	void *arg;
};

static int os_kthread_main(void *data)
{
	struct os_kthread *k = data;

	k->fn(k->arg);
	/* Stay until joined, so that kthread_stop() finds a live thread. */
	while (!kthread_should_stop()) {
		set_current_state(TASK_IDLE);
		if (kthread_should_stop())
			break;
		schedule();
	}
	__set_current_state(TASK_RUNNING);
	return 0;
}

/**
 * os_thread_start() - run @fn(@arg) on a new kernel thread.
 * @t: the thread, for os_thread_join().
 * @name: the thread's name (cut to the kernel's 15 characters).
 * @fn: the thread's function.
 * @arg: its argument.
 *
 * Return: 0, -ENOMEM, or the error kthread_run() gave.
 */
int os_thread_start(struct os_thread *t, const char *name, void *(*fn)(void *), void *arg)
{
	struct os_kthread *k = kzalloc(sizeof(*k), GFP_KERNEL);
	struct task_struct *task;

	if (!k)
		return -ENOMEM;
	k->fn = fn;
	k->arg = arg;
	task = kthread_run(os_kthread_main, k, "%s", name ? name : "accdma");
	if (IS_ERR(task)) {
		kfree(k);
		return PTR_ERR(task);
	}
	k->task = task;
	t->handle = (unsigned long)k;
	return 0;
}

/**
 * os_thread_join() - wait for a thread from os_thread_start() to return.
 * @t: the thread. Its function must return on its own (the core's threads
 * watch their own stop flags): kthread_stop() only reaps it.
 */
void os_thread_join(struct os_thread *t)
{
	struct os_kthread *k = (struct os_kthread *)t->handle;

	if (!k)
		return;
	kthread_stop(k->task);
	kfree(k);
	t->handle = 0;
}

/**
 * os_yield() - let another runnable thread have the CPU.
 *
 * cond_resched() rather than yield(): an engine spins for a few tens of
 * microseconds at most before it sleeps, and the scheduler preempts it when
 * another thread needs the CPU.
 */
void os_yield(void)
{
	cond_resched();
}

/**
 * os_thread_dying() - is the calling thread a process's being killed (one
 * that lent itself to the engines through ACCDMA_IOC_POLL)?
 *
 * Return: non-zero if a fatal signal is pending.
 */
int os_thread_dying(void)
{
	return fatal_signal_pending(current);
}

/**
 * os_wait32() - sleep while *@addr == @val, at most @timeout_ns (< 0: forever).
 * @addr: the word.
 * @val: the value seen.
 * @timeout_ns: the longest sleep.
 *
 * The word's hashed wait queue (wait_var_event()'s) with a high-resolution
 * timeout: the engines' first sleep is 50 us, far below a jiffy.
 *
 * Return: 0 when woken or the value differs, -ETIMEDOUT, or -EINTR on a signal.
 */
int os_wait32(uint32_t *addr, uint32_t val, int64_t timeout_ns)
{
	struct wait_queue_head *wq = __var_waitqueue(addr);
	struct wait_bit_queue_entry wbq;
	ktime_t expires = ktime_add_ns(ktime_get(), timeout_ns >= 0 ? timeout_ns : 0);
	int rc = 0;

	init_wait_var_entry(&wbq, addr, 0);
	for (;;) {
		prepare_to_wait_event(wq, &wbq.wq_entry, TASK_INTERRUPTIBLE);
		if (READ_ONCE(*addr) != val)
			break;
		if (signal_pending(current)) {
			rc = -EINTR;
			break;
		}
		if (timeout_ns < 0) {
			schedule();
			continue;
		}
		if (!schedule_hrtimeout_range(&expires, 0, HRTIMER_MODE_ABS)) {
			rc = READ_ONCE(*addr) != val ? 0 : -ETIMEDOUT;
			break;
		}
	}
	finish_wait(wq, &wbq.wq_entry);
	return rc;
}

/**
 * os_wake32() - wake every sleeper on @addr.
 * @addr: the word, already changed by the caller.
 */
void os_wake32(uint32_t *addr)
{
	/* wake_up_var() reads whether anyone waits: order the caller's store first. */
	smp_mb();
	wake_up_var(addr);
}

/**
 * os_membarrier_register() - the kernel registers nothing: its sleepers and
 * kickers both fence (q_kick_fence() sees an unregistered device).
 *
 * Return: 0.
 */
int os_membarrier_register(void)
{
	return 0;
}

/**
 * os_membarrier() - the sleeper's half of the asymmetric fence: a full fence
 * here, since no kicker in the kernel fences lightly.
 *
 * Return: 0.
 */
int os_membarrier(void)
{
	smp_mb();
	return 0;
}

/**
 * os_alloc() - @size bytes of kernel memory (kvmalloc: large tables fall
 * back to vmalloc).
 * @size: bytes.
 *
 * Return: the memory, or NULL.
 */
void *os_alloc(size_t size)
{
	return kvmalloc(size, GFP_KERNEL);
}

/**
 * os_zalloc() - @n zeroed items of @size bytes.
 * @n: items.
 * @size: bytes of one.
 *
 * Return: the memory, or NULL (also when @n * @size overflows).
 */
void *os_zalloc(size_t n, size_t size)
{
	return kvcalloc(n, size, GFP_KERNEL);
}

/**
 * os_free() - free os_alloc()'s or os_zalloc()'s memory.
 * @p: the memory (NULL is ignored).
 */
void os_free(void *p)
{
	kvfree(p);
}

/**
 * os_numa_nodes() - how many NUMA nodes memory may be asked of.
 *
 * Return: the highest possible node id plus one (at least 1).
 */
int os_numa_nodes(void)
{
	return nr_node_ids > 0 ? nr_node_ids : 1;
}

/**
 * os_mem_alloc() - zeroed device memory on NUMA node @node.
 * @size: bytes.
 * @node: the node, or -1 (or an offline node): anywhere.
 *
 * vmalloc rather than contiguous pages: device memory runs to gigabytes.
 *
 * Return: the page-aligned memory, or NULL.
 */
void *os_mem_alloc(uint64_t size, int node)
{
	if (!size || size > (uint64_t)totalram_pages() << PAGE_SHIFT)
		return NULL;
	if (node < 0 || node >= nr_node_ids || !node_online(node))
		node = NUMA_NO_NODE;
	return vzalloc_node((unsigned long)size, node);
}

/**
 * os_vm_copy() - cross-memory attach: not in the kernel build (a kernel
 * world has its processes' memory through the module, not through ptrace).
 * @pid: the process. @local: here. @remote: there. @len: bytes. @to_remote: direction.
 *
 * Return: -EOPNOTSUPP.
 */
int os_vm_copy(int32_t pid, void *local, uint64_t remote, uint64_t len, int to_remote)
{
	return -EOPNOTSUPP;
}

/**
 * os_mem_free() - free os_mem_alloc()'s memory.
 * @p: the memory (NULL is ignored).
 * @size: its size (unused: vfree knows).
 */
void os_mem_free(void *p, uint64_t size)
{
	vfree(p);
}

/**
 * os_mem_bind() - nothing: kernel memory is placed when it is allocated.
 * @p: the memory.
 * @size: bytes.
 * @node: the node.
 */
void os_mem_bind(void *p, uint64_t size, int node)
{
}

/**
 * os_mem_release() - make a range of device memory read as zeros again.
 * @p: the range.
 * @size: bytes.
 */
void os_mem_release(void *p, uint64_t size)
{
	if (p && size)
		memset(p, 0, size);
}

/**
 * os_now_ns() - the monotonic clock.
 *
 * Return: nanoseconds.
 */
uint64_t os_now_ns(void)
{
	return ktime_get_ns();
}

/**
 * os_log() - one line for the operator, as a kernel warning.
 * @fmt: printf format, then its arguments.
 */
void os_log(const char *fmt, ...)
{
	struct va_format vaf;
	va_list ap;

	va_start(ap, fmt);
	vaf.fmt = fmt;
	vaf.va = &ap;
	pr_warn("%pV\n", &vaf);
	va_end(ap);
}

#ifdef CONFIG_X86_64
/* Vector registers are the kernel's only inside kernel_fpu_begin(), which
 * also keeps us on this CPU: a section copies at most this much, so that
 * preemption is never off for long. */
#define OS_FPU_SECTION_BYTES (64u << 10)

/**
 * os_copy_stream_widths() - 16 on x86-64: SSE2 streaming stores, inside
 * kernel_fpu_begin() sections, as the library's narrowest.
 *
 * Return: 16.
 */
unsigned int os_copy_stream_widths(void)
{
	return 16;
}

/**
 * os_copy_stream() - copy @len bytes, a multiple of 64, to the 64-byte
 * aligned @dst past the cache, a line in four 16-byte stores, then fence
 * the stores; OS_FPU_SECTION_BYTES at a time with the vector registers ours.
 * @dst: destination.
 * @src: source.
 * @len: bytes.
 * @width: unused (16, the one width).
 */
void os_copy_stream(void *dst, const void *src, uint64_t len, unsigned int width)
{
	const char *s = src;
	char *d = dst;

	while (len) {
		uint64_t n = min_t(uint64_t, len, OS_FPU_SECTION_BYTES);

		kernel_fpu_begin();
		for (uint64_t i = 0; i < n; i += 64)
			asm volatile("movdqu 0(%0), %%xmm0\n\t"
				     "movdqu 16(%0), %%xmm1\n\t"
				     "movdqu 32(%0), %%xmm2\n\t"
				     "movdqu 48(%0), %%xmm3\n\t"
				     "movntdq %%xmm0, 0(%1)\n\t"
				     "movntdq %%xmm1, 16(%1)\n\t"
				     "movntdq %%xmm2, 32(%1)\n\t"
				     "movntdq %%xmm3, 48(%1)"
				     : : "r"(s + i), "r"(d + i) : "memory");
		asm volatile("sfence" ::: "memory");
		kernel_fpu_end();
		s += n, d += n, len -= n;
	}
}
#else
/**
 * os_copy_stream_widths() - none here: large copies are plain memcpy.
 *
 * Return: 0.
 */
unsigned int os_copy_stream_widths(void)
{
	return 0;
}

/**
 * os_copy_stream() - copy @len bytes (never called: no streaming widths).
 * @dst: destination.
 * @src: source.
 * @len: bytes.
 * @width: unused.
 */
void os_copy_stream(void *dst, const void *src, uint64_t len, unsigned int width)
{
	memcpy(dst, src, len);
}
#endif
