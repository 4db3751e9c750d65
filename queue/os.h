/* SPDX-License-Identifier: MIT */
/*
 * os.h - everything queue/, fw_stub/ and dma/ need of the operating system,
 * behind one small header, so that the same core builds as a user-space
 * library (queue/os_user*.c) and as a kernel module (queue/os_kernel*).
 * No file of those parts includes a libc, pthread or system header but this
 * one (tests/check-seams.sh holds that).
 *
 *  - atomics, each with an explicit memory order (OS_RELAXED ... OS_SEQ_CST);
 *  - threads: start, join, yield; a pause inside spin loops;
 *  - waiting and waking on a 32-bit word (a futex);
 *  - the asymmetric fence's two halves (membarrier);
 *  - allocation, device memory placed on a NUMA node;
 *  - a monotonic clock; logging;
 *  - the CPU's streaming-store copy of whole cache lines.
 */
#ifndef ACCDMA_QUEUE_OS_H
#define ACCDMA_QUEUE_OS_H

#ifdef __KERNEL__
/* The kernel's headers and accessors (plain words, no C11 atomics). */
#include "queue/os_kernel.h"
#else
#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* ---- atomics: C11, the order always spelled out ------------------------- */

#define OS_RELAXED memory_order_relaxed
#define OS_ACQUIRE memory_order_acquire
#define OS_RELEASE memory_order_release
#define OS_ACQ_REL memory_order_acq_rel
#define OS_SEQ_CST memory_order_seq_cst

#define os_load(p, mo) atomic_load_explicit((p), (mo))
/* a word of a plain (not _Atomic) field that another thread or process may write */
#define os_load_plain(p, mo) __atomic_load_n((p), (mo))
#define os_store(p, v, mo) atomic_store_explicit((p), (v), (mo))
#define os_exchange(p, v, mo) atomic_exchange_explicit((p), (v), (mo))
#define os_fetch_add(p, v, mo) atomic_fetch_add_explicit((p), (v), (mo))
#define os_fetch_sub(p, v, mo) atomic_fetch_sub_explicit((p), (v), (mo))
#define os_fetch_or(p, v, mo) atomic_fetch_or_explicit((p), (v), (mo))
#define os_fetch_and(p, v, mo) atomic_fetch_and_explicit((p), (v), (mo))
#define os_cas(p, expected, v, ok, fail) atomic_compare_exchange_strong_explicit((p), (expected), (v), (ok), (fail))
#define os_cas_weak(p, expected, v, ok, fail) atomic_compare_exchange_weak_explicit((p), (expected), (v), (ok), (fail))
#define os_fence(mo) atomic_thread_fence(mo)
#define os_compiler_fence() atomic_signal_fence(memory_order_seq_cst)

/** os_cpu_relax() - a pause hint inside spin loops. */
static inline void os_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ volatile("yield" ::: "memory");
#endif
}
#endif /* __KERNEL__ */

/* ---- threads -------------------------------------------------------------- */

/** struct os_thread - a thread started by os_thread_start(). */
struct os_thread {
	unsigned long handle;
};

/**
 * os_thread_start() - run @fn(@arg) on a new thread.
 * @t: the thread, for os_thread_join(). @name: for logs and tools (may be cut short).
 * Return: 0 or a negative errno.
 */
int os_thread_start(struct os_thread *t, const char *name, void *(*fn)(void *), void *arg);

/** os_thread_join() - wait for a thread from os_thread_start() to return. */
void os_thread_join(struct os_thread *t);

/** os_yield() - give the core to another runnable thread. */
void os_yield(void);

/**
 * os_thread_dying() - is the calling thread a process's that is being killed?
 * In the kernel a waiting process lends its thread to the engines
 * (ACCDMA_IOC_POLL): a pass that spins on what another process holds gives
 * up then, as it does when its device stops, so that the process can exit.
 * Return: non-zero if so; always 0 in user space (a killed thread runs no more).
 */
int os_thread_dying(void);

/* ---- waiting on a word ------------------------------------------------------ */

/**
 * os_wait32() - sleep while *@addr == @val, at most @timeout_ns (< 0: forever).
 * Return: 0 when woken or the value differs, -ETIMEDOUT, -EINTR.
 */
int os_wait32(_Atomic uint32_t *addr, uint32_t val, int64_t timeout_ns);

/** os_wake32() - wake every sleeper on @addr. */
void os_wake32(_Atomic uint32_t *addr);

/**
 * os_wait_redirect() - words in [@base, @base + @len) are waited on and
 * woken by @wait and @wake (given the word's offset from @base) instead of
 * a futex: an arena a kernel module maps, whose sleepers are kernel threads
 * no futex reaches (driver/kmod/). os_wait32() and os_wake32() look the
 * address up; with no redirection that is one load.
 * Return: 0, or -ENOSPC (OS_WAIT_REDIRECTS at once).
 */
#define OS_WAIT_REDIRECTS 8
int os_wait_redirect(void *base, size_t len,
		     int (*wait)(void *ctx, size_t off, uint32_t val, int64_t timeout_ns),
		     void (*wake)(void *ctx, size_t off), void *ctx);
/** os_wait_unredirect() - undo os_wait_redirect(@base) (no waiter is left). */
void os_wait_unredirect(void *base);

/* ---- the asymmetric fence (queue.h, "Sleeping and waking") ----------------- */

/**
 * os_membarrier_register() - register this process so that its sleepers may
 * issue os_membarrier() for kickers that fence lightly.
 * Return: 1 if registered, 0 if the system cannot.
 */
int os_membarrier_register(void);

/**
 * os_membarrier() - a full fence on every CPU running a registered process's thread.
 * Return: 0, or a negative errno.
 */
int os_membarrier(void);

/* ---- memory ------------------------------------------------------------------- */

/** os_alloc() / os_zalloc() / os_free() - heap memory (os_zalloc(): zeroed, @n items of @size). */
void *os_alloc(size_t size);
void *os_zalloc(size_t n, size_t size);
void os_free(void *p);

/** os_numa_nodes() - the number of NUMA nodes memory can be placed on (at least 1). */
int os_numa_nodes(void);

/**
 * os_mem_alloc() - @size zeroed bytes of page-aligned memory, placed on NUMA
 * node @node (-1: anywhere) before first touch. Return: the memory, or NULL.
 */
void *os_mem_alloc(uint64_t size, int node);

/** os_mem_free() - free memory from os_mem_alloc(). */
void os_mem_free(void *p, uint64_t size);

/** os_mem_bind() - place not yet touched page-aligned memory on @node (-1: nothing). */
void os_mem_bind(void *p, uint64_t size, int node);

/** os_mem_release() - give back the pages of a range of a shared mapping; it reads as zeros. */
void os_mem_release(void *p, uint64_t size);

/**
 * os_vm_copy() - cross-memory attach: copy @len bytes between @local, in this
 * process, and @remote, an address in process @pid (its registered memory).
 * @to_remote: 1 writes @local into @remote, 0 reads @remote into @local.
 * The kernel checks that we may ptrace @pid; a bad @remote faults in the
 * call (-EFAULT), never in this process.
 * Return: 0; -EFAULT (@remote not mapped there), -ESRCH (no such process),
 * -EPERM (refused: ptrace scope), -EOPNOTSUPP (not in this build).
 */
int os_vm_copy(int32_t pid, void *local, uint64_t remote, uint64_t len, int to_remote);

/* ---- time and logs ----------------------------------------------------------- */

/** os_now_ns() - a monotonic clock in nanoseconds. */
uint64_t os_now_ns(void);

/** os_log() - one line for the operator (stderr in user space). */
void os_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- the CPU's streaming copy --------------------------------------------------- */

/**
 * os_copy_stream_widths() - the streaming stores this CPU and build have, as
 * a mask of widths in bytes (16, 32, 64); 0 if none (sanitizer builds, not x86-64).
 */
unsigned int os_copy_stream_widths(void);

/**
 * os_copy_stream() - copy @len bytes, a multiple of 64, from @src to the
 * 64-byte aligned @dst with streaming stores of @width bytes (one of
 * os_copy_stream_widths()), then fence them.
 */
void os_copy_stream(void *dst, const void *src, uint64_t len, unsigned int width);

#endif /* ACCDMA_QUEUE_OS_H */
