// SPDX-License-Identifier: MIT
/*
 * monitor.c - a thread per process of a shm world that notices peers' deaths.
 *
 * It holds a pidfd for every other process of the world (pids come from the
 * bootstrap, which took them from the kernel: SO_PEERCRED) and polls them; a
 * pidfd becomes readable the moment its process exits, kill -9 included.
 * The devices of a dead process are marked lost in the arena and this
 * process's engines are kicked: ops with those devices complete PEER_LOST.
 * Without pidfds (old kernels) it checks the pids every 100 ms instead.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "driver/internal.h"
#include "driver/shm/shm.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

#define MONITOR_POLL_MS 100

/* Fallback: has @pid exited (gone, or a zombie nobody reaped yet)? */
static int pid_gone(pid_t pid)
{
	char path[64], buf[256], *p;
	FILE *f;
	int gone = 0;

	if (kill(pid, 0) && errno == ESRCH)
		return 1;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	if (fgets(buf, sizeof(buf), f) && (p = strrchr(buf, ')')) && p[1] == ' ')
		gone = p[2] == 'Z' || p[2] == 'X';
	fclose(f);
	return gone;
}

static void *monitor_main(void *arg)
{
	struct accdma_world *w = arg;
	struct drv_shm *s = drv_shm(w);
	int n = s->nprocs, polling = 0;
	struct pollfd *pfd = calloc((size_t)n + 1, sizeof(*pfd));
	uint8_t *fallback = calloc((size_t)n, 1);

	if (!pfd || !fallback) {
		free(pfd);
		free(fallback);
		return NULL;
	}
	for (int i = 0; i < n; i++) {
		pfd[i].fd = -1;
		pfd[i].events = POLLIN;
		if (i == s->self)
			continue;
		pfd[i].fd = (int)syscall(SYS_pidfd_open, (pid_t)s->procs[i].pid, 0);
		if (pfd[i].fd < 0 && errno == ESRCH)
			drv_shm_mark_lost(w, i, Q_DEV_LOST_DIED);
		else if (pfd[i].fd < 0)
			fallback[i] = 1, polling = 1;
	}
	pfd[n].fd = s->monitor_efd;
	pfd[n].events = POLLIN;
	for (;;) {
		int rc = poll(pfd, (nfds_t)n + 1, polling ? MONITOR_POLL_MS : -1);

		if (rc < 0 && errno != EINTR)
			break;
		if (pfd[n].revents)
			break;
		for (int i = 0; i < n; i++) {
			if ((pfd[i].fd >= 0 && pfd[i].revents) ||
			    (fallback[i] && pid_gone((pid_t)s->procs[i].pid))) {
				drv_shm_mark_lost(w, i, Q_DEV_LOST_DIED);
				if (pfd[i].fd >= 0)
					close(pfd[i].fd);
				pfd[i].fd = -1;
				fallback[i] = 0;
			}
		}
	}
	for (int i = 0; i < n; i++)
		if (pfd[i].fd >= 0)
			close(pfd[i].fd);
	free(pfd);
	free(fallback);
	return NULL;
}

/**
 * drv_monitor_start() - start watching the world's other processes.
 * @w: an open shm world. Return: 0 or a negative errno.
 */
int drv_monitor_start(struct accdma_world *w)
{
	struct drv_shm *s = drv_shm(w);
	int rc;

	s->monitor_efd = eventfd(0, EFD_CLOEXEC);
	if (s->monitor_efd < 0)
		return -errno;
	rc = pthread_create(&s->monitor, NULL, monitor_main, w);
	if (rc)
		return -rc;
	s->monitor_started = 1;
	return 0;
}

/** drv_monitor_stop() - stop and join the monitor thread, if it runs. */
void drv_monitor_stop(struct accdma_world *w)
{
	struct drv_shm *s = drv_shm(w);
	uint64_t one = 1;

	if (s->monitor_started) {
		if (write(s->monitor_efd, &one, sizeof(one)) < 0) {
			/* an eventfd write of 1 cannot fail short of a bug; join anyway */
		}
		pthread_join(s->monitor, NULL);
		s->monitor_started = 0;
	}
	if (s->monitor_efd >= 0)
		close(s->monitor_efd);
	s->monitor_efd = -1;
}
