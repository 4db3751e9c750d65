/* SPDX-License-Identifier: MIT */
/*
 * os_kernel.h - the part of queue/os.h that differs in a kernel build: the
 * kernel's headers, its accessors behind the atomics, and cpu_relax().
 * Included by queue/os.h only (under __KERNEL__); queue/os_kernel.c holds
 * the functions.
 *
 * The atomics: in the kernel the shared words are plain integers
 * (Q_ATOMIC(t) is t, queue/abi.h) and `_Atomic` is defined away below, so
 * that no access compiles to an implicit C11 atomic and no C11 name can bind
 * to the kernel's own atomic_*() (an error here, not a warning: the module
 * is built with -Werror). Every access goes through an os_*() macro mapped
 * onto READ_ONCE/WRITE_ONCE, smp_load_acquire/smp_store_release, the
 * fully ordered xchg/try_cmpxchg and atomic_t/atomic64_t ops on the same
 * words. The core makes no implicit atomic access (clang's
 * -Watomic-implicit-seq-cst finds none), which is what makes this sound.
 *
 * Orders: a SEQ_CST load is an acquire load and a SEQ_CST store is a
 * release store followed by smp_mb() (the trailing-fence mapping, which is
 * sequentially consistent on x86-64 and arm64); read-modify-writes are the
 * kernel's fully ordered ones unless RELAXED is asked for; a fence other than
 * RELAXED is smp_mb().
 */
#ifndef ACCDMA_QUEUE_OS_KERNEL_H
#define ACCDMA_QUEUE_OS_KERNEL_H

#include <linux/atomic.h>
#include <linux/build_bug.h>
#include <linux/compiler.h>
#include <linux/errno.h>
#include <linux/limits.h>
#include <linux/processor.h>
#include <linux/stddef.h>
#include <linux/string.h>
#include <linux/types.h>
#include <asm/barrier.h>

/* Last, after every kernel header: the words are plain in the kernel. */
#define _Atomic

#ifndef UINT32_MAX
#define UINT32_MAX U32_MAX
#endif
#ifndef UINT64_MAX
#define UINT64_MAX U64_MAX
#endif

#define OS_RELAXED 0
#define OS_ACQUIRE 2
#define OS_RELEASE 3
#define OS_ACQ_REL 4
#define OS_SEQ_CST 5

#define os_load(p, mo) ((mo) == OS_RELAXED ? READ_ONCE(*(p)) : smp_load_acquire(p))
#define os_load_plain(p, mo) os_load((p), (mo))

#define os_store(p, v, mo)                                                   \
	({                                                                   \
		if ((mo) == OS_RELAXED) {                                    \
			WRITE_ONCE(*(p), (v));                               \
		} else {                                                     \
			smp_store_release((p), (v));                         \
			if ((mo) == OS_SEQ_CST)                              \
				smp_mb();                                    \
		}                                                            \
	})

#define os_exchange(p, v, mo)                                                \
	((mo) == OS_RELAXED ? xchg_relaxed((p), (v)) : xchg((p), (v)))

/* fetch_add/sub on a plain 32- or 64-bit word, through atomic_t/atomic64_t
 * (same size and layout; the kernel builds with -fno-strict-aliasing). */
#define __os_fetch_op(op, p, v, sfx)                                         \
	({                                                                   \
		BUILD_BUG_ON(sizeof(*(p)) != 4 && sizeof(*(p)) != 8);        \
		(__typeof__(*(p)))__builtin_choose_expr(                     \
			sizeof(*(p)) == 8,                                   \
			atomic64_fetch_##op##sfx((s64)(v), (atomic64_t *)(p)), \
			atomic_fetch_##op##sfx((int)(v), (atomic_t *)(p)));  \
	})
#define __os_fetch(op, p, v, mo)                                             \
	((mo) == OS_RELAXED ? __os_fetch_op(op, p, v, _relaxed) :            \
			      __os_fetch_op(op, p, v, ))
#define os_fetch_add(p, v, mo) __os_fetch(add, p, v, mo)
#define os_fetch_sub(p, v, mo) __os_fetch(sub, p, v, mo)
#define os_fetch_or(p, v, mo) __os_fetch(or, p, v, mo)
#define os_fetch_and(p, v, mo) __os_fetch(and, p, v, mo)

/* C11's compare-exchange: on failure *expected takes the value found. */
#define os_cas(p, expected, v, ok, fail)                                     \
	((ok) == OS_RELAXED ? try_cmpxchg_relaxed((p), (expected), (v)) :    \
			      try_cmpxchg((p), (expected), (v)))
#define os_cas_weak(p, expected, v, ok, fail) os_cas(p, expected, v, ok, fail)

#define os_fence(mo)                                                         \
	do {                                                                 \
		if ((mo) == OS_RELAXED)                                      \
			barrier();                                           \
		else                                                         \
			smp_mb();                                            \
	} while (0)
#define os_compiler_fence() barrier()

/** os_cpu_relax() - a pause hint inside spin loops. */
static inline void os_cpu_relax(void)
{
	cpu_relax();
}

#endif /* ACCDMA_QUEUE_OS_KERNEL_H */
