// SPDX-License-Identifier: MIT
/*
 * bootstrap.c - how the processes of a shm world find each other.
 *
 * The process that owns device 0 (the master) listens on an abstract unix
 * socket named after the user and the job's rendezvous (MASTER_PORT, or the
 * launcher's job id): "\0accdma.<uid>.port-<port>". Abstract names leave no
 * file behind, vanish with the process, and a unix socket can carry file
 * descriptors (SCM_RIGHTS) and tells each side who the other is
 * (SO_PEERCRED): a peer of another user is refused. Every message is one
 * SOCK_SEQPACKET datagram:
 *
 *   worker -> master  HELLO  its devices and the world's geometry
 *   master -> worker  SETUP  every process (devices, pid), then FDS: the
 *                            arena and each process's memory segment
 *   worker -> master  READY  once everything is mapped
 *   master -> worker  GO     once every worker is READY
 *   either way        FAIL   an errno and a message, instead of any of these
 *
 * (The messages and their checks: boot_msg.c.)
 *
 * Ranks may start in any order: workers retry connecting until the join
 * timeout (peer_timeout_ms). A rank that never comes fails everyone with
 * -ETIMEDOUT and a message naming the missing ranks.
 */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "driver/internal.h"
#include "driver/shm/boot_msg.h"
#include "driver/shm/shm.h"

static void say(const struct drv_boot *b, const char *fmt, ...)
{
	va_list ap;

	if (b->o->log_level < 1)
		return;
	va_start(ap, fmt);
	fputs("accdma: shm: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

/* The rendezvous name: MASTER_PORT, else a job id a launcher sets. */
static int rendezvous(const struct drv_boot *b, struct sockaddr_un *sa, socklen_t *len, char *key,
		      size_t keylen)
{
	const char *job = getenv("PMIX_NAMESPACE"), *sj = getenv("SLURM_JOB_ID");
	int n;

	if (!job || !*job)
		job = getenv("OMPI_MCA_ess_base_jobid");
	if (b->o->master_port > 0)
		snprintf(key, keylen, "port-%d", b->o->master_port);
	else if (job && *job)
		snprintf(key, keylen, "job-%s", job);
	else if (sj && *sj)
		snprintf(key, keylen, "slurm-%s.%s", sj,
			 getenv("SLURM_STEP_ID") ? getenv("SLURM_STEP_ID") : "0");
	else
		return -EINVAL;
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	n = snprintf(sa->sun_path + 1, sizeof(sa->sun_path) - 1, "accdma.%u.%s", (unsigned)geteuid(),
		     key);
	if (n < 0 || (size_t)n >= sizeof(sa->sun_path) - 1)
		return -ENAMETOOLONG;
	*len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
	return 0;
}

/* MASTER_ADDR, when given, must be an address of this host. */
static int addr_is_local(const char *addr)
{
	struct addrinfo hints = { .ai_socktype = SOCK_DGRAM, .ai_flags = AI_NUMERICSERV };
	struct addrinfo *res, *ai;
	int ok = 0;

	if (!addr || !*addr || !strcmp(addr, "localhost"))
		return 1;
	if (getaddrinfo(addr, "0", &hints, &res))
		return 0;
	for (ai = res; ai && !ok; ai = ai->ai_next) {
		int fd = socket(ai->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);

		if (fd < 0)
			continue;
		ok = bind(fd, ai->ai_addr, ai->ai_addrlen) == 0;
		close(fd);
	}
	freeaddrinfo(res);
	return ok;
}

/* A FAIL from the other side: print its text, return its errno. */
static int failed_by_peer(const struct drv_boot *b, const struct boot_buf *buf)
{
	int err = buf->u.fail.err;

	say(b, "%s", buf->u.fail.text);
	return err < 0 && err > -4096 ? err : -EPROTO;
}

static void hello_of(const struct drv_boot *b, struct boot_hello *h)
{
	memset(h, 0, sizeof(*h));
	h->version = BOOT_VERSION;
	h->first = b->first;
	h->count = b->count;
	h->ndev = b->o->num_devices;
	h->queues = b->o->queues;
	h->engines = b->o->engines;
	h->depth = b->o->queue_depth;
	h->mem_size = b->o->mem_size;
}

/* ---- master ------------------------------------------------------------ */

struct pending {
	int fd;
	pid_t pid;
};

/* Describe devices no process claimed, as "3, 5-7". */
static void missing_list(const uint8_t *have, int n, char *out, size_t size)
{
	size_t len = 0;

	out[0] = 0;
	for (int i = 0; i < n && len + 32 < size; i++) {
		int j = i;

		if (have[i])
			continue;
		while (j + 1 < n && !have[j + 1])
			j++;
		if (j > i)
			len += (size_t)snprintf(out + len, size - len, "%s%d-%d", len ? ", " : "", i, j);
		else
			len += (size_t)snprintf(out + len, size - len, "%s%d", len ? ", " : "", i);
		i = j;
	}
}

static int check_hello(const struct drv_boot *b, const struct boot_hello *h, const uint8_t *have,
		       char *why, size_t size)
{
	struct boot_hello mine;

	hello_of(b, &mine);
	if (h->version != BOOT_VERSION) {
		snprintf(why, size, "a process speaks bootstrap version %u, not %u", h->version,
			 BOOT_VERSION);
		return -EPROTO;
	}
	if (h->ndev != mine.ndev || h->queues != mine.queues || h->engines != mine.engines ||
	    h->depth != mine.depth || h->mem_size != mine.mem_size) {
		snprintf(why, size,
			 "rank %d opened the world with other options (devices %d/%d, queues %d/%d, "
			 "engines %d/%d, depth %u/%u, mem_size %llu/%llu; theirs/rank 0's)",
			 h->first, h->ndev, mine.ndev, h->queues, mine.queues, h->engines, mine.engines,
			 h->depth, mine.depth, (unsigned long long)h->mem_size,
			 (unsigned long long)mine.mem_size);
		return -EINVAL;
	}
	if (h->first < 0 || h->count < 1 || h->first >= mine.ndev || h->count > mine.ndev - h->first) {
		snprintf(why, size, "a process claims devices %d..%d of %d", h->first,
			 h->first + h->count - 1, mine.ndev);
		return -EINVAL;
	}
	for (int i = h->first; i < h->first + h->count; i++)
		if (have[i]) {
			snprintf(why, size, "rank %d joined twice (two processes with the same RANK?)", i);
			return -EINVAL;
		}
	return 0;
}

static int proc_cmp(const void *a, const void *b)
{
	return ((const struct drv_boot_proc *)a)->first - ((const struct drv_boot_proc *)b)->first;
}

static int master_fail_all(struct drv_boot *b, struct pending *pend, int npend, int err,
			   const char *text)
{
	say(b, "%s", text);
	for (int i = 0; i < npend; i++)
		boot_send_fail(pend[i].fd, err, text);
	return err;
}

static int master_gather(struct drv_boot *b, int lfd, uint64_t deadline)
{
	int ndev = b->o->num_devices, npend = 0, nprocs = 1, covered = b->count, rc = 0, fatal = 0;
	uint8_t *have = calloc((size_t)ndev, 1);
	struct pending *pend = calloc((size_t)ndev + 1, sizeof(*pend));
	struct drv_boot_proc *procs = calloc((size_t)ndev, sizeof(*procs));
	struct pollfd *pfd = calloc((size_t)ndev + 2, sizeof(*pfd));
	int *joined = calloc((size_t)ndev + 1, sizeof(int)); /* pend index -> 1 once it said HELLO */
	struct boot_buf *buf = malloc(sizeof(*buf));
	char text[400], why[300];

	if (!have || !pend || !procs || !pfd || !joined || !buf) {
		rc = -ENOMEM;
		goto out;
	}
	memset(have + b->first, 1, (size_t)b->count);
	procs[0] = (struct drv_boot_proc){ b->first, b->count, (int32_t)getpid(), -1 };
	while (covered < ndev) {
		int np = 0, prc;

		pfd[np++] = (struct pollfd){ .fd = lfd, .events = POLLIN };
		for (int i = 0; i < npend; i++)
			pfd[np++] = (struct pollfd){ .fd = joined[i] ? -1 : pend[i].fd, .events = POLLIN };
		prc = poll(pfd, (nfds_t)np, (int)(boot_ms_left(deadline) > 100000 ? 100000 : boot_ms_left(deadline)));
		if (prc < 0 && errno != EINTR) {
			rc = -errno;
			goto out;
		}
		if (prc == 0 && boot_ms_left(deadline) == 0 && fatal) {
			rc = fatal;
			goto out;
		}
		if (prc == 0 && boot_ms_left(deadline) == 0) {
			missing_list(have, ndev, why, sizeof(why));
			snprintf(text, sizeof(text),
				 "timed out after %lld ms waiting for rank(s) %s to join (rendezvous %s); "
				 "were they started, with the same MASTER_PORT?",
				 (long long)b->o->peer_timeout_ms, why, b->where);
			rc = master_fail_all(b, pend, npend, -ETIMEDOUT, text);
			goto out;
		}
		if (prc <= 0)
			continue;
		if (pfd[0].revents & POLLIN) {
			int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
			pid_t pid;

			if (fd >= 0 && npend < ndev && boot_peer_uid_ok(fd, &pid)) {
				pend[npend] = (struct pending){ fd, pid };
				joined[npend++] = 0;
			} else if (fd >= 0) {
				close(fd);
			}
		}
		for (int i = 0; i < npend; i++) {
			if (joined[i] || !(pfd[1 + i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			rc = boot_recv(pend[i].fd, deadline, buf, NULL, NULL);
			if (rc || buf->h.type != BM_HELLO || buf->h.len != sizeof(struct boot_hello)) {
				/* A process that went away before saying hello: forget it. */
				close(pend[i].fd);
				pend[i].fd = -1;
				joined[i] = 1;
				rc = 0;
				continue;
			}
			rc = fatal ? fatal : check_hello(b, &buf->u.hello, have, why, sizeof(why));
			if (rc) {
				/* The world cannot be: tell everyone, and whoever comes later
				 * (until everyone came, or the join deadline), the same thing. */
				if (!fatal)
					master_fail_all(b, pend, npend, rc, why);
				else
					boot_send_fail(pend[i].fd, rc, why);
				fatal = rc;
				rc = 0;
				joined[i] = 1;
				if (buf->u.hello.first < 0 || buf->u.hello.count < 1 ||
				    buf->u.hello.first >= ndev || buf->u.hello.count > ndev - buf->u.hello.first)
					continue;
				for (int d = buf->u.hello.first; d < buf->u.hello.first + buf->u.hello.count; d++)
					if (!have[d]) {
						have[d] = 1;
						covered++;
					}
				continue;
			}
			joined[i] = 1;
			memset(have + buf->u.hello.first, 1, (size_t)buf->u.hello.count);
			covered += buf->u.hello.count;
			procs[nprocs++] = (struct drv_boot_proc){ buf->u.hello.first, buf->u.hello.count,
								  (int32_t)pend[i].pid, i };
		}
	}
	if (fatal) {
		rc = fatal;
		goto out;
	}
	qsort(procs, (size_t)nprocs, sizeof(*procs), proc_cmp);
	b->conns = malloc((size_t)nprocs * sizeof(int));
	if (!b->conns) {
		rc = master_fail_all(b, pend, npend, -ENOMEM, "out of memory");
		goto out;
	}
	for (int i = 0; i < nprocs; i++) {
		b->conns[i] = procs[i].pad < 0 ? -1 : pend[procs[i].pad].fd;
		if (procs[i].pad < 0)
			b->self = i;
		procs[i].pad = 0;
	}
	b->procs = procs;
	b->nprocs = nprocs;
	procs = NULL;
	npend = 0;
out:
	for (int i = 0; i < npend; i++)
		if (pend[i].fd >= 0)
			close(pend[i].fd);
	free(have);
	free(pend);
	free(procs);
	free(pfd);
	free(joined);
	free(buf);
	return rc;
}

static int master_join(struct drv_boot *b, const struct sockaddr_un *sa, socklen_t salen,
		       uint64_t deadline)
{
	int lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0), rc;

	if (lfd < 0)
		return -errno;
	while (bind(lfd, (const struct sockaddr *)sa, salen)) {
		if (errno != EADDRINUSE || boot_ms_left(deadline) == 0) {
			rc = -errno;
			say(b, "cannot listen on rendezvous %s: %s%s", b->where, strerror(errno),
			    rc == -EADDRINUSE ? " (another world of this user uses it: "
						"pick another MASTER_PORT)" : "");
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
	rc = master_gather(b, lfd, deadline);
	close(lfd); /* the name is free again: a later world may reuse it */
	return rc;
}

/* ---- worker ------------------------------------------------------------ */

static int worker_join(struct drv_boot *b, const struct sockaddr_un *sa, socklen_t salen,
		       uint64_t deadline)
{
	struct boot_hello h;
	int fd, rc;

	for (;;) {
		fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return -errno;
		if (connect(fd, (const struct sockaddr *)sa, salen) == 0)
			break;
		rc = -errno;
		close(fd);
		if ((rc != -ECONNREFUSED && rc != -ENOENT && rc != -EAGAIN && rc != -EINTR) ||
		    boot_ms_left(deadline) == 0) {
			if (rc == -ECONNREFUSED || rc == -ENOENT || rc == -EAGAIN) {
				say(b, "timed out after %lld ms waiting for rank 0 (rendezvous %s) to "
				       "start; was it started, with the same MASTER_PORT?",
				    (long long)b->o->peer_timeout_ms, b->where);
				return -ETIMEDOUT;
			}
			say(b, "cannot reach rank 0 at rendezvous %s: %s", b->where, strerror(-rc));
			return rc;
		}
		poll(NULL, 0, 20);
	}
	if (!boot_peer_uid_ok(fd, NULL)) {
		say(b, "the process at rendezvous %s belongs to another user", b->where);
		close(fd);
		return -EACCES;
	}
	hello_of(b, &h);
	rc = boot_send(fd, BM_HELLO, &h, sizeof(h), NULL, 0);
	if (rc) {
		say(b, "rank 0 closed the connection at once (it failed: see its messages)");
		close(fd);
		return -ECONNRESET;
	}
	b->conn = fd;
	return 0;
}

/**
 * drv_boot_join() - join the world's bootstrap: the master gathers every
 * process, a worker connects and says hello.
 * @b: the bootstrap (zeroed by this call). @o: the world's options.
 * @first/@count: this process's devices.
 * Return: 0; -ETIMEDOUT if a rank never came (a message names it);
 * -EINVAL for inconsistent options across ranks; other negative errnos.
 */
int drv_boot_join(struct drv_boot *b, const struct accdma_world_opts *o, int first, int count)
{
	struct sockaddr_un sa;
	socklen_t salen;
	char key[96];
	uint64_t deadline = q_now_ns() + (uint64_t)o->peer_timeout_ms * 1000000ull;
	int rc;

	memset(b, 0, sizeof(*b));
	b->o = o;
	b->conn = -1;
	b->first = first;
	b->count = count;
	b->master = first == 0;
	if (!addr_is_local(o->master_addr)) {
		snprintf(b->where, sizeof(b->where), "%s", o->master_addr);
		say(b, "MASTER_ADDR %s is not an address of this host: the shm transport connects "
		       "processes of one host", o->master_addr);
		return -EINVAL;
	}
	rc = rendezvous(b, &sa, &salen, key, sizeof(key));
	if (rc) {
		snprintf(b->where, sizeof(b->where), "(none)");
		say(b, "no rendezvous: set MASTER_PORT (or opts.master_port), as torchrun and "
		       "accdma-run do");
		return rc;
	}
	snprintf(b->where, sizeof(b->where), "@accdma.%u.%s", (unsigned)geteuid(), key);
	return b->master ? master_join(b, &sa, salen, deadline) : worker_join(b, &sa, salen, deadline);
}

/* How long a worker waits for the master once connected: the master answers
 * by its own join deadline, which may be up to one timeout after ours. */
static uint64_t worker_deadline(const struct drv_boot *b)
{
	return q_now_ns() + (2 * (uint64_t)b->o->peer_timeout_ms + 2000) * 1000000ull;
}

/**
 * drv_boot_share() - hand out (master) or receive (worker) the process table
 * and the shared segments: fds[0] the arena, fds[1 + i] process i's memory.
 * @b: a joined bootstrap. @fds/@nfds: master: in, 1 + nprocs descriptors (kept
 * open: the caller closes them); worker: out, a malloc'd array the caller
 * closes and frees.
 * Return: 0 or a negative errno (the master's FAIL message is printed).
 */
int drv_boot_share(struct drv_boot *b, int **fds, int *nfds)
{
	struct boot_buf *buf = malloc(sizeof(*buf));
	int rc = 0, *got = NULL, ngot = 0, want = 0;

	if (!buf)
		return -ENOMEM;
	if (b->master) {
		size_t plen = sizeof(struct boot_setup) + (size_t)b->nprocs * sizeof(struct drv_boot_proc);

		memcpy(buf->u.raw + sizeof(struct boot_setup), b->procs,
		       (size_t)b->nprocs * sizeof(struct drv_boot_proc));
		for (int i = 0; i < b->nprocs && !rc; i++) {
			if (b->conns[i] < 0)
				continue;
			buf->u.setup = (struct boot_setup){ b->nprocs, i };
			rc = boot_send(b->conns[i], BM_SETUP, buf->u.raw, (uint32_t)plen, NULL, 0);
			for (int k = 0; k < *nfds && !rc; k += BOOT_FDS_PER_MSG) {
				uint32_t n = (uint32_t)(*nfds - k < BOOT_FDS_PER_MSG ? *nfds - k
										 : BOOT_FDS_PER_MSG);

				rc = boot_send(b->conns[i], BM_FDS, NULL, 0, *fds + k, n);
			}
			if (rc)
				say(b, "cannot send the segments to rank %d: %s", b->procs[i].first,
				    strerror(-rc));
		}
		free(buf);
		return rc;
	}
	uint64_t deadline = worker_deadline(b);

	rc = boot_recv(b->conn, deadline, buf, NULL, NULL);
	if (!rc && buf->h.type == BM_FAIL) {
		rc = failed_by_peer(b, buf);
		goto out;
	}
	if (!rc && (buf->h.type != BM_SETUP || buf->h.len < sizeof(struct boot_setup)))
		rc = -EPROTO;
	if (!rc) {
		int n = buf->u.setup.nprocs, self = buf->u.setup.self;

		if (n < 1 || n > Q_MAX_DEVICES || self < 0 || self >= n ||
		    buf->h.len != sizeof(struct boot_setup) + (size_t)n * sizeof(struct drv_boot_proc)) {
			rc = -EPROTO;
		} else {
			b->procs = malloc((size_t)n * sizeof(*b->procs));
			got = malloc(((size_t)n + 1 + BOOT_FDS_PER_MSG) * sizeof(int));
			if (!b->procs || !got) {
				rc = -ENOMEM;
			} else {
				memcpy(b->procs, buf->u.raw + sizeof(struct boot_setup),
				       (size_t)n * sizeof(*b->procs));
				b->nprocs = n;
				b->self = self;
				want = n + 1;
			}
		}
	}
	while (!rc && ngot < want) {
		uint32_t k = 0;

		rc = boot_recv(b->conn, deadline, buf, got + ngot, &k);
		if (!rc && buf->h.type == BM_FAIL) {
			rc = failed_by_peer(b, buf);
			break;
		}
		if (!rc && (buf->h.type != BM_FDS || (int)k > want - ngot)) {
			for (uint32_t i = 0; i < k; i++)
				close(got[ngot + i]);
			rc = -EPROTO;
		}
		if (!rc)
			ngot += (int)k;
	}
	if (rc == -ETIMEDOUT)
		say(b, "rank 0 did not hand out the world's memory in time");
	else if (rc == -ECONNRESET)
		say(b, "rank 0 went away during the bootstrap");
	else if (rc == -EPROTO)
		say(b, "malformed bootstrap message from rank 0");
out:
	if (rc) {
		for (int i = 0; i < ngot; i++)
			close(got[i]);
		free(got);
	} else {
		*fds = got;
		*nfds = ngot;
	}
	free(buf);
	return rc;
}

/**
 * drv_boot_ready() - the last step: everyone has mapped everything.
 * @b: the bootstrap. @err: NULL if this process is ready, else why not.
 * A worker reports and waits for GO; the master waits for every worker's
 * report and sends GO (or FAIL to all, if anyone failed).
 * Return: 0 once the whole world is ready; a negative errno otherwise.
 */
int drv_boot_ready(struct drv_boot *b, const char *err)
{
	struct boot_buf *buf = malloc(sizeof(*buf));
	char text[480];
	int rc = 0;

	if (!buf)
		return -ENOMEM;
	if (!b->master) {
		if (err)
			boot_send_fail(b->conn, -EIO, err);
		else
			rc = boot_send(b->conn, BM_READY, NULL, 0, NULL, 0);
		if (!err && !rc) {
			rc = boot_recv(b->conn, worker_deadline(b), buf, NULL, NULL);
			if (!rc && buf->h.type == BM_FAIL)
				rc = failed_by_peer(b, buf);
			else if (!rc && buf->h.type != BM_GO)
				rc = -EPROTO;
			else if (rc)
				say(b, "rank 0 did not confirm the world: %s", strerror(-rc));
		}
		free(buf);
		return err ? -EIO : rc;
	}
	uint64_t deadline = q_now_ns() + ((uint64_t)b->o->peer_timeout_ms + 2000) * 1000000ull;

	if (err) {
		snprintf(text, sizeof(text), "rank %d: %s", b->first, err);
		rc = -EIO;
	}
	for (int i = 0; i < b->nprocs && !rc; i++) {
		if (b->conns[i] < 0)
			continue;
		rc = boot_recv(b->conns[i], deadline, buf, NULL, NULL);
		if (!rc && buf->h.type == BM_FAIL) {
			snprintf(text, sizeof(text), "rank %d: %s", b->procs[i].first, buf->u.fail.text);
			rc = -EIO;
		} else if (!rc && buf->h.type != BM_READY) {
			snprintf(text, sizeof(text), "rank %d sent a malformed message", b->procs[i].first);
			rc = -EPROTO;
		} else if (rc) {
			snprintf(text, sizeof(text), "rank %d did not map the world: %s",
				 b->procs[i].first, strerror(-rc));
		}
	}
	for (int i = 0; i < b->nprocs; i++) {
		if (b->conns[i] < 0)
			continue;
		if (rc)
			boot_send_fail(b->conns[i], rc, text);
		else /* a worker dying just now is seen by the monitors like any later death */
			(void)boot_send(b->conns[i], BM_GO, NULL, 0, NULL, 0);
	}
	if (rc)
		say(b, "%s", text);
	free(buf);
	return rc;
}

/** drv_boot_end() - close the bootstrap's connections and free it (not the process table). */
void drv_boot_end(struct drv_boot *b)
{
	if (b->conn >= 0)
		close(b->conn);
	b->conn = -1;
	for (int i = 0; b->conns && i < b->nprocs; i++)
		if (b->conns[i] >= 0)
			close(b->conns[i]);
	free(b->conns);
	b->conns = NULL;
}
