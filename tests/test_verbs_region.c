/* SPDX-License-Identifier: MIT */
/*
 * test_verbs_region.c - publishing a region over verbs when a peer does not
 * answer in time (driver/verbs/region.c), on the test VM's two soft-RoCE
 * ports (`make check-verbs`; skipped without an RDMA device).
 *
 * Rank 1 stops reading its completion queue (it holds the lock its poller
 * takes) while rank 0 allocates a region: the publication times out and the
 * allocation fails -ETIMEDOUT, and the caller frees the memory. Nothing may
 * then reach it: rank 0 no longer has it registered, and rank 1, once it
 * reads on and answers the take-back, holds no key to it. A late answer
 * counts for nothing else: the next allocation is published and written
 * into as usual.
 */
#include "verbs_th.h"

#include <stdatomic.h>
#include <sys/mman.h>

#include "driver/internal.h"
#include "driver/verbs/verbs.h"

/* Shared by the two ranks: made before they fork. */
struct steps {
	atomic_int held, failed, revoked, checked;
	_Atomic uint64_t key0; /* rank 0's second region: its key differs from rank 1's */
};
static struct steps *steps;

/* Until @flag is set (10 s at most: a hang guard). */
static int await_flag(atomic_int *flag)
{
	for (int i = 0; i < 1000 && !atomic_load(flag); i++)
		usleep(10000);
	return atomic_load(flag);
}

/* Regions of device @dev that @v holds a key to: its own registered ones
 * (@dev ours), or the ones the peer published to it. */
static int keys_held(struct vb *v, int dev)
{
	int n = 0;

	for (int i = 0; i < Q_MAX_REGIONS; i++)
		n += dev == v->self ? v->lreg[i].mr != NULL
				    : atomic_load(&v->rreg[(size_t)dev * Q_MAX_REGIONS + i].key) != 0;
	return n;
}

static void rank_unanswered(int rank)
{
	accdma_queue *q;
	accdma_key k, k2;
	accdma_token t;
	accdma_world *w;
	struct vb *v;
	uint8_t *p;
	int rc;

	setenv("ACCDMA_PEER_TIMEOUT_MS", "1500", 1);
	w = rank_joined(rank, &q, &k);
	v = vb_of(w);
	if (rank == 1) {
		pthread_mutex_lock(&v->cq_lock);
		atomic_store(&steps->held, 1);
		CHECK(await_flag(&steps->failed));
		pthread_mutex_unlock(&v->cq_lock);
		CHECK(await_flag(&steps->revoked));
		if (keys_held(v, 0) != 1)
			fprintf(stderr, "rank 1: holds %d keys of rank 0's regions\n", keys_held(v, 0));
		CHECK(keys_held(v, 0) == 1); /* the first region's, not the failed one's */
		atomic_store(&steps->checked, 1);
	} else {
		CHECK(await_flag(&steps->held));
		CHECK(keys_held(v, 0) == 1);
		rc = accdma_mem_alloc(w, 0, 4096, &k2);
		if (rc != -ETIMEDOUT)
			fprintf(stderr, "rank 0: alloc with rank 1 silent: %d\n", rc);
		CHECK(rc == -ETIMEDOUT);
		if (keys_held(v, 0) != 1)
			fprintf(stderr, "rank 0: %d regions registered after the failed alloc\n", keys_held(v, 0));
		CHECK(keys_held(v, 0) == 1); /* the failed one is not */
		atomic_store(&steps->failed, 1);
		/* rank 1 reads on: the take-back (our last publication) served and
		 * answered, after the region it takes back (10 s: a hang guard) */
		for (int i = 0; i < 1000 && atomic_load(&v->acked[1]) != v->pub_seq; i++)
			usleep(10000);
		CHECK(atomic_load(&v->acked[1]) == v->pub_seq);
		atomic_store(&steps->revoked, 1);
		CHECK(await_flag(&steps->checked)); /* before we publish again */
	}
	CHECK(accdma_barrier(q, NULL, 0, &t) == 0 && wait_st(w, t, NULL) == ACCDMA_OK);
	/* publishing goes on: a region on each, and rank 1 writes into rank 0's */
	CHECK(accdma_mem_alloc(w, rank, 4096, &k2) == 0);
	p = accdma_mem_ptr(w, rank, k2, NULL);
	CHECK(p != NULL);
	memset(p, rank ? 0x5a : 0, 4096);
	if (rank == 0)
		atomic_store(&steps->key0, k2);
	CHECK(accdma_barrier(q, NULL, 0, &t) == 0 && wait_st(w, t, NULL) == ACCDMA_OK);
	if (rank == 1) {
		CHECK(accdma_write(q, 0, k2, 0, 4096, (accdma_key)atomic_load(&steps->key0), 0, NULL, 0, &t) == 0);
		CHECK(wait_st(w, t, NULL) == ACCDMA_OK);
	}
	CHECK(accdma_barrier(q, NULL, 0, &t) == 0 && wait_st(w, t, NULL) == ACCDMA_OK);
	if (rank == 0)
		for (int i = 0; i < 4096; i++)
			CHECK(p[i] == 0x5a);
	CHECK(accdma_world_close(w) == 0);
	_exit(0);
}

static void test_unanswered_publication(void **state)
{
	(void)state;
	need_rdma();
	steps = mmap(NULL, sizeof(*steps), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_true(steps != MAP_FAILED);
	memset(steps, 0, sizeof(*steps));
	run_ranks_ok(rank_unanswered);
	munmap(steps, sizeof(*steps));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_unanswered_publication),
	};

	return verbs_th_run("test_verbs_region", tests, sizeof(tests) / sizeof(tests[0]));
}
