// SPDX-License-Identifier: MIT
/*
 * kmod.c - the kernel module's transport (ACCDMA_TRANSPORT=kmod): one
 * process per device (or group of devices) on one host, with the engines
 * running as kernel threads of accdma.ko. See kmod/README.md.
 *
 * The module is the rendezvous: each process opens /dev/accdma and joins
 * the world of its job (MASTER_PORT, per user), claiming its devices; the
 * join returns once every device is claimed. It then maps the arena (rings,
 * completion records, tables: the module's pages) and its own devices'
 * memory, so posting stays stores plus a doorbell, exactly as over shm: the
 * generic driver does not know the difference. The file's release is the
 * death notice: the module marks the devices lost, and partners' ops with
 * them complete PEER_LOST. No memfd, no socket, no monitor thread.
 *
 * Waiting and waking: the kernel engines sleep on their words' kernel wait
 * queues, which no futex reaches (nor can a futex key a device mapping), so
 * the arena's words are redirected (os_wait_redirect()) to the WAIT and
 * WAKE ioctls. A kick is still a system call only when the engine sleeps:
 * q_engine_kick() wakes only a sleeper.
 *
 * exec, the one departure: a kernel engine cannot call a function of the
 * process. It asks instead (a host call) and waits, and a thread of this
 * library serves the calls (ACCDMA_IOC_CALL), running the function as the
 * engine thread would have: a chain recv -> exec -> send still needs no
 * host wait. The function runs on that thread (one per local device), not
 * on an engine's; a device's execs run one at a time.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "driver/internal.h"
#include "kmod/accdma_ioctl.h"

#define KM_PAGE 4096ull
#define KM_DEVICE "/dev/" ACCDMA_DEVICE_NAME

/** struct km_caller - the thread serving one local device's host calls. */
struct km_caller {
	struct accdma_world *w;
	uint32_t dev;
	pthread_t thread;
};

/** struct km_heap - free extents of one local device's memory (first fit, sorted). */
struct km_heap {
	pthread_mutex_t lock;
	uint32_t n;
	struct {
		uint64_t off, len;
	} fr[Q_MAX_REGIONS + 2];
};

/**
 * struct drv_kmod - the transport's state in one process.
 * @fd: /dev/accdma, joined.
 * @arena_len: bytes of the arena's mapping.
 * @mem: this process's devices' memory, mapped; @mem_len its bytes.
 * @stride: bytes per device.
 * @redirected: the arena's words wait and wake in the module.
 * @no_poll: the module has no ACCDMA_IOC_POLL (an older one): waiters sleep.
 * @heaps: per local device.
 * @callers: the threads serving host calls; @ncallers how many.
 */
struct drv_kmod {
	int fd;
	uint64_t arena_len;
	char *mem;
	uint64_t mem_len;
	uint64_t stride;
	int redirected;
	_Atomic int no_poll;
	struct km_heap *heaps;
	struct km_caller *callers;
	int ncallers;
};

#define drv_kmod(w) ((struct drv_kmod *)(w)->tp_state)

static void km_stop(struct accdma_world *w);

static void warn(const struct accdma_world *w, const char *what, int err)
{
	if (w->opts.log_level >= 1)
		fprintf(stderr, "accdma: kmod: %s: %s\n", what, strerror(err));
}

/* The arena's words, waited on and woken in the module. */
static int km_wait(void *ctx, size_t off, uint32_t val, int64_t timeout_ns)
{
	struct drv_kmod *s = ctx;
	struct accdma_ioc_word a = { .size = sizeof(a), .val = val, .offset = off,
				     .timeout_ns = timeout_ns };

	return ioctl(s->fd, ACCDMA_IOC_WAIT, &a) ? -errno : 0;
}

static void km_wake(void *ctx, size_t off)
{
	struct drv_kmod *s = ctx;
	struct accdma_ioc_word a = { .size = sizeof(a), .offset = off };

	ioctl(s->fd, ACCDMA_IOC_WAKE, &a);
}

/* A waiter runs its devices' engine passes in the module (ACCDMA_IOC_POLL). */
static int km_poll(struct accdma_world *w, _Atomic uint32_t *watch, uint32_t val, uint64_t spin_ns)
{
	struct drv_kmod *s = drv_kmod(w);
	struct accdma_ioc_poll a = { .size = sizeof(a), .spin_ns = spin_ns };

	if (atomic_load_explicit(&s->no_poll, memory_order_relaxed))
		return -EAGAIN;
	if (watch) {
		a.flags = ACCDMA_POLL_WATCH;
		a.offset = (uint64_t)((char *)watch - (char *)w->a.sh);
		a.val = val;
	}
	if (!ioctl(s->fd, ACCDMA_IOC_POLL, &a))
		return 0;
	if (errno != ENOTTY)
		return -errno;
	/* a module without it: the waiters sleep, as they did */
	atomic_store_explicit(&s->no_poll, 1, memory_order_relaxed);
	return -EAGAIN;
}

static int km_join(struct accdma_world *w, struct drv_kmod *s, uint64_t key)
{
	const struct accdma_world_opts *o = &w->opts;
	struct accdma_ioc_join j = {
		.size = sizeof(j),
		.key = key,
		.devices = (uint32_t)o->num_devices,
		.queues = (uint32_t)o->queues,
		.engines = (uint32_t)o->engines,
		.depth = o->queue_depth,
		.eager_max = (uint32_t)o->eager_max,
		.first = (uint32_t)w->first_local,
		.count = (uint32_t)w->nlocal,
		.mem_size = o->mem_size,
		.spin_ns = w->spin_ns,
		.timeout_ns = (uint64_t)o->peer_timeout_ms * 1000000,
	};

	if (ioctl(s->fd, ACCDMA_IOC_JOIN, &j)) {
		int rc = -errno;

		if (rc == -ETIMEDOUT)
			warn(w, "timed out waiting for the other ranks to join", ETIMEDOUT);
		else if (rc == -EINVAL)
			warn(w, "the module refused the world (another shape under this MASTER_PORT?)",
			     EINVAL);
		else
			warn(w, "joining the world", -rc);
		return rc;
	}
	s->arena_len = j.arena_size;
	s->stride = j.seg_stride;
	s->mem_len = (uint64_t)w->nlocal * s->stride;
	/* the module may give less memory than asked (its mem_max_mb) */
	if (s->arena_len < w->a.g.size || !s->stride || s->stride > o->mem_size + KM_PAGE)
		return -EPROTO;
	void *a = mmap(NULL, s->arena_len, PROT_READ | PROT_WRITE, MAP_SHARED, s->fd, 0);
	if (a == MAP_FAILED)
		return -errno;
	w->a.sh = a;
	void *m = mmap(NULL, s->mem_len, PROT_READ | PROT_WRITE, MAP_SHARED, s->fd,
		       (off_t)(j.seg_offset + (uint64_t)w->first_local * s->stride));
	if (m == MAP_FAILED)
		return -errno;
	s->mem = m;
	if (!q_layout_matches(w->a.sh, &w->a.g))
		return -EPROTO;
	return 0;
}

/**
 * km_open() - join a kmod world: sets w->a.sh, w->first_local, w->nlocal,
 * and each local device's segment; other devices' memory is not mapped here
 * (the kernel's engines copy between devices).
 * @w: the world being opened.
 * Without a launcher (no rank) the process drives every device of a world
 * of its own. Return: 0; -EINVAL (a rank but no MASTER_PORT); -ENODEV (no
 * /dev/accdma: modprobe accdma); -ETIMEDOUT; other negative errnos.
 */
static int km_open(struct accdma_world *w)
{
	static _Atomic uint32_t solo_worlds;
	const struct accdma_world_opts *o = &w->opts;
	struct drv_kmod *s = calloc(1, sizeof(*s));
	uint64_t key = (uint64_t)o->master_port;
	int rc;

	if (!s)
		return -ENOMEM;
	s->fd = -1;
	w->tp_state = s;
	if (o->peer_timeout_ms < 1)
		return -EINVAL;
	/* The module has no polled devices: engines = 0 runs one engine thread
	 * per device (w->opts.engines is 1 then), kicked as any other. */
	w->threaded = 1;
	if (o->rank < 0) {
		/* No launcher: this process drives every device of a world of its
		 * own (a key no port takes), as over local, the engines in the module. */
		w->first_local = 0;
		w->nlocal = o->num_devices;
		key = 1ull << 63 | (uint64_t)getpid() << 24 |
		      (atomic_fetch_add(&solo_worlds, 1) & 0xffffff);
	} else if (o->local_devices < 1 || o->rank >= o->num_devices ||
		   o->local_devices > o->num_devices - o->rank || o->master_port <= 0) {
		warn(w, "a rank (RANK) in the world and MASTER_PORT, as accdma-run sets", EINVAL);
		return -EINVAL;
	} else {
		w->first_local = o->rank;
		w->nlocal = o->local_devices;
	}
	/* The engines are the module's threads; a waiting host (ACCDMA_POLL, on
	 * by default) runs their passes in the module for a while (km_poll()),
	 * then sleeps there. */
	s->fd = open(KM_DEVICE, O_RDWR | O_CLOEXEC);
	if (s->fd < 0) {
		rc = errno == ENOENT ? -ENODEV : -errno;
		warn(w, "cannot open " KM_DEVICE " (modprobe accdma)", -rc);
		return rc;
	}
	rc = km_join(w, s, key);
	if (rc)
		return rc;
	rc = os_wait_redirect(w->a.sh, w->a.g.size, km_wait, km_wake, s);
	if (rc)
		return rc;
	s->redirected = 1;
	s->heaps = calloc((size_t)w->nlocal, sizeof(*s->heaps));
	if (!s->heaps)
		return -ENOMEM;
	for (int i = 0; i < w->nlocal; i++) {
		pthread_mutex_init(&s->heaps[i].lock, NULL);
		s->heaps[i].n = 1;
		s->heaps[i].fr[0].len = s->stride;
		dma_space_set_segment(&w->space, (uint32_t)(w->first_local + i),
				      s->mem + (uint64_t)i * s->stride, s->stride);
	}
	return 0;
}

/**
 * km_close() - leave the world: say so (CLOSED, before the module's DIED),
 * wake the partners' engines, unmap, close the file (the module's death
 * notice, which frees the world with its last member). Also undoes a
 * failed open.
 * @w: the world.
 */
static void km_close(struct accdma_world *w)
{
	struct drv_kmod *s = drv_kmod(w);

	if (!s)
		return;
	km_stop(w);
	if (w->a.sh && s->redirected) {
		for (int d = w->first_local; d < w->first_local + w->nlocal; d++) {
			uint32_t alive = Q_DEV_ALIVE;

			atomic_compare_exchange_strong(&q_dev(&w->a, (uint32_t)d)->lost, &alive,
						       Q_DEV_LOST_CLOSED);
		}
		atomic_store_explicit(&w->a.sh->lost_any, 1, memory_order_release);
		for (int d = 0; d < w->opts.num_devices; d++)
			q_device_kick(q_dev(&w->a, (uint32_t)d), 0, (uint32_t)w->opts.engines);
	}
	if (s->redirected)
		os_wait_unredirect(w->a.sh);
	if (s->mem)
		munmap(s->mem, s->mem_len);
	if (w->a.sh)
		munmap(w->a.sh, s->arena_len);
	w->a.sh = NULL;
	if (s->fd >= 0)
		close(s->fd);
	for (int i = 0; s->heaps && i < w->nlocal; i++)
		pthread_mutex_destroy(&s->heaps[i].lock);
	free(s->heaps);
	free(s);
	w->tp_state = NULL;
}

/* A device's host calls' server: answer the last call, take the next, run
 * it. One per device, as each device has its own engine threads: one
 * device's exec that blocks holds no other device's. */
static void *km_call_thread(void *arg)
{
	struct km_caller *k = arg;
	struct accdma_world *w = k->w;
	struct drv_kmod *s = drv_kmod(w);
	struct accdma_ioc_call c = { .size = sizeof(c), .dev = k->dev };

	for (;;) {
		if (ioctl(s->fd, ACCDMA_IOC_CALL, &c)) {
			if (errno != EINTR)
				break; /* ESHUTDOWN: the world closes */
			c.flags = 0; /* an answer given went through before the wait */
			continue;
		}
		c.result = drv_exec_run(w, k->dev, c.queue, c.handle);
		c.flags = ACCDMA_CALL_ANSWER;
	}
	return NULL;
}

static int km_start(struct accdma_world *w)
{
	struct drv_kmod *s = drv_kmod(w);

	s->callers = calloc((size_t)w->nlocal, sizeof(*s->callers));
	if (!s->callers)
		return -ENOMEM;
	for (int i = 0; i < w->nlocal; i++) {
		struct km_caller *k = &s->callers[i];
		int rc;

		k->w = w;
		k->dev = (uint32_t)(w->first_local + i);
		rc = pthread_create(&k->thread, NULL, km_call_thread, k);
		if (rc)
			return -rc; /* the caller closes the world: km_stop() joins the others */
		pthread_setname_np(k->thread, "accdma-call");
		s->ncallers++;
	}
	return 0;
}

/* Before the world goes: no more host calls served (pending ones fail once
 * the file is released). */
static void km_stop(struct accdma_world *w)
{
	struct drv_kmod *s = drv_kmod(w);
	struct accdma_ioc_call c = { .size = sizeof(c), .flags = ACCDMA_CALL_STOP };

	if (!s || !s->callers)
		return;
	ioctl(s->fd, ACCDMA_IOC_CALL, &c);
	for (int i = 0; i < s->ncallers; i++)
		pthread_join(s->callers[i].thread, NULL);
	free(s->callers);
	s->callers = NULL;
	s->ncallers = 0;
}

static uint64_t page_up(uint64_t v)
{
	return (v + KM_PAGE - 1) & ~(KM_PAGE - 1);
}

static int km_mem_alloc(struct accdma_world *w, int dev, uint64_t size, uint64_t *off, void **addr)
{
	struct km_heap *h = &drv_kmod(w)->heaps[dev - w->first_local];
	uint64_t len = page_up(size);
	int rc = -ENOMEM;

	if (len < size)
		return -ENOMEM;
	pthread_mutex_lock(&h->lock);
	for (uint32_t i = 0; i < h->n; i++) {
		if (h->fr[i].len < len)
			continue;
		*off = h->fr[i].off;
		h->fr[i].off += len;
		h->fr[i].len -= len;
		if (!h->fr[i].len) {
			memmove(&h->fr[i], &h->fr[i + 1], (h->n - i - 1) * sizeof(h->fr[0]));
			h->n--;
		}
		*addr = (char *)w->space.seg[dev] + *off;
		rc = 0;
		break;
	}
	pthread_mutex_unlock(&h->lock);
	return rc;
}

/* Freed memory is zeroed here (the module's pages cannot be punched out),
 * so that an allocation always starts zeroed. */
static void km_mem_free(struct accdma_world *w, int dev, uint64_t off, void *addr, uint64_t size)
{
	struct km_heap *h = &drv_kmod(w)->heaps[dev - w->first_local];
	uint64_t len = page_up(size);
	uint32_t i;

	memset((char *)w->space.seg[dev] + off, 0, len);
	(void)addr;
	pthread_mutex_lock(&h->lock);
	for (i = 0; i < h->n && h->fr[i].off < off; i++)
		;
	/* merge with the previous and/or the next extent, else insert */
	if (i > 0 && h->fr[i - 1].off + h->fr[i - 1].len == off) {
		h->fr[i - 1].len += len;
		if (i < h->n && h->fr[i - 1].off + h->fr[i - 1].len == h->fr[i].off) {
			h->fr[i - 1].len += h->fr[i].len;
			memmove(&h->fr[i], &h->fr[i + 1], (h->n - i - 1) * sizeof(h->fr[0]));
			h->n--;
		}
	} else if (i < h->n && off + len == h->fr[i].off) {
		h->fr[i].off = off;
		h->fr[i].len += len;
	} else {
		memmove(&h->fr[i + 1], &h->fr[i], (h->n - i) * sizeof(h->fr[0]));
		h->fr[i].off = off;
		h->fr[i].len = len;
		h->n++;
	}
	pthread_mutex_unlock(&h->lock);
}

static int km_mem_register(struct accdma_world *w, int dev, void *addr, uint64_t size, uint64_t *off)
{
	(void)w;
	(void)dev;
	(void)addr;
	(void)size;
	(void)off;
	return -EOPNOTSUPP; /* the engines reach only the module's memory */
}

const struct drv_transport drv_transport_kmod = {
	.name = "kmod",
	.shared_arena = 1,
	.kernel_engines = 1,
	.open = km_open,
	.start = km_start,
	.stop = km_stop,
	.close = km_close,
	.mem_alloc = km_mem_alloc,
	.mem_free = km_mem_free,
	.mem_register = km_mem_register,
	.poll = km_poll,
};
