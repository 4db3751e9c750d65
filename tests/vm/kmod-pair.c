// SPDX-License-Identifier: MIT
/*
 * kmod-pair.c - two processes of one world through accdma.ko (the kmod
 * transport), run in the test VM by tests/vm/guest-kmod.sh. It forks its
 * two ranks itself (RANK, WORLD_SIZE, MASTER_PORT, ACCDMA_TRANSPORT=kmod),
 * so that it can judge how each one ended.
 *
 *   kmod-pair pair [ROUNDS]  8-byte ping-pong (median round: a VMBENCH line),
 *                            1 MiB each way (rendezvous) with its bytes
 *                            checked; recv -> exec -> send on rank 1 with no
 *                            host wait (the exec a host call the library
 *                            serves); a child forked after the join gets no
 *                            mapping (its read of device memory faults)
 *   kmod-pair kill           rank 0 posts a 1 MiB send and is killed (SIGKILL);
 *                            rank 1's pending recv completes PEER_LOST
 *   kmod-pair scribble       rank 0 writes random bytes over every page of
 *                            /dev/accdma it has mapped while both post;
 *                            rank 1 must end (any status) and the kernel live
 *   kmod-pair hold SECS      both ranks hold the world open SECS seconds
 *   kmod-pair signal [ROUNDS] pair, with SIGALRM every millisecond in both
 *                            ranks (SA_RESTART): waits that a signal ends in
 *                            the module (POLL, WAIT, CALL: EINTR) go on
 * KMOD_PAIR_TRANSPORT=shm runs the same over shm (a benchmark's reference);
 * KMOD_PAIR_NOTE=WORD tags the VMBENCH line.
 * Exits 0 on success.
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <accdma.h>

#define BIG (1u << 20)

static int rank;

#define die(...) do { fprintf(stderr, "kmod-pair[%d]: ", rank); fprintf(stderr, __VA_ARGS__); \
		      fputc('\n', stderr); exit(1); } while (0)
#define ok(rc, what) do { int rc_ = (rc); if (rc_ < 0) die("%s: %s", what, strerror(-rc_)); } while (0)

static double now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Send or receive @len bytes of (@key) with @peer, and wait: the op's status. */
static enum accdma_status xfer(accdma_world *w, accdma_queue *q, int send, int peer,
			       uint64_t tag, accdma_key key, uint64_t len, int64_t ms)
{
	enum accdma_status st = ACCDMA_ST__COUNT;
	accdma_token t;

	if (send)
		ok(accdma_send(q, peer, tag, key, 0, len, NULL, 0, &t), "send");
	else
		ok(accdma_recv(q, peer, tag, key, 0, len, NULL, 0, &t), "recv");
	ok(accdma_wait(w, t, ms, &st), "wait");
	return st;
}

static int inc8(void *p)
{
	uint8_t *b = p;

	for (int i = 0; i < 8; i++)
		b[i]++;
	return 0;
}

/* Rank 1 receives 8 bytes, adds 1 to each in an exec chained on the recv,
 * and sends them back chained on the exec, waiting only for the send. */
static void chain(accdma_world *w, accdma_queue *q, accdma_key small, uint8_t *s)
{
	accdma_token t[3];
	enum accdma_status st;

	if (rank == 0) {
		memset(s, 41, 8);
		if (xfer(w, q, 1, 1, 4, small, 8, 10000) != ACCDMA_OK ||
		    xfer(w, q, 0, 1, 5, small, 8, 10000) != ACCDMA_OK)
			die("chain: rank 0's ops failed");
		for (int i = 0; i < 8; i++)
			if (s[i] != 42)
				die("chain: got %d, not 42", s[i]);
		return;
	}
	ok(accdma_recv(q, 0, 4, small, 0, 8, NULL, 0, &t[0]), "recv");
	ok(accdma_exec(q, inc8, s, &t[0], 1, &t[1]), "exec");
	ok(accdma_send(q, 0, 5, small, 0, 8, &t[1], 1, &t[2]), "send");
	ok(accdma_release(w, t[0]), "release");
	ok(accdma_release(w, t[1]), "release");
	ok(accdma_wait(w, t[2], 10000, &st), "wait");
	if (st != ACCDMA_OK)
		die("chain: the send ended %s", accdma_status_str(st));
}

static int run_pair(accdma_world *w, accdma_queue *q, int rounds)
{
	int peer = 1 - rank;
	accdma_key small, big;
	double *lat = calloc((size_t)rounds, sizeof(*lat));

	ok(accdma_mem_alloc(w, rank, 64, &small), "mem_alloc");
	ok(accdma_mem_alloc(w, rank, BIG, &big), "mem_alloc");
	uint8_t *s = accdma_mem_ptr(w, rank, small, NULL), *b = accdma_mem_ptr(w, rank, big, NULL);
	for (int i = 0; i < rounds; i++) {
		double t0 = now_us();

		memset(s, rank ? 0 : i & 0xff, 8);
		if (xfer(w, q, rank == 0, peer, 1, small, 8, 10000) != ACCDMA_OK ||
		    xfer(w, q, rank == 1, peer, 1, small, 8, 10000) != ACCDMA_OK)
			die("round %d failed", i);
		if (s[7] != (i & 0xff))
			die("round %d: got %d", i, s[7]);
		lat[i] = now_us() - t0;
	}
	qsort(lat, (size_t)rounds, sizeof(*lat), cmp_double);
	if (rank == 0)
		printf("VMBENCH kmod-pair round8-%s%s%s %.1f us (median of %d)\n",
		       getenv("ACCDMA_TRANSPORT"), getenv("KMOD_PAIR_NOTE") ? "-" : "",
		       getenv("KMOD_PAIR_NOTE") ?: "", lat[rounds / 2], rounds);
	/* 1 MiB each way: a rendezvous, the receiver's engine copying */
	for (int dir = 0; dir < 2; dir++) {
		int sender = dir;

		if (rank == sender)
			for (uint32_t i = 0; i < BIG; i++)
				b[i] = (uint8_t)(i * 7 + dir);
		else
			memset(b, 0, BIG);
		if (xfer(w, q, rank == sender, peer, 2, big, BIG, 20000) != ACCDMA_OK)
			die("1 MiB, direction %d failed", dir);
		if (rank != sender)
			for (uint32_t i = 0; i < BIG; i++)
				if (b[i] != (uint8_t)(i * 7 + dir))
					die("1 MiB, direction %d: byte %u wrong", dir, i);
	}
	chain(w, q, small, s);
	/* a forked child has no mapping: its read faults (a shm segment, a
	 * shared memfd mapping, is inherited) */
	if (rank == 0 && !strcmp(getenv("ACCDMA_TRANSPORT"), "kmod")) {
		pid_t c = fork();
		int ws;

		if (c == 0) {
			volatile uint8_t x = b[0];

			(void)x;
			_exit(0);
		}
		waitpid(c, &ws, 0);
		if (!WIFSIGNALED(ws) || WTERMSIG(ws) != SIGSEGV)
			die("a forked child read device memory (status %#x)", ws);
	}
	free(lat);
	return 0;
}

static int run_kill(accdma_world *w, accdma_queue *q)
{
	accdma_key big;
	accdma_token t;
	enum accdma_status st;

	ok(accdma_mem_alloc(w, rank, BIG, &big), "mem_alloc");
	if (rank == 0) {
		/* mid-transfer: a send nobody receives, then death */
		ok(accdma_send(q, 1, 8, big, 0, BIG, NULL, 0, &t), "send");
		usleep(200000);
		raise(SIGKILL);
	}
	ok(accdma_recv(q, 0, 9, big, 0, BIG, NULL, 0, &t), "recv");
	ok(accdma_wait(w, t, 20000, &st), "wait for PEER_LOST");
	if (st != ACCDMA_ST_PEER_LOST)
		die("recv ended %s, not PEER_LOST", accdma_status_str(st));
	printf("kmod-pair: rank 1's recv completed %s\n", accdma_status_str(st));
	return 0;
}

/* Every writable mapping of /dev/accdma in this process, filled with junk. */
static void scribble(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	uint64_t x = 0x9e3779b97f4a7c15ull;
	int n = 0;

	if (!f)
		die("no /proc/self/maps");
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		char perm[8];

		if (!strstr(line, "/dev/accdma") || sscanf(line, "%lx-%lx %7s", &lo, &hi, perm) != 3 ||
		    perm[1] != 'w')
			continue;
		for (uint64_t *p = (uint64_t *)lo; p < (uint64_t *)hi; p++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			*p = x;
		}
		n++;
	}
	fclose(f);
	fprintf(stderr, "kmod-pair[0]: scribbled over %d mappings\n", n);
}

static int run_scribble(accdma_world *w, accdma_queue *q)
{
	accdma_key k;
	enum accdma_status st;

	ok(accdma_mem_alloc(w, rank, 4096, &k), "mem_alloc");
	if (rank == 0)
		scribble();
	/* ops may fail either way: only the ending matters */
	for (int i = 0; i < 50; i++) {
		st = xfer(w, q, (i + rank) % 2, 1 - rank, 3, k, 8 + (i % 2) * 2048, 200);
		(void)st;
	}
	return 0;
}

static volatile sig_atomic_t alarms;

static void on_alarm(int sig)
{
	(void)sig;
	alarms++;
}

/* SIGALRM every millisecond from now on, with SA_RESTART as signal() sets
 * it: what the module restarts must not repeat what it did (CALL's answer). */
static void alarm_every_ms(void)
{
	struct sigaction sa = { .sa_handler = on_alarm, .sa_flags = SA_RESTART };
	struct itimerval it = { { 0, 1000 }, { 0, 1000 } };

	sigaction(SIGALRM, &sa, NULL);
	setitimer(ITIMER_REAL, &it, NULL);
}

static int rank_main(const char *mode, int arg)
{
	struct accdma_world_opts o;
	accdma_world *w;
	accdma_queue *q = NULL;
	int rc = 0;

	accdma_world_opts_init(&o);
	o.num_devices = 2;
	o.mem_size = 4u << 20;
	ok(accdma_world_open(&o, &w), "world_open");
	ok(accdma_queue_get(w, rank, 0, &q), "queue_get");
	if (!strcmp(mode, "pair")) {
		rc = run_pair(w, q, arg > 0 ? arg : 200);
	} else if (!strcmp(mode, "signal")) {
		alarm_every_ms();
		rc = run_pair(w, q, arg > 0 ? arg : 200);
		printf("kmod-pair[%d]: %d alarms during the pair\n", rank, (int)alarms);
		if (!alarms)
			die("no alarm came");
	}
	else if (!strcmp(mode, "kill"))
		rc = run_kill(w, q);
	else if (!strcmp(mode, "scribble"))
		rc = run_scribble(w, q);
	else if (!strcmp(mode, "hold"))
		sleep((unsigned)arg);
	/* a scribbled world may refuse to close cleanly: the process's exit is the close */
	if (strcmp(mode, "scribble"))
		ok(accdma_world_close(w), "world_close");
	return rc;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "pair";
	int arg = argc > 2 ? atoi(argv[2]) : 0, bad = 0;
	pid_t pid[2];
	char port[16];

	snprintf(port, sizeof(port), "%d", 20000 + (int)(getpid() % 20000));
	for (int r = 0; r < 2; r++) {
		pid[r] = fork();
		if (pid[r] < 0)
			die("fork");
		if (pid[r] == 0) {
			char rs[4];

			rank = r;
			snprintf(rs, sizeof(rs), "%d", r);
			setenv("RANK", rs, 1);
			setenv("WORLD_SIZE", "2", 1);
			setenv("MASTER_PORT", port, 1);
			setenv("ACCDMA_TRANSPORT", getenv("KMOD_PAIR_TRANSPORT") ?: "kmod", 1);
			exit(rank_main(mode, arg));
		}
	}
	for (int r = 0; r < 2; r++) {
		int ws, want_kill = !strcmp(mode, "kill") && r == 0;

		waitpid(pid[r], &ws, 0);
		if (want_kill ? !(WIFSIGNALED(ws) && WTERMSIG(ws) == SIGKILL)
			      : !strcmp(mode, "scribble") ? (r == 1 && !WIFEXITED(ws))
							  : !(WIFEXITED(ws) && !WEXITSTATUS(ws))) {
			fprintf(stderr, "kmod-pair: rank %d ended with status %#x\n", r, ws);
			bad = 1;
		}
	}
	printf("kmod-pair %s: %s\n", mode, bad ? "FAILED" : "ok");
	return bad;
}
