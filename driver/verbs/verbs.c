// SPDX-License-Identifier: MIT
/*
 * verbs.c - the verbs transport: one process per rank (of local_devices
 * devices each) on any number of hosts, joined by RDMA through libibverbs.
 *
 * Each process lays out the whole arena in its own memory, as `local` does,
 * and drives only its own devices' blocks: a device of another process is
 * far, and the engines reach it only through the link (link.c), so the
 * receiver owns its tables and rings (fw_stub/msg.c). Device memory is the
 * process's own heap, registered region by region (region.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "driver/verbs/verbs.h"

/* What identifies this job: the launcher's job id if there is one, the
 * rendezvous port, the world's size. */
static uint64_t job_cookie(const struct accdma_world_opts *o)
{
	static const char *const ids[] = { "TORCHELASTIC_RUN_ID", "SLURM_JOB_ID", "OMPI_MCA_orte_ess_jobid",
					   "PMI_JOBID", "ACCDMA_JOB_ID" };
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		const char *v = getenv(ids[i]);

		for (; v && *v; v++)
			h = (h ^ (uint8_t)*v) * 0x100000001b3ull;
	}
	h = (h ^ (uint64_t)o->master_port) * 0x100000001b3ull;
	return (h ^ (uint64_t)o->num_devices) * 0x100000001b3ull;
}

/* Pinned memory this world may need: what RLIMIT_MEMLOCK must allow. */
static int memlock_ok(struct accdma_world *w)
{
	struct rlimit rl;
	uint64_t want = (uint64_t)w->nlocal * w->opts.mem_size +
			(uint64_t)(VB_RECV_BUFS + VB_SEND_BUFS) * VB_MSG_BYTES + vb_stage_bytes(vb_of(w));

	/* root pins past the limit (CAP_IPC_LOCK) */
	if (!geteuid() || getrlimit(RLIMIT_MEMLOCK, &rl) || rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= want)
		return 0;
	fprintf(stderr,
		"accdma: verbs: RLIMIT_MEMLOCK is %llu bytes, below the %llu this process may pin "
		"(%d devices of mem_size %llu): raise it (ulimit -l unlimited, or the container's memlock)\n",
		(unsigned long long)rl.rlim_cur, (unsigned long long)want, w->nlocal,
		(unsigned long long)w->opts.mem_size);
	return -ENOMEM;
}

static void hello_of(struct vb *v, struct vb_hello *h)
{
	const struct accdma_world_opts *o = &v->w->opts;
	uint32_t *qpn = (uint32_t *)(h + 1);

	memset(h, 0, sizeof(*h));
	h->magic = VB_BOOT_MAGIC;
	h->version = 4; /* 2: staged sends; 3: each as one write with immediate; 4: acks name their publication */
	h->cookie = v->cookie;
	h->rank = (uint32_t)v->self;
	h->nprocs = (uint32_t)v->nprocs;
	h->local_devices = (uint32_t)v->L;
	h->ndev = (uint32_t)o->num_devices;
	h->queues = (uint32_t)o->queues;
	h->engines = (uint32_t)v->w->a.g.engines;
	h->depth = o->queue_depth;
	h->eager_max = v->w->a.g.eager_max;
	h->mtu = (uint32_t)v->mtu;
	memcpy(h->gid, v->gid.raw, 16);
	snprintf(h->dev, sizeof(h->dev), "%s", v->devname);
	for (int p = 0; p < v->nprocs; p++)
		qpn[p] = v->qp[p] ? v->qp[p]->qp_num : 0;
}

static int alloc_state(struct accdma_world *w, struct vb *v)
{
	size_t n = (size_t)v->nprocs;

	v->hellos = calloc(n, sizeof(*v->hellos));
	v->qpns = calloc(n * n, sizeof(*v->qpns));
	v->qp = calloc(n, sizeof(*v->qp));
	v->conns = calloc(n, sizeof(*v->conns));
	v->pings = calloc(n, sizeof(*v->pings));
	v->proc_lost = calloc(n, sizeof(*v->proc_lost));
	v->inline_sent = calloc(n, sizeof(*v->inline_sent));
	v->inline_done = calloc(n, sizeof(*v->inline_done));
	v->buf_sent = calloc(n, sizeof(*v->buf_sent));
	v->buf_done = calloc(n, sizeof(*v->buf_done));
	v->acked = calloc(n, sizeof(*v->acked));
	v->told = calloc(n, sizeof(*v->told));
	v->inbox = calloc(w->a.g.ndev, sizeof(*v->inbox));
	v->rreg = calloc((size_t)w->a.g.ndev * Q_MAX_REGIONS, sizeof(*v->rreg));
	v->lreg = calloc((size_t)v->L * Q_MAX_REGIONS, sizeof(*v->lreg));
	v->stage_mr = calloc(n, sizeof(*v->stage_mr));
	v->rstage = calloc(n, sizeof(*v->rstage));
	if (!v->hellos || !v->qpns || !v->qp || !v->conns || !v->pings || !v->proc_lost || !v->inline_sent ||
	    !v->inline_done || !v->acked || !v->told || !v->buf_sent || !v->buf_done || !v->inbox ||
	    !v->rreg || !v->lreg || !v->stage_mr || !v->rstage)
		return -ENOMEM;
	for (uint32_t d = 0; d < w->a.g.ndev; d++)
		drv_inbox_init(&v->inbox[d]);
	pthread_mutex_init(&v->slock, NULL);
	pthread_mutex_init(&v->cq_lock, NULL);
	pthread_mutex_init(&v->pub_lock, NULL);
	pthread_mutex_init(&v->lreg_lock, NULL);
	return 0;
}

static void verbs_close(struct accdma_world *w)
{
	struct vb *v = vb_of(w);

	if (v) {
		if (w->host.link) /* the world opened (else no peer has our messages) */
			vb_link_flush(v);
		vb_boot_end(v);
		vb_link_close(v);
	}
	drv_transport_local.close(w); /* the arena; device memory (regions were deregistered) */
	if (!v)
		return;
	for (uint32_t d = 0; v->inbox && d < w->a.g.ndev; d++)
		drv_inbox_fini(&v->inbox[d]);
	free(v->hellos);
	free(v->qpns);
	free(v->qp);
	free(v->conns);
	free((void *)v->pings);
	free((void *)v->proc_lost);
	free((void *)v->inline_sent);
	free((void *)v->inline_done);
	free((void *)v->acked);
	free(v->told);
	free((void *)v->buf_sent);
	free((void *)v->buf_done);
	free(v->inbox);
	free(v->rreg);
	free(v->lreg);
	free(v->stage_mr);
	free(v->rstage);
	free(v);
	w->tp_state = NULL;
	w->host.link = NULL;
}

static int verbs_open(struct accdma_world *w)
{
	const struct accdma_world_opts *o = &w->opts;
	struct vb *v;
	struct vb_hello *mine;
	char err[384];
	int rc;

	if (o->rank < 0 || o->local_devices < 1 || o->num_devices % o->local_devices ||
	    o->rank % o->local_devices || o->rank >= o->num_devices) {
		fprintf(stderr, "accdma: verbs: need a rank (RANK, as torchrun, mpirun and srun set) and "
				"num_devices a multiple of local_devices\n");
		return -EINVAL;
	}
	v = calloc(1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	w->tp_state = v;
	v->w = w;
	v->L = o->local_devices;
	v->nprocs = o->num_devices / o->local_devices;
	v->self = o->rank / o->local_devices;
	v->conn = v->listen_fd = v->efd = -1;
	v->cookie = job_cookie(o);
	rc = drv_transport_local.open(w); /* the arena, in our memory; we drive our devices only */
	if (rc)
		return rc;
	w->first_local = o->rank;
	w->nlocal = v->L;
	rc = memlock_ok(w);
	if (!rc)
		rc = alloc_state(w, v);
	if (!rc)
		rc = vb_link_open(v);
	if (!rc)
		rc = vb_link_start(v);
	if (rc)
		return rc;
	mine = calloc(1, sizeof(*mine) + (size_t)v->nprocs * sizeof(uint32_t));
	if (!mine)
		return -ENOMEM;
	hello_of(v, mine);
	rc = vb_boot_join(v, mine);
	free(mine);
	if (rc)
		return rc;
	v->link = (struct fw_link){ .ops = &vb_link_ops, .near_lo = (uint32_t)o->rank, .near_n = (uint32_t)v->L };
	rc = vb_link_connect(v, err, sizeof(err));
	if (!rc)
		rc = vb_link_check_paths(v, err, sizeof(err));
	rc = vb_boot_ready(v, rc ? err : NULL);
	if (rc)
		return rc;
	w->host.link = &v->link;
	return vb_boot_monitor_start(v);
}

const struct drv_transport drv_transport_verbs = {
	.name = "verbs",
	.shared_arena = 0,
	.full_fences = 1, /* membarrier's IPIs cost more than the fences they spare, next to RDMA */
	.small_spin_ns = VB_WAIT_SPIN_SMALL_NS,
	.nap_max_us = DRV_FAR_NAP_MAX_US,
	.open = verbs_open,
	.stop = drv_local_stop, /* the arena and device memory are in this process, as local's */
	.close = verbs_close,
	.mem_alloc = drv_local_mem_alloc,
	.mem_free = drv_local_mem_free,
	.mem_register = drv_local_mem_register,
	.region_added = vb_region_added,
	.region_removed = vb_region_removed,
};
