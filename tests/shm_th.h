/* SPDX-License-Identifier: MIT */
/*
 * shm_th.h - helpers for the shm transport tests: one process per rank.
 *
 * A test binary is both the cmocka driver and the rank program: the driver
 * starts ranks as `/proc/self/exe --shm-child SCENARIO RANK N PORT ARG`
 * (posix_spawn, so each rank is a fresh process, as under a launcher) and
 * collects their exit codes, with a deadline: a hang is a failure. A rank
 * writes one byte to fd 3 (a pipe to the driver) when it reaches its "ready"
 * point, so the driver can kill it or its peers at a known moment.
 */
#ifndef ACCDMA_TESTS_SHM_TH_H
#define ACCDMA_TESTS_SHM_TH_H

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <accdma.h>

extern char **environ;

#define SHM_MAX_RANKS 16
#define SHM_HANG_MS 120000 /* only turns a hang into a failure */
#define SHM_EXIT_TIMEDOUT 3 /* a rank's exit code: world_open said -ETIMEDOUT */

/* ---- in a rank ------------------------------------------------------------ */

#define SC_CHECK(cond, ...)                                                                   \
	do {                                                                                  \
		if (!(cond)) {                                                                \
			fprintf(stderr, "rank %d: %s:%d: check failed: %s: ", sc_rank, __FILE__,  \
				__LINE__, #cond);                                             \
			fprintf(stderr, __VA_ARGS__);                                         \
			fputc('\n', stderr);                                                  \
			exit(1);                                                              \
		}                                                                             \
	} while (0)

static int sc_rank = -1;

/* Tell the driver this rank reached its ready point (fd 3, if the driver gave one). */
static inline void sc_ready(void)
{
	char c = 'r';

	if (fcntl(3, F_GETFD) != -1 && write(3, &c, 1) != 1)
		fprintf(stderr, "rank %d: cannot signal ready\n", sc_rank);
}

static inline void sc_opts(struct accdma_world_opts *o, int rank, int n, int port, int64_t peer_ms)
{
	accdma_world_opts_init(o);
	/* ACCDMA_TRANSPORT=kmod (make check-kmod's guest) runs the same processes
	 * through accdma.ko; anything else is shm */
	o->transport = o->transport == ACCDMA_TRANSPORT_KMOD ? ACCDMA_TRANSPORT_KMOD
							     : ACCDMA_TRANSPORT_SHM;
	o->num_devices = n;
	o->rank = rank;
	o->local_devices = 1;
	o->master_addr = NULL;
	o->master_port = port;
	o->mem_size = 16u << 20;
	o->timeout_ms = 30000;
	o->peer_timeout_ms = peer_ms;
	o->log_level = 1;
}

static inline enum accdma_status sc_wait(accdma_world *w, accdma_token t)
{
	enum accdma_status st = ACCDMA_ST__COUNT;
	int rc = accdma_wait(w, t, 30000, &st);

	SC_CHECK(rc == 0, "accdma_wait = %d", rc);
	return st;
}

static inline void sc_wait_ok(accdma_world *w, accdma_token t)
{
	enum accdma_status st = sc_wait(w, t);

	SC_CHECK(st == ACCDMA_OK, "status %s", accdma_status_str(st));
}

/* ---- in the driver --------------------------------------------------------- */

struct shm_run {
	int n;
	pid_t pid[SHM_MAX_RANKS];
	int status[SHM_MAX_RANKS]; /* waitpid status, -1 while running */
	int ready_fd;              /* read end of the ranks' ready pipe */
	int port;
};

/* A rendezvous no other test run uses (abstract socket names are per user). */
static inline int shm_port(void)
{
	static int k;
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return 20000 + (int)(((unsigned)getpid() * 131u + (unsigned)ts.tv_nsec / 1000u + 7919u * (unsigned)k++) % 40000u);
}

static inline uint64_t shm_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static inline void shm_run_init(struct shm_run *r, int n)
{
	int p[2];

	memset(r, 0, sizeof(*r));
	r->n = n;
	r->port = shm_port();
	for (int i = 0; i < SHM_MAX_RANKS; i++) {
		r->status[i] = -1;
		r->pid[i] = 0;
	}
	if (pipe2(p, O_CLOEXEC))
		abort();
	r->ready_fd = p[0];
	/* the write end goes to every rank as fd 3; keep it in a high slot meanwhile */
	if (dup3(p[1], 100, O_CLOEXEC) < 0)
		abort();
	close(p[1]);
}

/* Start rank @rank of scenario @sc with @arg (a scenario-specific number). */
static inline void shm_spawn(struct shm_run *r, const char *sc, int rank, int64_t arg)
{
	char srank[16], sn[16], sport[16], sarg[32];
	char *argv[] = { "/proc/self/exe", "--shm-child", (char *)sc, srank, sn, sport, sarg, NULL };
	posix_spawn_file_actions_t fa;
	char self[4096];
	ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (len <= 0)
		abort();
	self[len] = 0;
	argv[0] = self;
	snprintf(srank, sizeof(srank), "%d", rank);
	snprintf(sn, sizeof(sn), "%d", r->n);
	snprintf(sport, sizeof(sport), "%d", r->port);
	snprintf(sarg, sizeof(sarg), "%lld", (long long)arg);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, 100, 3);
	if (posix_spawn(&r->pid[rank], self, &fa, NULL, argv, environ))
		abort();
	posix_spawn_file_actions_destroy(&fa);
}

/* Wait for @count ready bytes; 0, or -1 on timeout. */
static inline int shm_wait_ready(struct shm_run *r, int count, int64_t ms)
{
	uint64_t end = shm_now_ms() + (uint64_t)ms;
	char buf[64];

	while (count > 0) {
		struct pollfd p = { r->ready_fd, POLLIN, 0 };
		uint64_t now = shm_now_ms();

		if (now >= end || poll(&p, 1, (int)(end - now)) <= 0)
			return -1;
		ssize_t got = read(r->ready_fd, buf, (size_t)count < sizeof(buf) ? (size_t)count : sizeof(buf));
		if (got > 0)
			count -= (int)got;
	}
	return 0;
}

/* Reap ranks until all have exited or @ms passed (then they are killed).
 * Return: the number of ranks that had to be killed. */
static inline int shm_reap(struct shm_run *r, int64_t ms)
{
	uint64_t end = shm_now_ms() + (uint64_t)ms;
	int killed = 0;

	for (;;) {
		int left = 0;

		for (int i = 0; i < r->n; i++) {
			int st;

			if (!r->pid[i] || r->status[i] != -1)
				continue;
			if (waitpid(r->pid[i], &st, WNOHANG) == r->pid[i])
				r->status[i] = st;
			else
				left++;
		}
		if (!left)
			return killed;
		if (shm_now_ms() >= end) {
			for (int i = 0; i < r->n; i++)
				if (r->pid[i] && r->status[i] == -1) {
					fprintf(stderr, "rank %d (pid %d) hung: killed\n", i, (int)r->pid[i]);
					kill(r->pid[i], SIGKILL);
					waitpid(r->pid[i], &r->status[i], 0);
					killed++;
				}
			return killed;
		}
		poll(NULL, 0, 10);
	}
}

static inline void shm_run_end(struct shm_run *r)
{
	shm_reap(r, SHM_HANG_MS);
	close(r->ready_fd);
	close(100);
}

/* The exit code of a rank that exited, else 1000 + signal. */
static inline int shm_code(const struct shm_run *r, int rank)
{
	int st = r->status[rank];

	if (st == -1)
		return -1;
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	return 1000 + WTERMSIG(st);
}

#endif
