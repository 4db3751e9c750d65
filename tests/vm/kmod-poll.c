// SPDX-License-Identifier: MIT
/*
 * kmod-poll.c - ACCDMA_IOC_POLL from user space, in the test VM (built
 * static by `make kmod-tests`; run by guest-kmod.sh). Two processes join a
 * two-device world with the raw ioctls and map its arena; then:
 *  - POLL refuses what breaks the ABI's rules, and works only after a join
 *  - a watched word that no longer holds the value given ends it at once
 *  - the spin is bounded: a word that never changes ends it with ETIMEDOUT,
 *    and a spin asked past 10 ms is cut to that
 *  - a signal during it: SIGALRM every millisecond while rank 0 polls; each
 *    POLL it lands in ends with EINTR, the next one goes on
 *  - two waiters of one device at once: two threads of rank 0 poll its
 *    device together (one pass of an engine at a time, whoever runs it)
 *  - a peer killed while it polls: rank 0 polls until it is killed; rank 1,
 *    polling with the arena's lost_any watched, sees it within the spin
 * and it prints VMBENCH lines: what an ioctl costs here (INFO, and a POLL
 * of one pass), the floor under a round over kmod.
 * Prints one line per check; exits 0 if all passed.
 * Usage: kmod-poll [/dev/accdma]
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kmod/accdma_ioctl.h"
#include "queue/abi.h"

#define MS 1000000ull

static const char *path = "/dev/" ACCDMA_DEVICE_NAME;
static int failed, rank;
static volatile sig_atomic_t alarms;

static void check(int ok, const char *what, const char *detail)
{
	printf("kmod-poll[%d]: %s %s%s%s\n", rank, ok ? "ok  " : "FAIL", what, detail ? ": " : "",
	       detail ? detail : "");
	failed += !ok;
}

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* POLL with a watched word (@watch) or none: 0 or the errno. */
static int poll_once(int fd, int watch, uint64_t off, uint32_t val, uint64_t spin_ns)
{
	struct accdma_ioc_poll a = { .size = sizeof(a), .spin_ns = spin_ns };

	if (watch) {
		a.flags = ACCDMA_POLL_WATCH;
		a.offset = off;
		a.val = val;
	}
	return ioctl(fd, ACCDMA_IOC_POLL, &a) ? errno : 0;
}

static void expect_poll(int fd, const char *what, struct accdma_ioc_poll *a, int want)
{
	int err = ioctl(fd, ACCDMA_IOC_POLL, a) ? errno : 0;
	char d[96];

	snprintf(d, sizeof(d), "%s, expected %s", err ? strerror(err) : "0",
		 want ? strerror(want) : "0");
	check(err == want, what, err == want ? NULL : d);
}

/* Join device @rank of a two-device world under @key; the arena's mapping. */
static volatile struct q_world_sh *join(int fd, uint64_t key, uint64_t *size)
{
	struct accdma_ioc_join j = { .size = sizeof(j), .key = key, .devices = 2, .queues = 1,
				     .engines = 1, .depth = 64, .eager_max = 64,
				     .first = (uint32_t)rank, .count = 1, .mem_size = 1 << 20,
				     .spin_ns = 50000, .timeout_ns = 20000 * MS };
	void *p;

	if (ioctl(fd, ACCDMA_IOC_JOIN, &j)) {
		check(0, "JOIN", strerror(errno));
		return NULL;
	}
	p = mmap(NULL, j.arena_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		check(0, "mmap of the arena", strerror(errno));
		return NULL;
	}
	*size = j.arena_size;
	return p;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* What a system call costs here, the floor under a round over kmod: the
 * median of INFO (a copy each way) and of a POLL that ends after one pass. */
static void costs(int fd, uint64_t off)
{
	static uint64_t t[1001];
	struct accdma_ioc_info info;

	for (int k = 0; k < 2; k++) {
		for (int i = 0; i < 1001; i++) {
			uint64_t t0 = now_ns();

			info.size = sizeof(info);
			if (k ? poll_once(fd, 1, off, 1, MS) : ioctl(fd, ACCDMA_IOC_INFO, &info))
				check(0, k ? "POLL, a word that differs" : "INFO", strerror(errno));
			t[i] = now_ns() - t0;
		}
		qsort(t, 1001, sizeof(t[0]), cmp_u64);
		printf("VMBENCH kmod-poll %s %.2f us (median of 1001)\n",
		       k ? "poll-one-pass" : "ioctl-info", (double)t[500] / 1e3);
	}
}

static void on_alarm(int sig)
{
	(void)sig;
	alarms++;
}

/* A signal during POLL: EINTR, and polling goes on afterwards. */
static void signals(int fd, uint64_t off)
{
	struct sigaction sa = { .sa_handler = on_alarm }; /* no SA_RESTART */
	struct itimerval it = { { 0, 1000 }, { 0, 1000 } };
	int eintr = 0, other = 0;

	sigaction(SIGALRM, &sa, NULL);
	setitimer(ITIMER_REAL, &it, NULL);
	for (int i = 0; i < 200; i++) {
		int err = poll_once(fd, 1, off, 0, 10 * MS);

		eintr += err == EINTR;
		other += err != EINTR && err != ETIMEDOUT;
	}
	memset(&it, 0, sizeof(it));
	setitimer(ITIMER_REAL, &it, NULL);
	check(eintr > 0 && !other && alarms > 0, "a signal during POLL ends it with EINTR", NULL);
	printf("kmod-poll[0]: %d of 200 POLLs ended EINTR, %d alarms\n", eintr, (int)alarms);
}

struct waiter {
	int fd;
	uint64_t off;
	int bad;
};

static void *waiter_main(void *arg)
{
	struct waiter *wt = arg;

	for (int i = 0; i < 200; i++) {
		int err = poll_once(wt->fd, i % 2, wt->off, 0, 100000);

		/* with no watch a pass that moved nothing spins on: ETIMEDOUT too */
		wt->bad += err != ETIMEDOUT && err != 0;
	}
	return NULL;
}

/* Rank 0's checks, then it polls until rank 1's parent kills it. */
static void rank0(int fd, volatile struct q_world_sh *sh, int ready)
{
	uint64_t off = offsetof(struct q_world_sh, stop), t0, dt;
	struct accdma_ioc_poll a = { .size = sizeof(a), .flags = ACCDMA_POLL_WATCH, .offset = off };
	struct waiter wt[2] = { { fd, off, 0 }, { fd, off, 0 } };
	pthread_t th[2];
	char d[64];

	a.flags = 4;
	expect_poll(fd, "POLL, an unknown flag", &a, EINVAL);
	a.flags = ACCDMA_POLL_WATCH;
	a.pad = 1;
	expect_poll(fd, "POLL, a pad not zero", &a, EINVAL);
	a.pad = 0;
	a.reserved[1] = 1;
	expect_poll(fd, "POLL, a reserved word not zero", &a, EINVAL);
	a.reserved[1] = 0;
	a.offset = 2;
	expect_poll(fd, "POLL, a misaligned word", &a, EINVAL);
	a.offset = 1ull << 40;
	expect_poll(fd, "POLL, a word past the arena", &a, EINVAL);
	a.flags = 0;
	a.offset = 64;
	expect_poll(fd, "POLL, an offset but no watch", &a, EINVAL);
	a.size = sizeof(a) - 8;
	expect_poll(fd, "POLL, a smaller size", &a, EINVAL);
	expect_poll(fd, "POLL, a NULL argument", NULL, EFAULT);

	/* the arena's stop word is 0 while the world lives */
	check(poll_once(fd, 1, off, 1, 1000 * MS) == 0, "POLL, a word that differs: at once", NULL);
	t0 = now_ns();
	dt = poll_once(fd, 1, off, sh->stop, 2 * MS) == ETIMEDOUT ? now_ns() - t0 : 0;
	snprintf(d, sizeof(d), "%.2f ms", (double)dt / 1e6);
	check(dt >= 2 * MS && dt < 1000 * MS, "POLL, 2 ms spin: ETIMEDOUT after it", d);
	t0 = now_ns();
	dt = poll_once(fd, 1, off, 0, 5000 * MS) == ETIMEDOUT ? now_ns() - t0 : 0;
	snprintf(d, sizeof(d), "%.2f ms", (double)dt / 1e6);
	check(dt >= 10 * MS && dt < 2000 * MS, "POLL, a 5 s spin is cut to 10 ms", d);

	costs(fd, off);
	signals(fd, off);

	pthread_create(&th[0], NULL, waiter_main, &wt[0]);
	pthread_create(&th[1], NULL, waiter_main, &wt[1]);
	pthread_join(th[0], NULL);
	pthread_join(th[1], NULL);
	check(!wt[0].bad && !wt[1].bad, "two waiters of one device poll at once", NULL);

	/* now poll until killed: tell the parent (and whether all passed) */
	if (write(ready, failed ? "f" : "r", 1) != 1)
		check(0, "telling the parent", strerror(errno));
	for (;;)
		poll_once(fd, 1, off, 0, 10 * MS);
}

/* Rank 1: poll with lost_any watched until rank 0's death shows there. */
static void rank1(int fd, volatile struct q_world_sh *sh)
{
	uint64_t off = offsetof(struct q_world_sh, lost_any), t0 = now_ns();
	int rc = ETIMEDOUT;

	while (rc && now_ns() - t0 < 60000 * MS) {
		rc = poll_once(fd, 1, off, 0, 10 * MS);
		if (rc && rc != ETIMEDOUT && rc != EINTR)
			break;
	}
	check(!rc && sh->lost_any, "a peer killed while both poll: the survivor's POLL sees it",
	      rc ? strerror(rc) : NULL);
}

int main(int argc, char **argv)
{
	uint64_t key = 0x9011ull << 40 | (uint64_t)getpid();
	int pipefd[2], bad = 0, ws;
	pid_t pid[2];
	char c;

	if (argc > 1)
		path = argv[1];
	setvbuf(stdout, NULL, _IOLBF, 0); /* rank 0 is killed: nothing may wait in a buffer */
	if (pipe(pipefd))
		return 1;
	for (int r = 0; r < 2; r++) {
		pid[r] = fork();
		if (pid[r] == 0) {
			volatile struct q_world_sh *sh;
			uint64_t size;
			int fd = open(path, O_RDWR | O_CLOEXEC);

			rank = r;
			if (r == 1)
				close(pipefd[1]); /* rank 0's end: EOF if it dies early */
			if (fd < 0) {
				check(0, "open", strerror(errno));
				_exit(1);
			}
			if (r == 0)
				expect_poll(fd, "POLL before JOIN", &(struct accdma_ioc_poll){
						    .size = sizeof(struct accdma_ioc_poll) }, EINVAL);
			sh = join(fd, key, &size);
			if (!sh)
				_exit(1);
			if (r == 0)
				rank0(fd, sh, pipefd[1]);
			else
				rank1(fd, sh);
			_exit(failed != 0);
		}
	}
	/* rank 0 polls once its checks are done: kill it mid-POLL */
	close(pipefd[1]);
	if (read(pipefd[0], &c, 1) == 1) {
		bad = c != 'r';
		usleep(50000);
		kill(pid[0], SIGKILL);
	} else {
		bad = 1;
	}
	waitpid(pid[0], &ws, 0);
	if (!WIFSIGNALED(ws) || WTERMSIG(ws) != SIGKILL) {
		printf("kmod-poll: rank 0 ended %#x, not killed while polling\n", ws);
		bad = 1;
	}
	waitpid(pid[1], &ws, 0);
	if (!WIFEXITED(ws) || WEXITSTATUS(ws)) {
		printf("kmod-poll: rank 1 ended %#x\n", ws);
		bad = 1;
	}
	printf("kmod-poll: %s\n", bad ? "FAIL" : "ok");
	return bad;
}
