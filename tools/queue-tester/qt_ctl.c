/* SPDX-License-Identifier: MIT */
/* qt_ctl.c - the control channel between the processes of a shm world (the launcher: qt_spawn.c). */
#include "qt_ctl.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define QT_CTL_MAGIC 0x71746331u /* "qtc1" */
#define QT_CTL_MAX_MSG (64u << 20)

/** qt_ctl_qt_ctl_now_ms() - the monotonic clock in milliseconds. */
int64_t qt_ctl_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int env_int(const char *name, long lo, long hi, int *out)
{
	const char *v = getenv(name);
	char *end;
	long n;

	if (!v || !*v)
		return 0;
	errno = 0;
	n = strtol(v, &end, 10);
	if (errno || *end || n < lo || n > hi)
		return -1;
	*out = (int)n;
	return 1;
}

/**
 * qt_ctl_from_env() - is this process one rank of a launched world?
 * @rank/@nprocs/@local_devices: filled.
 * Return: 1 if launched, 0 if not, -1 if the variables are invalid.
 */
int qt_ctl_from_env(int *rank, int *nprocs, int *local_devices)
{
	static const char *const ranks[] = { "RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", NULL };
	static const char *const sizes[] = { "WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", NULL };
	int r = -1, n = -1, rc;

	*local_devices = 1;
	if (env_int("ACCDMA_LOCAL_DEVICES", 1, 1024, local_devices) < 0)
		return -1;
	for (int k = 0; ranks[k] && r < 0; k++)
		if ((rc = env_int(ranks[k], 0, 1023, &r)) < 0)
			return -1;
	for (int k = 0; sizes[k] && n < 0; k++)
		if ((rc = env_int(sizes[k], 1, 1024, &n)) < 0)
			return -1;
	if (r < 0 && n < 0)
		return 0;
	if (r < 0 || n < 1 || r >= n || (long)n * *local_devices > 1024)
		return -1;
	*rank = r;
	*nprocs = n;
	return 1;
}

/* The socket name: like the library's rendezvous, in a namespace of its own. */
static int ctl_addr(struct sockaddr_un *sa, socklen_t *len, char *where, size_t wlen)
{
	const char *port = getenv("MASTER_PORT"), *job = getenv("PMIX_NAMESPACE");
	const char *sj = getenv("SLURM_JOB_ID");
	char key[128];
	int n;

	if (!job || !*job)
		job = getenv("OMPI_MCA_ess_base_jobid");
	if (port && *port)
		snprintf(key, sizeof(key), "port-%s", port);
	else if (job && *job)
		snprintf(key, sizeof(key), "job-%s", job);
	else if (sj && *sj)
		snprintf(key, sizeof(key), "slurm-%s.%s", sj,
			 getenv("SLURM_STEP_ID") ? getenv("SLURM_STEP_ID") : "0");
	else
		return -EINVAL;
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	n = snprintf(sa->sun_path + 1, sizeof(sa->sun_path) - 1, "accdma-qt.%u.%s",
		     (unsigned)geteuid(), key);
	if (n < 0 || (size_t)n >= sizeof(sa->sun_path) - 1)
		return -ENAMETOOLONG;
	*len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
	snprintf(where, wlen, "@%s", sa->sun_path + 1);
	return 0;
}

/* Wait until @fd is ready for @events; @deadline < 0: forever. Return 0, -ETIMEDOUT or -errno. */
static int wait_fd(int fd, short events, int64_t deadline)
{
	for (;;) {
		struct pollfd p = { .fd = fd, .events = events };
		int64_t left = deadline < 0 ? -1 : deadline - qt_ctl_now_ms();
		int rc;

		if (deadline >= 0 && left <= 0)
			return -ETIMEDOUT;
		rc = poll(&p, 1, left < 0 ? 1000 : (int)(left > 1000 ? 1000 : left));
		if (rc < 0 && errno != EINTR)
			return -errno;
		if (rc > 0)
			return 0;
	}
}

static int read_full(int fd, void *buf, size_t len, int64_t deadline)
{
	char *p = buf;

	while (len) {
		ssize_t n = read(fd, p, len);

		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n == 0)
			return -EPIPE;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN)
			return -errno;
		n = wait_fd(fd, POLLIN, deadline);
		if (n)
			return (int)n;
	}
	return 0;
}

static int write_full(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			int rc = wait_fd(fd, POLLOUT, -1);

			if (rc)
				return rc;
			continue;
		}
		return n < 0 ? -errno : -EPIPE;
	}
	return 0;
}

static int send_msg(int fd, const void *buf, uint32_t len)
{
	int rc = write_full(fd, &len, sizeof(len));

	return rc ? rc : write_full(fd, buf, len);
}

/* Read one message into a malloc'd buffer. */
static int recv_msg(int fd, char **buf, uint32_t *len, int64_t deadline)
{
	int rc = read_full(fd, len, sizeof(*len), deadline);

	if (rc)
		return rc;
	if (*len > QT_CTL_MAX_MSG)
		return -EPROTO;
	*buf = malloc(*len ? *len : 1);
	if (!*buf)
		return -ENOMEM;
	rc = read_full(fd, *buf, *len, deadline);
	if (rc) {
		free(*buf);
		*buf = NULL;
	}
	return rc;
}

static int peer_uid_ok(int fd)
{
	struct ucred cr;
	socklen_t l = sizeof(cr);

	return getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &l) == 0 && cr.uid == geteuid();
}

struct hello {
	uint32_t magic;
	int32_t rank;
	int32_t nprocs;
};

static int ctl_master(struct qt_ctl *c, const struct sockaddr_un *sa, socklen_t salen,
		      const char *where, int64_t deadline, char *err, size_t errlen)
{
	int lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0), joined = 1, rc;

	if (lfd < 0)
		return -errno;
	while (bind(lfd, (const struct sockaddr *)sa, salen)) {
		rc = -errno;
		if (rc != -EADDRINUSE || qt_ctl_now_ms() >= deadline) {
			snprintf(err, errlen, "cannot listen on %s: %s%s", where, strerror(-rc),
				 rc == -EADDRINUSE ? " (another queue-tester of this user uses this "
						     "MASTER_PORT)" : "");
			close(lfd);
			return rc;
		}
		poll(NULL, 0, 20);
	}
	if (listen(lfd, 1024)) {
		rc = -errno;
		close(lfd);
		return rc;
	}
	while (joined < c->nprocs) {
		struct hello h;
		int fd;

		rc = wait_fd(lfd, POLLIN, deadline);
		if (rc == -ETIMEDOUT) {
			size_t n = (size_t)snprintf(err, errlen, "timed out waiting for rank(s)");

			for (int r = 1; r < c->nprocs && n < errlen; r++)
				if (c->fds[r] < 0)
					n += (size_t)snprintf(err + n, errlen - n, " %d", r);
			if (n < errlen)
				snprintf(err + n, errlen - n, " to join %s", where);
			close(lfd);
			return rc;
		}
		if (rc) {
			close(lfd);
			return rc;
		}
		fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd < 0)
			continue;
		/* a connection that says nothing within a second is dropped */
		if (!peer_uid_ok(fd) || read_full(fd, &h, sizeof(h), qt_ctl_now_ms() + 1000) ||
		    h.magic != QT_CTL_MAGIC || h.rank < 1 || h.rank >= c->nprocs ||
		    c->fds[h.rank] >= 0 || h.nprocs != c->nprocs) {
			int32_t no = -1;

			write_full(fd, &no, sizeof(no));
			close(fd);
			continue;
		}
		c->fds[h.rank] = fd;
		joined++;
	}
	close(lfd);
	for (int r = 1; r < c->nprocs; r++) {
		int32_t ok = 0;

		if (write_full(c->fds[r], &ok, sizeof(ok))) {
			snprintf(err, errlen, "rank %d went away while joining", r);
			return -EPIPE;
		}
	}
	return 0;
}

static int ctl_worker(struct qt_ctl *c, const struct sockaddr_un *sa, socklen_t salen,
		      const char *where, int64_t deadline, char *err, size_t errlen)
{
	struct hello h = { QT_CTL_MAGIC, c->rank, c->nprocs };
	int32_t ok = -1;
	int fd, rc;

	for (;;) {
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return -errno;
		if (connect(fd, (const struct sockaddr *)sa, salen) == 0)
			break;
		rc = -errno;
		close(fd);
		if ((rc != -ECONNREFUSED && rc != -ENOENT && rc != -EAGAIN && rc != -EINTR) ||
		    qt_ctl_now_ms() >= deadline) {
			snprintf(err, errlen, "%s waiting for rank 0 at %s",
				 rc == -ECONNREFUSED ? "timed out" : strerror(-rc), where);
			return rc == -ECONNREFUSED ? -ETIMEDOUT : rc;
		}
		poll(NULL, 0, 20);
	}
	if (!peer_uid_ok(fd)) {
		snprintf(err, errlen, "the process at %s belongs to another user", where);
		close(fd);
		return -EACCES;
	}
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	rc = write_full(fd, &h, sizeof(h));
	if (!rc)
		rc = read_full(fd, &ok, sizeof(ok), -1);
	if (rc || ok != 0) {
		snprintf(err, errlen, "rank 0 at %s refused rank %d of %d (another run with this "
			 "MASTER_PORT, or a different WORLD_SIZE?)", where, c->rank, c->nprocs);
		close(fd);
		return rc ? rc : -EPROTO;
	}
	c->fd = fd;
	return 0;
}

/**
 * qt_ctl_open() - join the control channel.
 * @c: filled. @rank/@nprocs/@local_devices: this process. @timeout_ms: join timeout.
 * @err/@errlen: a message on failure.
 * Return: 0 or a negative errno.
 */
int qt_ctl_open(struct qt_ctl *c, int rank, int nprocs, int local_devices, int64_t timeout_ms,
		char *err, size_t errlen)
{
	struct sockaddr_un sa;
	socklen_t salen;
	char where[sizeof(sa.sun_path) + 2];
	int64_t deadline = qt_ctl_now_ms() + timeout_ms;
	int rc;

	memset(c, 0, sizeof(*c));
	c->rank = rank;
	c->nprocs = nprocs;
	c->local_devices = local_devices;
	c->fd = -1;
	if (nprocs == 1)
		return 0;
	if (ctl_addr(&sa, &salen, where, sizeof(where))) {
		snprintf(err, errlen, "no rendezvous: set MASTER_PORT (accdma-run and torchrun do)");
		return -EINVAL;
	}
	if (rank == 0) {
		c->fds = malloc(sizeof(int) * (size_t)nprocs);
		if (!c->fds)
			return -ENOMEM;
		for (int r = 0; r < nprocs; r++)
			c->fds[r] = -1;
		rc = ctl_master(c, &sa, salen, where, deadline, err, errlen);
	} else {
		rc = ctl_worker(c, &sa, salen, where, deadline, err, errlen);
	}
	if (rc)
		qt_ctl_close(c);
	return rc;
}

static void ctl_fatal(const struct qt_ctl *c, int peer, int rc) __attribute__((noreturn));

static void ctl_fatal(const struct qt_ctl *c, int peer, int rc)
{
	fflush(stdout);
	fprintf(stderr, "queue-tester: rank %d: lost the control connection to rank %d (%s): "
		"it died or failed; giving up\n", c->rank, peer,
		rc == -EPIPE ? "closed" : strerror(-rc));
	exit(1);
}

/**
 * qt_ctl_allgather() - every rank contributes a blob; every rank gets all of them.
 * @c: the channel. @buf/@len: this rank's blob. @all/@lens: the result.
 */
void qt_ctl_allgather(struct qt_ctl *c, const void *buf, uint32_t len, char **all, uint32_t *lens)
{
	uint32_t n = c ? (uint32_t)c->nprocs : 1;
	char *msg = NULL;
	uint32_t mlen = 0;
	int rc;

	if (!c || c->nprocs == 1) {
		*all = malloc(len ? len : 1);
		if (!*all) {
			fprintf(stderr, "queue-tester: out of memory\n");
			exit(1);
		}
		if (len)
			memcpy(*all, buf, len);
		if (lens)
			lens[0] = len;
		return;
	}
	if (c->rank != 0) {
		rc = send_msg(c->fd, buf, len);
		if (!rc)
			rc = recv_msg(c->fd, &msg, &mlen, -1);
		if (rc)
			ctl_fatal(c, 0, rc);
	} else {
		char **parts = calloc(n, sizeof(*parts));
		uint32_t *plen = calloc(n, sizeof(*plen));
		size_t total = sizeof(uint32_t) * n;

		if (!parts || !plen)
			ctl_fatal(c, 0, -ENOMEM);
		plen[0] = len;
		for (uint32_t r = 1; r < n; r++) {
			rc = recv_msg(c->fds[r], &parts[r], &plen[r], -1);
			if (rc)
				ctl_fatal(c, (int)r, rc);
			total += plen[r];
		}
		total += len;
		if (total > QT_CTL_MAX_MSG)
			ctl_fatal(c, 0, -E2BIG);
		msg = malloc(total);
		if (!msg)
			ctl_fatal(c, 0, -ENOMEM);
		mlen = (uint32_t)total;
		memcpy(msg, plen, sizeof(uint32_t) * n);
		total = sizeof(uint32_t) * n;
		for (uint32_t r = 0; r < n; r++) {
			const void *p = r == 0 ? buf : parts[r];

			if (plen[r])
				memcpy(msg + total, p, plen[r]);
			total += plen[r];
			free(parts[r]);
		}
		free(parts);
		free(plen);
		for (uint32_t r = 1; r < n; r++) {
			rc = send_msg(c->fds[r], msg, mlen);
			if (rc)
				ctl_fatal(c, (int)r, rc);
		}
	}
	/* msg: n lengths, then the blobs */
	if (mlen < sizeof(uint32_t) * n)
		ctl_fatal(c, 0, -EPROTO);
	{
		uint32_t *l = malloc(sizeof(uint32_t) * n);
		size_t total = 0;

		if (!l)
			ctl_fatal(c, 0, -ENOMEM);
		memcpy(l, msg, sizeof(uint32_t) * n);
		for (uint32_t r = 0; r < n; r++)
			total += l[r];
		if (total != mlen - sizeof(uint32_t) * n)
			ctl_fatal(c, 0, -EPROTO);
		memmove(msg, msg + sizeof(uint32_t) * n, total);
		if (lens)
			memcpy(lens, l, sizeof(uint32_t) * n);
		free(l);
	}
	*all = msg;
}

/**
 * qt_ctl_barrier() - wait until every rank got here.
 * @c: the channel.
 */
void qt_ctl_barrier(struct qt_ctl *c)
{
	char *all;

	if (!c || c->nprocs == 1)
		return;
	qt_ctl_allgather(c, NULL, 0, &all, NULL);
	free(all);
}

/**
 * qt_ctl_close() - leave the channel.
 * @c: the channel.
 */
void qt_ctl_close(struct qt_ctl *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	if (c->fds) {
		for (int r = 0; r < c->nprocs; r++)
			if (c->fds[r] >= 0)
				close(c->fds[r]);
		free(c->fds);
		c->fds = NULL;
	}
}
