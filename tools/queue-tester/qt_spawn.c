/* SPDX-License-Identifier: MIT */
/*
 * qt_spawn.c - the launcher: queue-tester starts the processes of one shm
 * world itself when no launcher did (qt_spawn(), declared in qt_ctl.h), as
 * accdma-run would, and collects rank 0's results and every rank's status.
 */
#include "qt_ctl.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

/* A loopback TCP socket bound to a free port, held while the ranks run so
 * that no other launcher is handed the same port (the rendezvous is named after it). */
static int hold_port(int *port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    getsockname(fd, (struct sockaddr *)&sa, &len)) {
		int rc = -errno;

		close(fd);
		return rc;
	}
	*port = ntohs(sa.sin_port);
	return fd;
}

static int status_code(int st)
{
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	if (WIFSIGNALED(st))
		return 128 + WTERMSIG(st);
	return 1;
}

static void setenv_int(const char *name, int v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%d", v);
	setenv(name, buf, 1);
}

/**
 * qt_spawn() - run @argv as @nprocs processes of one shm world.
 * @path/@argv: the program. @nprocs: processes. @result_fd: rank 0's result descriptor.
 * @res: filled.
 * Return: 0, or a negative errno if nothing could be started.
 */
int qt_spawn(const char *path, char *const argv[], int nprocs, int result_fd,
	     struct qt_spawn_res *res)
{
	pid_t *pids = calloc((size_t)nprocs, sizeof(*pids));
	int pfd[2], port = 0, hold, live = 0;
	pid_t me = getpid();
	int64_t kill_at = 0;
	size_t cap = 0;
	int eof = 0;

	memset(res, 0, sizeof(*res));
	res->failed_rank = -1;
	if (!pids)
		return -ENOMEM;
	hold = hold_port(&port);
	if (hold < 0) {
		free(pids);
		return hold;
	}
	if (pipe2(pfd, O_CLOEXEC)) {
		int rc = -errno;

		close(hold);
		free(pids);
		return rc;
	}
	fflush(stdout);
	fflush(stderr);
	for (int r = 0; r < nprocs; r++) {
		pid_t pid = fork();

		if (pid < 0) {
			res->failed_rank = r;
			res->status = 1;
			fprintf(stderr, "queue-tester: fork: %s\n", strerror(errno));
			break;
		}
		if (pid == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			if (getppid() != me)
				_exit(127);
			setenv_int("RANK", r);
			setenv_int("LOCAL_RANK", r);
			setenv_int("WORLD_SIZE", nprocs);
			setenv_int("LOCAL_WORLD_SIZE", nprocs);
			setenv("GROUP_RANK", "0", 1);
			setenv("MASTER_ADDR", "127.0.0.1", 1);
			setenv_int("MASTER_PORT", port);
			setenv("ACCDMA_TRANSPORT", "shm", 1);
			setenv("ACCDMA_LOCAL_DEVICES", "1", 1);
			unsetenv("ACCDMA_NUM_DEVICES");
			/* many (sanitized) processes may start slowly on a busy machine */
			setenv("ACCDMA_PEER_TIMEOUT_MS", "30000", 0);
			if (r == 0) {
				if (pfd[1] == result_fd)
					fcntl(pfd[1], F_SETFD, 0);
				else if (dup2(pfd[1], result_fd) < 0)
					_exit(127);
			}
			execv(path, argv);
			fprintf(stderr, "queue-tester: cannot run %s: %s\n", path, strerror(errno));
			_exit(127);
		}
		pids[r] = pid;
		live++;
	}
	close(pfd[1]);
	fcntl(pfd[0], F_SETFL, O_NONBLOCK);
	if (res->failed_rank >= 0) {
		for (int r = 0; r < nprocs; r++)
			if (pids[r] > 0)
				kill(pids[r], SIGKILL);
	}
	while (live > 0 || !eof) {
		struct pollfd p = { .fd = eof ? -1 : pfd[0], .events = POLLIN };
		int st;
		pid_t pid;

		poll(&p, 1, 20);
		while (!eof) {
			ssize_t n;

			if (res->len + 4096 > cap) {
				char *nb = realloc(res->blob, cap ? cap * 2 : 8192);

				if (!nb)
					break;
				res->blob = nb;
				cap = cap ? cap * 2 : 8192;
			}
			n = read(pfd[0], res->blob + res->len, cap - res->len);
			if (n > 0) {
				res->len += (size_t)n;
				continue;
			}
			if (n == 0)
				eof = 1;
			else if (errno == EINTR)
				continue;
			break;
		}
		while (live > 0 && (pid = waitpid(-1, &st, WNOHANG)) > 0) {
			for (int r = 0; r < nprocs; r++) {
				if (pids[r] != pid)
					continue;
				pids[r] = 0;
				live--;
				if (status_code(st) != 0 && res->failed_rank < 0) {
					res->failed_rank = r;
					res->status = status_code(st);
					for (int k = 0; k < nprocs; k++)
						if (pids[k] > 0)
							kill(pids[k], SIGTERM);
					kill_at = qt_ctl_now_ms() + 5000;
				}
			}
		}
		if (kill_at && qt_ctl_now_ms() >= kill_at) {
			for (int k = 0; k < nprocs; k++)
				if (pids[k] > 0)
					kill(pids[k], SIGKILL);
			kill_at = 0;
		}
		if (live == 0 && !eof && p.revents == 0) {
			/* every rank is gone: whatever is in the pipe has been read */
			eof = 1;
		}
	}
	close(pfd[0]);
	close(hold);
	free(pids);
	return 0;
}
