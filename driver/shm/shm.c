// SPDX-License-Identifier: MIT
/*
 * shm.c - the shared-memory transport: one process per device (or group of
 * devices) on one host. See docs/transports.md.
 *
 * Memory: the arena (rings, completion records, rendezvous tables, region
 * tables) and one segment per process (its devices' memory) are memfds:
 * anonymous files that have no name in any file system, are sealed against
 * resizing, and disappear with the last process that maps them, so nothing is
 * left behind even after `kill -9` of every rank. The master creates them and
 * passes them to every process over the bootstrap socket (SCM_RIGHTS). Every
 * process maps every segment, so a transfer is one copy from the sender's
 * region into the receiver's.
 *
 * Each process runs only its own devices' engines (exec function pointers
 * stay valid) and allocates its devices' regions from its own segment; the
 * shared region table gives each region's offset in its device's part of the
 * segment, and dma_resolve() checks it against this process's mapping.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "driver/internal.h"
#include "driver/shm/shm.h"

#define SHM_PAGE 4096ull

static uint64_t page_up(uint64_t v)
{
	return (v + SHM_PAGE - 1) & ~(SHM_PAGE - 1);
}

static void warn(const struct accdma_world *w, const char *fmt, const char *arg)
{
	if (w->opts.log_level >= 1) {
		fputs("accdma: shm: ", stderr);
		fprintf(stderr, fmt, arg);
		fputc('\n', stderr);
	}
}

/* A sealed memfd of @size zero bytes. */
static int make_segment(const char *name, uint64_t size)
{
	int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);

	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)size) ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)) {
		int rc = -errno;

		close(fd);
		return rc;
	}
	return fd;
}

/* Map a whole segment, which must be exactly @size bytes. */
static void *map_segment(int fd, uint64_t size)
{
	struct stat st;
	void *p;

	if (fstat(fd, &st) || (uint64_t)st.st_size != size)
		return NULL;
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	return p == MAP_FAILED ? NULL : p;
}

/* Master: create the arena and every process's segment. fds[0] arena, fds[1+i] process i. */
static int create_all(struct accdma_world *w, struct drv_shm *s, int *fds)
{
	char name[64];
	int rc;

	rc = make_segment("accdma-arena", w->a.g.size);
	if (rc < 0)
		return rc;
	fds[0] = rc;
	for (int i = 0; i < s->nprocs; i++) {
		snprintf(name, sizeof(name), "accdma-mem-%d", s->procs[i].first);
		rc = make_segment(name, (uint64_t)s->procs[i].count * s->stride);
		if (rc < 0)
			return rc;
		fds[1 + i] = rc;
	}
	w->a.sh = map_segment(fds[0], w->a.g.size);
	if (!w->a.sh)
		return -ENOMEM;
	q_layout_init(&w->a);
	for (int i = 0; i < s->nprocs; i++)
		for (int d = s->procs[i].first; d < s->procs[i].first + s->procs[i].count; d++)
			atomic_store(&q_dev(&w->a, (uint32_t)d)->owner_pid, s->procs[i].pid);
	return 0;
}

/* Everyone: map what is not mapped yet and point the address space at it. */
static const char *map_all(struct accdma_world *w, struct drv_shm *s, const int *fds)
{
	if (!w->a.sh) {
		w->a.sh = map_segment(fds[0], w->a.g.size);
		if (!w->a.sh)
			return "cannot map the arena (wrong size, or out of memory)";
		if (!q_layout_matches(w->a.sh, &w->a.g))
			return "the arena rank 0 laid out is not the world this process computed";
	}
	s->seg = calloc((size_t)s->nprocs, sizeof(*s->seg));
	s->seg_len = calloc((size_t)s->nprocs, sizeof(*s->seg_len));
	if (!s->seg || !s->seg_len)
		return "out of memory";
	for (int i = 0; i < s->nprocs; i++) {
		uint64_t len = (uint64_t)s->procs[i].count * s->stride;

		s->seg[i] = map_segment(fds[1 + i], len);
		if (!s->seg[i])
			return "cannot map a device memory segment (wrong size, or out of memory)";
		s->seg_len[i] = len;
		for (int k = 0; k < s->procs[i].count; k++) {
			dma_space_set_segment(&w->space, (uint32_t)(s->procs[i].first + k),
					      s->seg[i] + (uint64_t)k * s->stride, s->stride);
			dma_space_set_pid(&w->space, (uint32_t)(s->procs[i].first + k), s->procs[i].pid);
		}
	}
	/* Our devices' memory goes on their NUMA nodes before anyone touches it. */
	for (int d = w->first_local; d < w->first_local + w->nlocal; d++)
		dma_mem_bind((char *)w->space.seg[d], s->stride, w->numa_map[d]);
	return NULL;
}

/* The process table must tile the devices, in order, with us where we said. */
static int procs_ok(const struct accdma_world *w, const struct drv_shm *s)
{
	int next = 0;

	for (int i = 0; i < s->nprocs; i++) {
		if (s->procs[i].first != next || s->procs[i].count < 1 ||
		    s->procs[i].count > w->opts.num_devices - next)
			return 0;
		next += s->procs[i].count;
	}
	return next == w->opts.num_devices && s->procs[s->self].first == w->first_local &&
	       s->procs[s->self].count == w->nlocal;
}

/**
 * drv_shm_open() - join a shm world: bootstrap, map the arena and every
 * process's memory. Sets w->a.sh, w->first_local, w->nlocal.
 * The arena's geometry (w->a.g) is already computed.
 * @w: the world being opened (opts, numa_map and space set up).
 * Return: 0; -EINVAL (bad rank, options differing across ranks, no
 * rendezvous); -ETIMEDOUT (a rank never joined); other negative errnos.
 * On failure the caller releases the world (drv_shm_close()).
 */
int drv_shm_open(struct accdma_world *w)
{
	const struct accdma_world_opts *o = &w->opts;
	struct drv_shm *s = calloc(1, sizeof(*s));
	struct drv_boot b = { .conn = -1 };
	int *fds = NULL, nfds = 0, rc = 0, booted = 0;
	const char *err = NULL;

	if (!s)
		return -ENOMEM;
	s->monitor_efd = -1;
	w->tp_state = s;
	if (o->rank < 0 || o->local_devices < 1 || o->rank >= o->num_devices ||
	    o->local_devices > o->num_devices - o->rank) {
		if (o->rank < 0)
			warn(w, "no rank: set opts.rank or RANK (as torchrun and accdma-run do)%s", "");
		else
			warn(w, "rank / local_devices out of range of num_devices%s", "");
		return -EINVAL;
	}
	if (o->peer_timeout_ms < 1)
		return -EINVAL;
	w->first_local = o->rank;
	w->nlocal = o->local_devices;
	s->stride = page_up(o->mem_size);
	if (s->stride < o->mem_size || s->stride > (UINT64_MAX >> 12) / (uint64_t)o->num_devices)
		return -EINVAL;

	if (w->nlocal == o->num_devices) { /* a world of one process: nobody to meet */
		s->procs = calloc(1, sizeof(*s->procs));
		if (!s->procs)
			return -ENOMEM;
		s->procs[0] = (struct drv_boot_proc){ 0, o->num_devices, (int32_t)getpid(), 0 };
		s->nprocs = 1;
	} else {
		rc = drv_boot_join(&b, o, w->first_local, w->nlocal);
		if (rc)
			goto out;
		booted = 1;
		if (b.master) { /* a copy: the bootstrap still hands the table out */
			s->procs = malloc((size_t)b.nprocs * sizeof(*s->procs));
			if (!s->procs) {
				rc = -ENOMEM;
				goto out;
			}
			memcpy(s->procs, b.procs, (size_t)b.nprocs * sizeof(*s->procs));
			s->nprocs = b.nprocs;
			s->self = b.self;
		}
	}
	if (!booted || b.master) {
		nfds = 1 + s->nprocs;
		fds = malloc((size_t)nfds * sizeof(int));
		if (!fds) {
			rc = -ENOMEM;
			goto out;
		}
		for (int i = 0; i < nfds; i++)
			fds[i] = -1;
		rc = create_all(w, s, fds);
		if (rc) {
			err = "cannot create the shared segments";
			warn(w, "cannot create the shared segments: %s", strerror(-rc));
		}
		if (booted && !rc)
			rc = drv_boot_share(&b, &fds, &nfds);
	} else {
		rc = drv_boot_share(&b, &fds, &nfds);
		if (!rc) {
			s->procs = b.procs;
			s->nprocs = b.nprocs;
			s->self = b.self;
			b.procs = NULL;
			if (!procs_ok(w, s) || nfds != 1 + s->nprocs) {
				err = "the process table from rank 0 does not match this process";
				rc = -EPROTO;
			}
		}
	}
	if (!err && !rc) {
		err = map_all(w, s, fds);
		if (!err && drv_shm_heaps_init(w))
			err = "out of memory";
		if (err)
			rc = -ENOMEM;
	}
	if (booted && (!rc || err)) {
		int rrc = drv_boot_ready(&b, err);

		if (!rc)
			rc = rrc;
	} else if (err) {
		warn(w, "%s", err);
	}
out:
	for (int i = 0; fds && i < nfds; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	free(fds);
	if (booted) {
		drv_boot_end(&b);
		free(b.procs);
	}
	return rc;
}

/**
 * drv_shm_started() - the local engines run: start watching the peers.
 * @w: the world. Return: 0 or a negative errno.
 */
int drv_shm_started(struct accdma_world *w)
{
	return drv_shm(w)->nprocs > 1 ? drv_monitor_start(w) : 0;
}

/* Make every engine of @dev look at its queues again. */
static void kick_device(struct accdma_world *w, uint32_t dev)
{
	q_device_kick(q_dev(&w->a, dev), 0, (uint32_t)w->opts.engines);
}

/**
 * drv_shm_mark_lost() - process @proc is gone: its devices are lost.
 * @w: the world. @proc: index in the process table. @why: Q_DEV_LOST_*.
 * The first process to mark a device wins (and says so); every caller kicks
 * its own engines, which sleep until kicked, so that their ops waiting on the
 * lost devices complete PEER_LOST.
 */
void drv_shm_mark_lost(struct accdma_world *w, int proc, uint32_t why)
{
	struct drv_shm *s = drv_shm(w);
	const struct drv_boot_proc *p = &s->procs[proc];
	int changed = 0;

	for (int d = p->first; d < p->first + p->count; d++) {
		uint32_t alive = Q_DEV_ALIVE;

		changed |= atomic_compare_exchange_strong_explicit(
			&q_dev(&w->a, (uint32_t)d)->lost, &alive, why, memory_order_acq_rel,
			memory_order_acquire);
	}
	if (changed)
		atomic_store_explicit(&w->a.sh->lost_any, 1, memory_order_release);
	if (changed && why == Q_DEV_LOST_DIED && w->opts.log_level >= 1)
		fprintf(stderr,
			"accdma: shm: rank %d (pid %d) died; ops with it complete PEER_LOST\n",
			p->first, p->pid);
	for (int d = w->first_local; d < w->first_local + w->nlocal; d++)
		kick_device(w, (uint32_t)d);
}

/**
 * drv_shm_close() - leave the world: tell the peers, unmap everything.
 * @w: the world; the local engines are already stopped (they took no
 * rendezvous entry they did not complete). Also undoes a failed open.
 */
void drv_shm_close(struct accdma_world *w)
{
	struct drv_shm *s = drv_shm(w);

	if (!s)
		return;
	drv_monitor_stop(w);
	if (w->a.sh && s->procs && s->nprocs > 0) {
		/* Our devices are gone for good: peers' ops with them complete PEER_LOST. */
		for (int d = w->first_local; d < w->first_local + w->nlocal; d++) {
			uint32_t alive = Q_DEV_ALIVE;

			atomic_compare_exchange_strong(&q_dev(&w->a, (uint32_t)d)->lost, &alive,
						       Q_DEV_LOST_CLOSED);
		}
		atomic_store_explicit(&w->a.sh->lost_any, 1, memory_order_release);
		for (int d = 0; d < w->opts.num_devices; d++)
			if (d < w->first_local || d >= w->first_local + w->nlocal)
				kick_device(w, (uint32_t)d);
	}
	for (int i = 0; s->seg && i < s->nprocs; i++)
		if (s->seg[i])
			munmap(s->seg[i], s->seg_len[i]);
	if (w->a.sh)
		munmap(w->a.sh, w->a.g.size);
	w->a.sh = NULL;
	for (int i = 0; s->heaps && i < w->nlocal; i++)
		pthread_mutex_destroy(&s->heaps[i].lock);
	free(s->heaps);
	free(s->seg);
	free(s->seg_len);
	free(s->procs);
	free(s);
	w->tp_state = NULL;
}

/*
 * Caller memory is in no segment a peer maps: peers reach it by cross-memory
 * attach (process_vm_readv/writev, as Open MPI's vader does for large
 * messages), which the kernel allows to a process that may ptrace us. Yama's
 * ptrace_scope 1 allows only our ancestors, unless we name a tracer: we let
 * any process of ours (PR_SET_PTRACER_ANY; the kernel still requires our
 * uid). Scope 2 and 3 refuse it: -EPERM, said once, and the caller keeps
 * using device memory.
 * The region's offset is the address here; our own engines use the private
 * record (dma_space_set_reg()), peers the shared one.
 */
static int shm_mem_register(struct accdma_world *w, int dev, void *addr, uint64_t size, uint64_t *off)
{
	static int said;
	int scope = 0;
	FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "r");

	(void)dev;
	(void)size;
	if (f) {
		if (fscanf(f, "%d", &scope) != 1)
			scope = 0;
		fclose(f);
	}
	if (scope >= 2 || (scope == 1 && prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0))) {
		if (!said++ && w->opts.log_level >= 1)
			fprintf(stderr, "accdma: accdma_mem_register over shm needs cross-memory attach, "
					"which kernel.yama.ptrace_scope=%d refuses: use accdma_mem_alloc()\n",
				scope);
		return -EPERM;
	}
	*off = (uint64_t)(uintptr_t)addr;
	return 0;
}

const struct drv_transport drv_transport_shm = {
	.name = "shm",
	.shared_arena = 1,
	.open = drv_shm_open,
	.start = drv_shm_started,
	.close = drv_shm_close,
	.mem_alloc = drv_shm_alloc,
	.mem_free = drv_shm_free,
	.mem_register = shm_mem_register,
};
