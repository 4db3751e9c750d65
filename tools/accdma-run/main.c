// SPDX-License-Identifier: MIT
/*
 * accdma-run - start one process per device on this host, as torchrun does.
 *
 *   accdma-run -n N [-p PORT] [--grace SEC] [--bind core|none] [--] PROG [ARGS...]
 *
 * Starts N copies of PROG with RANK, LOCAL_RANK, WORLD_SIZE,
 * LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR, MASTER_PORT (a free port unless
 * -p), ACCDMA_BOOT_PORT (another free port, for the verbs join) and
 * ACCDMA_TRANSPORT=shm (the last two unless already set) in their environment.
 * SIGINT, SIGTERM and SIGHUP are forwarded to every rank. When a rank fails
 * (non-zero exit or a signal), the others get SIGTERM, then SIGKILL after
 * --grace seconds (default 5), and accdma-run exits with the failed rank's
 * status (128 + signal if it was killed). If the launcher itself dies, the
 * ranks get SIGKILL (PR_SET_PDEATHSIG). Exits 0 once every rank exited 0.
 *
 * --bind core (the default when there are no more ranks than CPUs the
 * launcher may use) pins rank r, with its engine threads, to the r-th of
 * those CPUs, as mpirun does by default for small jobs: two ranks that the
 * scheduler puts on one CPU for a while take turns through every hand-off,
 * which turns a sub-microsecond round into a time slice. --bind none leaves
 * placement to the scheduler.
 */
#include <errno.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_RANKS 1024

static pid_t pids[MAX_RANKS];
static int nranks;
static volatile sig_atomic_t got_signal;

static void kill_all(int sig)
{
	for (int i = 0; i < nranks; i++)
		if (pids[i] > 0)
			kill(pids[i], sig);
}

static void forward(int sig)
{
	got_signal = sig;
	kill_all(sig);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: accdma-run -n N [-p PORT] [--grace SEC] [--bind core|none] [--] PROG [ARGS...]\n"
		   "  Start N processes of PROG, one per device, with RANK, LOCAL_RANK, WORLD_SIZE,\n"
		   "  LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT, ACCDMA_BOOT_PORT (verbs) and\n"
		   "  ACCDMA_TRANSPORT=shm set (the last two unless already set).\n"
		   "  Exits with the status of the first rank that fails (the others are stopped).\n"
		   "  --bind core: rank r runs on the r-th usable CPU (default when N <= CPUs);\n"
		   "  --bind none: the scheduler places the ranks (default when N > CPUs).\n");
}

static int parse_int(const char *s, int min, int max, int *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || !*s || *end || v < min || v > max)
		return -1;
	*out = (int)v;
	return 0;
}

static void setenv_int(const char *name, int v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%d", v);
	setenv(name, buf, 1);
}

/* A TCP port free on @addr right now, or -1. The socket that found it stays
 * bound in *@hold until the caller closes it, so a second call finds another. */
static int free_port(uint32_t addr, int *hold)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(addr) };
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	*hold = fd;
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || getsockname(fd, (struct sockaddr *)&sa, &len))
		return -1;
	return ntohs(sa.sin_port);
}

/*
 * MASTER_PORT (unless -p): a free port (the shm transport names its
 * rendezvous after it; a program may also use it for its own TCP store).
 * ACCDMA_BOOT_PORT (unless set): another, free on every address, for the
 * verbs join to listen on. Its default, MASTER_PORT + 1, may be the local
 * port of someone's connection (or its TIME_WAIT), which fails the listen.
 */
static int pick_ports(int *port)
{
	int hold[2] = { -1, -1 }, boot = 0, rc = 0;

	if (!*port)
		*port = free_port(INADDR_LOOPBACK, &hold[0]);
	if (*port > 0 && !getenv("ACCDMA_BOOT_PORT")) {
		boot = free_port(INADDR_ANY, &hold[1]);
		if (boot == *port) { /* -p named a port that was free: keep it, look again */
			int again;

			boot = free_port(INADDR_ANY, &again);
			if (again >= 0)
				close(again);
		}
		if (boot > 0)
			setenv_int("ACCDMA_BOOT_PORT", boot);
	}
	if (*port <= 0 || boot < 0)
		rc = -1;
	for (int k = 0; k < 2; k++)
		if (hold[k] >= 0)
			close(hold[k]);
	return rc;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static int status_code(int st)
{
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	if (WIFSIGNALED(st))
		return 128 + WTERMSIG(st);
	return 1;
}

/* The CPUs this launcher may use, in order; returns how many (0 on error). */
static int usable_cpus(cpu_set_t *set, int *cpus, int max)
{
	int k = 0;

	if (sched_getaffinity(0, sizeof(*set), set))
		return 0;
	for (int c = 0; c < CPU_SETSIZE && k < max; c++)
		if (CPU_ISSET(c, set))
			cpus[k++] = c;
	return k;
}

int main(int argc, char **argv)
{
	int n = 0, port = 0, grace = 5, i, first_fail = -1, fail_code = 0, live, bind = -1, ncpu;
	static int cpus[CPU_SETSIZE];
	cpu_set_t set;
	struct sigaction sa;
	uint64_t kill_at = 0;
	pid_t me = getpid();

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--")) {
			i++;
			break;
		}
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return 0;
		}
		if ((!strcmp(argv[i], "-n") || !strcmp(argv[i], "--nproc")) && i + 1 < argc) {
			if (parse_int(argv[++i], 1, MAX_RANKS, &n))
				goto bad;
		} else if ((!strcmp(argv[i], "-p") || !strcmp(argv[i], "--port")) && i + 1 < argc) {
			if (parse_int(argv[++i], 1, 65535, &port))
				goto bad;
		} else if (!strcmp(argv[i], "--grace") && i + 1 < argc) {
			if (parse_int(argv[++i], 0, 3600, &grace))
				goto bad;
		} else if (!strcmp(argv[i], "--bind") && i + 1 < argc) {
			i++;
			if (!strcmp(argv[i], "core"))
				bind = 1;
			else if (!strcmp(argv[i], "none"))
				bind = 0;
			else
				goto bad;
		} else if (argv[i][0] == '-') {
			goto bad;
		} else {
			break;
		}
	}
	if (n < 1 || i >= argc)
		goto bad;
	ncpu = usable_cpus(&set, cpus, CPU_SETSIZE);
	if (bind < 0)
		bind = ncpu > 0 && n <= ncpu;
	if (bind && n > ncpu) {
		fprintf(stderr, "accdma-run: --bind core: %d ranks but %d usable CPUs\n", n, ncpu);
		return 2;
	}
	if (pick_ports(&port)) {
		fprintf(stderr, "accdma-run: no free port: %s\n", strerror(errno));
		return 1;
	}

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = forward;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);

	setenv_int("WORLD_SIZE", n);
	setenv_int("LOCAL_WORLD_SIZE", n);
	setenv("GROUP_RANK", "0", 1);
	setenv("MASTER_ADDR", "127.0.0.1", 1);
	setenv_int("MASTER_PORT", port);
	setenv("ACCDMA_TRANSPORT", "shm", 0);
	nranks = n;
	for (int r = 0; r < n; r++) {
		pid_t pid;

		setenv_int("RANK", r);
		setenv_int("LOCAL_RANK", r);
		pid = fork();
		if (pid < 0) {
			fprintf(stderr, "accdma-run: fork: %s\n", strerror(errno));
			kill_all(SIGKILL);
			first_fail = r;
			fail_code = 1;
			break;
		}
		if (pid == 0) {
			signal(SIGINT, SIG_DFL);
			signal(SIGTERM, SIG_DFL);
			signal(SIGHUP, SIG_DFL);
			/* the launcher's death takes the ranks with it */
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			if (getppid() != me)
				_exit(127);
			if (bind) {
				CPU_ZERO(&set);
				CPU_SET(cpus[r], &set);
				if (sched_setaffinity(0, sizeof(set), &set))
					fprintf(stderr, "accdma-run: rank %d: cannot bind to CPU %d: %s\n", r,
						cpus[r], strerror(errno));
			}
			execvp(argv[i], argv + i);
			fprintf(stderr, "accdma-run: cannot run %s: %s\n", argv[i], strerror(errno));
			_exit(127);
		}
		pids[r] = pid;
	}

	for (;;) {
		int st;
		pid_t pid = waitpid(-1, &st, WNOHANG);

		if (pid > 0) {
			for (int r = 0; r < n; r++) {
				if (pids[r] != pid)
					continue;
				pids[r] = 0;
				if (status_code(st) != 0 && first_fail < 0) {
					first_fail = r;
					fail_code = status_code(st);
					fprintf(stderr,
						"accdma-run: rank %d (pid %d) %s %d; stopping the other ranks\n",
						r, (int)pid, WIFSIGNALED(st) ? "was killed by signal" : "exited with status",
						WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
					kill_all(SIGTERM);
					kill_at = now_ms() + (uint64_t)grace * 1000u;
				}
			}
			continue;
		}
		if (pid < 0 && errno == ECHILD)
			break;
		for (live = 0, i = 0; i < n; i++)
			live += pids[i] > 0;
		if (!live)
			break;
		if (kill_at && now_ms() >= kill_at) {
			fprintf(stderr, "accdma-run: %d rank(s) still running after %d s: killing them\n",
				live, grace);
			kill_all(SIGKILL);
			kill_at = 0;
		}
		usleep(10000);
	}
	if (first_fail >= 0)
		return fail_code;
	if (got_signal)
		return 128 + got_signal;
	return 0;
bad:
	usage(stderr);
	return 2;
}
