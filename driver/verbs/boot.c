// SPDX-License-Identifier: MIT
/*
 * boot.c - how the ranks of a verbs world find each other, and notice when
 * one is gone.
 *
 * Rank 0 listens on TCP port ACCDMA_BOOT_PORT (default MASTER_PORT + 1:
 * torchrun's store owns MASTER_PORT) on every address; the other ranks
 * connect to MASTER_ADDR, retrying until the join timeout, so ranks start in
 * any order. Every message is a header (magic, type, length) and a payload:
 *
 *   rank -> 0   HELLO  its geometry, job cookie, RDMA address (GID, MTU) and
 *                      the queue pair it made for each peer
 *   0 -> rank   TABLE  every rank's HELLO
 *   rank -> 0   READY  its queue pairs are connected and every peer answered
 *                      a ping through them (or FAIL with a message)
 *   0 -> rank   GO     everyone is ready (or FAIL: the first failure, to all)
 *   later       LOST   rank r is gone (0 -> rank), BYE (a rank closes),
 *                      DOWN (rank -> 0: its port or device failed)
 *
 * The connections stay open: they are the liveness channel. Soft-RoCE (and a
 * host that vanishes) never fails a queue pair on its own, so a rank's death
 * is its connection's end (keepalive and a user timeout catch a silent host);
 * rank 0 relays it to everyone. The same thread reads the device's own
 * events: a port gone down cuts its rank off from every peer, which it says
 * with DOWN, and rank 0 relays as a death. A job cookie (the launcher's job
 * id, the port, the world's size) keeps two jobs from joining each other.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "driver/verbs/verbs.h"

enum { BT_HELLO = 1, BT_TABLE, BT_READY, BT_GO, BT_FAIL, BT_LOST, BT_BYE, BT_DOWN };

struct bt_hdr {
	uint32_t magic, type, len, arg;
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int hello_bytes(const struct vb *v)
{
	return (int)(sizeof(struct vb_hello) + (size_t)v->nprocs * sizeof(uint32_t));
}

static int write_all(int fd, const void *p, size_t n)
{
	const char *c = p;

	while (n) {
		ssize_t k = send(fd, c, n, MSG_NOSIGNAL);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -EPIPE;
		c += k;
		n -= (size_t)k;
	}
	return 0;
}

/* Read @n bytes by @deadline (ms on the monotonic clock; 0: none). */
static int read_all(int fd, void *p, size_t n, uint64_t deadline)
{
	char *c = p;

	while (n) {
		struct pollfd pf = { .fd = fd, .events = POLLIN };
		int64_t left = deadline ? (int64_t)(deadline - now_ms()) : -1;
		ssize_t k;

		if (deadline && left <= 0)
			return -ETIMEDOUT;
		if (poll(&pf, 1, deadline ? (int)left : -1) < 0 && errno != EINTR)
			return -errno;
		if (!(pf.revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		k = recv(fd, c, n, 0);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -ECONNRESET;
		c += k;
		n -= (size_t)k;
	}
	return 0;
}

static int bt_send(int fd, uint32_t type, uint32_t arg, const void *payload, uint32_t len)
{
	struct bt_hdr h = { VB_BOOT_MAGIC, type, len, arg };
	int rc = write_all(fd, &h, sizeof(h));

	return rc || !len ? rc : write_all(fd, payload, len);
}

/* Read one message; its payload (at most @cap bytes) into @buf. */
static int bt_recv(int fd, struct bt_hdr *h, void *buf, uint32_t cap, uint64_t deadline)
{
	int rc = read_all(fd, h, sizeof(*h), deadline);

	if (rc)
		return rc;
	if (h->magic != VB_BOOT_MAGIC || h->len > cap)
		return -EPROTO;
	return h->len ? read_all(fd, buf, h->len, deadline) : 0;
}

static void say(const struct vb *v, const char *fmt, const char *what)
{
	if (v->w->opts.log_level >= 1)
		fprintf(stderr, fmt, v->self, v->where, what);
}

/* Liveness: a peer that stops answering is dropped within about the peer timeout. */
static void keepalive(const struct vb *v, int fd)
{
	int one = 1, idle = 1, cnt = (int)(v->w->opts.peer_timeout_ms / 1000) + 1;
	unsigned int user = (unsigned int)v->w->opts.peer_timeout_ms;

	setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &idle, sizeof(idle));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
	setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user, sizeof(user));
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static int boot_port(const struct accdma_world_opts *o)
{
	const char *p = drv_env("ACCDMA_BOOT_PORT");
	long n = p ? strtol(p, NULL, 10) : 0;

	if (n > 0 && n < 65536)
		return (int)n;
	return o->master_port > 0 && o->master_port < 65535 ? o->master_port + 1 : 29501;
}

/**
 * vb_hello_wrong() - is hello @h, which rank 0 (@v, its own hello @mine)
 * read from a connection, from a rank of this job, shaped like ours, that
 * has not joined yet? Every rank prints its device name: it must end.
 * Return: NULL if so, else what is wrong, for the refusal.
 */
const char *vb_hello_wrong(const struct vb *v, const struct vb_hello *mine, const struct vb_hello *h)
{
	if (h->magic != VB_BOOT_MAGIC || h->version != mine->version)
		return "a different accdma version";
	if (h->cookie != mine->cookie)
		return "another job (its cookie differs)";
	if (h->nprocs != mine->nprocs || h->local_devices != mine->local_devices || h->ndev != mine->ndev ||
	    h->queues != mine->queues || h->engines != mine->engines || h->depth != mine->depth ||
	    h->eager_max != mine->eager_max)
		return "a world of another shape (devices, queues, engines, depth or eager_max)";
	if (h->rank == 0 || h->rank >= (uint32_t)v->nprocs)
		return "a rank out of range";
	if (v->conns[h->rank] >= 0)
		return "a rank that already joined";
	if (!memchr(h->dev, '\0', sizeof(h->dev)))
		return "a malformed hello (its device name does not end)";
	return NULL;
}

static int fail_all(struct vb *v, const char *text)
{
	for (int r = 1; r < v->nprocs; r++)
		if (v->conns[r] >= 0)
			bt_send(v->conns[r], BT_FAIL, 0, text, (uint32_t)strlen(text) + 1);
	return -ECONNABORTED;
}

static int master_join(struct vb *v, const struct vb_hello *mine, uint64_t deadline)
{
	int hb = hello_bytes(v), joined = 1, one = 1;
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY) };
	char *buf = malloc((size_t)hb);

	if (!buf)
		return -ENOMEM;
	sa.sin_port = htons((uint16_t)boot_port(&v->w->opts));
	v->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	setsockopt(v->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (v->listen_fd < 0 || bind(v->listen_fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    listen(v->listen_fd, 128)) {
		say(v, "accdma: verbs: rank %d cannot listen on %s: %s\n", strerror(errno));
		free(buf);
		return -EADDRINUSE;
	}
	memcpy(v->hellos, mine, sizeof(*mine));
	memcpy(v->qpns, (const char *)mine + sizeof(*mine), (size_t)v->nprocs * sizeof(uint32_t));
	while (joined < v->nprocs) {
		struct pollfd pf = { .fd = v->listen_fd, .events = POLLIN };
		int64_t left = (int64_t)(deadline - now_ms());
		const struct vb_hello *hh = (const struct vb_hello *)buf;
		struct bt_hdr h;
		const char *why;
		int fd;

		if (left <= 0 || poll(&pf, 1, (int)left) <= 0) {
			char text[160];

			if (left > 0)
				continue; /* interrupted */
			snprintf(text, sizeof(text), "only %d of %d ranks joined within %lld ms", joined,
				 v->nprocs, (long long)v->w->opts.peer_timeout_ms);
			say(v, "accdma: verbs: rank %d at %s: %s\n", text);
			fail_all(v, text);
			free(buf);
			return -ETIMEDOUT;
		}
		fd = accept4(v->listen_fd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		if (bt_recv(fd, &h, buf, (uint32_t)hb, deadline) || h.type != BT_HELLO || h.len != (uint32_t)hb) {
			close(fd);
			continue;
		}
		why = vb_hello_wrong(v, mine, hh);
		if (why) {
			bt_send(fd, BT_FAIL, 0, why, (uint32_t)strlen(why) + 1);
			say(v, "accdma: verbs: rank %d at %s: refused a join from %s\n", why);
			close(fd);
			continue;
		}
		keepalive(v, fd);
		v->conns[hh->rank] = fd;
		memcpy(&v->hellos[hh->rank], hh, sizeof(*hh));
		memcpy(&v->qpns[(size_t)hh->rank * v->nprocs], buf + sizeof(*hh), (size_t)v->nprocs * sizeof(uint32_t));
		joined++;
	}
	free(buf);
	for (int r = 1; r < v->nprocs; r++) {
		if (bt_send(v->conns[r], BT_TABLE, 0, v->hellos, (uint32_t)(v->nprocs * sizeof(struct vb_hello))) ||
		    write_all(v->conns[r], v->qpns, (size_t)v->nprocs * v->nprocs * sizeof(uint32_t)))
			return fail_all(v, "a rank went away during the join");
	}
	return 0;
}

static int worker_join(struct vb *v, const struct vb_hello *mine, uint64_t deadline)
{
	const char *addr = v->w->opts.master_addr ? v->w->opts.master_addr : "127.0.0.1";
	char port[16], text[256];
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM }, *ai = NULL;
	struct bt_hdr h;
	uint32_t tbytes = (uint32_t)(v->nprocs * sizeof(struct vb_hello));
	int rc;

	snprintf(port, sizeof(port), "%d", boot_port(&v->w->opts));
	if (getaddrinfo(addr, port, &hints, &ai) || !ai) {
		say(v, "accdma: verbs: rank %d cannot resolve MASTER_ADDR %s (%s)\n", addr);
		return -EHOSTUNREACH;
	}
	for (;;) { /* rank 0 may not listen yet */
		v->conn = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (v->conn >= 0 && !connect(v->conn, ai->ai_addr, ai->ai_addrlen))
			break;
		if (v->conn >= 0)
			close(v->conn);
		v->conn = -1;
		if (now_ms() >= deadline) {
			freeaddrinfo(ai);
			say(v, "accdma: verbs: rank %d: nobody answered at %s (%s) within the join timeout\n",
			    "is rank 0 running?");
			return -ETIMEDOUT;
		}
		usleep(20000);
	}
	freeaddrinfo(ai);
	keepalive(v, v->conn);
	rc = bt_send(v->conn, BT_HELLO, 0, mine, (uint32_t)hello_bytes(v));
	if (!rc)
		rc = read_all(v->conn, &h, sizeof(h), deadline);
	if (!rc && (h.magic != VB_BOOT_MAGIC || (h.type != BT_FAIL && h.type != BT_TABLE)))
		rc = -EPROTO;
	if (!rc && h.type == BT_FAIL) {
		uint32_t n = h.len < sizeof(text) - 1 ? h.len : (uint32_t)sizeof(text) - 1;

		rc = read_all(v->conn, text, n, deadline);
		text[rc ? 0 : n] = 0;
		say(v, "accdma: verbs: rank %d: rank 0 at %s refused the join: %s\n", text);
		return -ECONNREFUSED;
	}
	if (!rc && h.len != tbytes)
		rc = -EPROTO;
	if (!rc)
		rc = read_all(v->conn, v->hellos, tbytes, deadline);
	if (!rc)
		rc = read_all(v->conn, v->qpns, (size_t)v->nprocs * v->nprocs * sizeof(uint32_t), deadline);
	if (rc)
		say(v, "accdma: verbs: rank %d: the join through %s broke off (%s)\n", strerror(-rc));
	return rc;
}

int vb_boot_join(struct vb *v, const struct vb_hello *mine)
{
	uint64_t deadline = now_ms() + (uint64_t)v->w->opts.peer_timeout_ms;

	v->listen_fd = v->conn = -1;
	for (int r = 0; r < v->nprocs; r++)
		v->conns[r] = -1;
	snprintf(v->where, sizeof(v->where), "%s:%d",
		 v->w->opts.master_addr ? v->w->opts.master_addr : "127.0.0.1", boot_port(&v->w->opts));
	if (v->nprocs == 1) {
		memcpy(v->hellos, mine, sizeof(*mine));
		return 0;
	}
	return v->self == 0 ? master_join(v, mine, deadline) : worker_join(v, mine, deadline);
}

int vb_boot_ready(struct vb *v, const char *err)
{
	uint64_t deadline = now_ms() + (uint64_t)v->w->opts.peer_timeout_ms;
	char text[256] = "", got[256];
	struct bt_hdr h;

	if (v->nprocs == 1)
		return err ? -EHOSTUNREACH : 0;
	if (v->self != 0) {
		if (err) /* ours to say; rank 0's answer would only repeat a failure */
			say(v, "accdma: verbs: rank %d: the world at %s did not open: %s\n", err);
		if (err ? bt_send(v->conn, BT_FAIL, 0, err, (uint32_t)strlen(err) + 1)
			: bt_send(v->conn, BT_READY, 0, NULL, 0))
			return -EPIPE;
		/* Rank 0 answers once its own paths are checked and every rank
		 * said how its went: up to two peer timeouts from here. */
		deadline += (uint64_t)v->w->opts.peer_timeout_ms + 1000;
		if (read_all(v->conn, &h, sizeof(h), deadline) || h.magic != VB_BOOT_MAGIC) {
			if (!err)
				say(v, "accdma: verbs: rank %d: the world at %s did not open: %s\n",
				    "rank 0 did not say whether every path works");
			return -ECONNRESET;
		}
		if (h.type == BT_GO && !err)
			return 0;
		if (h.type == BT_FAIL && h.len < sizeof(got) && !read_all(v->conn, got, h.len, deadline) && !err) {
			got[h.len ? h.len - 1 : 0] = 0;
			say(v, "accdma: verbs: rank %d: the world at %s did not open: %s\n", got);
		}
		return -EHOSTUNREACH;
	}
	if (err)
		snprintf(text, sizeof(text), "%s", err);
	for (int r = 1; r < v->nprocs; r++) {
		if (bt_recv(v->conns[r], &h, got, sizeof(got) - 1, deadline)) {
			if (!*text)
				snprintf(text, sizeof(text), "rank %d did not say whether its paths work", r);
			continue;
		}
		got[h.len < sizeof(got) ? h.len : sizeof(got) - 1] = 0;
		if (h.type == BT_FAIL && !*text)
			snprintf(text, sizeof(text), "%s", got);
	}
	if (*text) {
		say(v, "accdma: verbs: rank %d: the world at %s did not open: %s\n", text);
		fail_all(v, text);
		return -EHOSTUNREACH;
	}
	for (int r = 1; r < v->nprocs; r++)
		if (bt_send(v->conns[r], BT_GO, 0, NULL, 0))
			return -EPIPE;
	return 0;
}

/*
 * Process @proc is gone, as its connection says (a goodbye, its end, rank
 * 0's word). What it sent before is served first, as a closed shm peer's
 * engines finish what they took: its last finish may still sit in our
 * completion queue when its goodbye comes (they take different paths), and
 * the recv it completes would end PEER_LOST with every byte in place. So
 * the queue is drained into our devices' inboxes, and what they then held
 * is taken (an engine serves a message it takes before it looks at lost
 * peers) before @proc is marked lost: a second at most, as with no engine
 * threads only a waiting host serves them.
 */
static void lose_after_draining(struct vb *v, int proc, uint32_t why)
{
	uint64_t end = now_ms() + 1000, puts, takes;
	int n;

	while ((n = vb_link_poll(v)) != 0 && now_ms() < end)
		if (n < 0)
			sched_yield();
	for (int d = v->w->first_local; d < v->w->first_local + v->L; d++) {
		drv_inbox_counts(&v->inbox[d], &puts, &takes);
		while (takes < puts && now_ms() < end && !atomic_load(&v->stop)) {
			usleep(100);
			drv_inbox_counts(&v->inbox[d], NULL, &takes);
		}
	}
	vb_mark_lost(v, proc, why);
}

/* Rank 0: rank @r's connection spoke or ended. */
static void master_heard(struct vb *v, int r)
{
	struct bt_hdr h;
	uint32_t why = Q_DEV_LOST_DIED;

	if (!read_all(v->conns[r], &h, sizeof(h), now_ms() + 1000) && h.magic == VB_BOOT_MAGIC &&
	    h.type != BT_BYE && h.type != BT_DOWN)
		return; /* nothing else is expected; a stray message is ignored */
	if (h.magic == VB_BOOT_MAGIC && h.type == BT_BYE)
		why = Q_DEV_LOST_CLOSED;
	close(v->conns[r]);
	v->conns[r] = -1;
	for (int o = 1; o < v->nprocs; o++) /* the others first: ours may wait for our engines */
		if (v->conns[o] >= 0)
			bt_send(v->conns[o], BT_LOST, (uint32_t)r, &why, sizeof(why));
	lose_after_draining(v, r, why);
}

/* Another rank: rank 0 said something, or its connection ended. */
static int worker_heard(struct vb *v)
{
	struct bt_hdr h;
	uint32_t why = Q_DEV_LOST_DIED;

	if (read_all(v->conn, &h, sizeof(h), now_ms() + 1000) || h.magic != VB_BOOT_MAGIC) {
		lose_after_draining(v, 0, why); /* the relay is gone: rank 0 is lost, the others unwatched */
		return -1;
	}
	if (h.type == BT_BYE) {
		lose_after_draining(v, 0, Q_DEV_LOST_CLOSED);
		return -1;
	}
	if (h.type == BT_LOST && h.len == sizeof(why) && !read_all(v->conn, &why, sizeof(why), now_ms() + 1000) &&
	    h.arg < (uint32_t)v->nprocs && h.arg != (uint32_t)v->self)
		lose_after_draining(v, (int)h.arg, why == Q_DEV_LOST_CLOSED ? Q_DEV_LOST_CLOSED : Q_DEV_LOST_DIED);
	return 0;
}

/* Our port or device failed: no peer can be reached. Mark them all lost
 * here, and have rank 0 tell the others (it relays our DOWN as a death; as
 * rank 0 we are the relay, and say that we are gone). */
static void cut_off(struct vb *v, int fatal)
{
	uint32_t why = Q_DEV_LOST_DIED;
	char what[64];

	if (atomic_exchange(&v->cut_off, 1))
		return;
	if (fatal)
		snprintf(what, sizeof(what), "device %s failed", v->devname);
	else
		snprintf(what, sizeof(what), "port %d of %s went down", v->port, v->devname);
	if (v->w->opts.log_level >= 1)
		fprintf(stderr, "accdma: verbs: %s: rank %d is cut off; its ops with every peer complete PEER_LOST\n",
			what, v->self);
	for (int p = 0; p < v->nprocs; p++)
		vb_mark_lost(v, p, Q_DEV_LOST_DIED);
	if (v->self)
		bt_send(v->conn, BT_DOWN, 0, NULL, 0);
	for (int o = 1; v->self == 0 && o < v->nprocs; o++)
		if (v->conns[o] >= 0)
			bt_send(v->conns[o], BT_LOST, 0, &why, sizeof(why));
}

/* The device's events (its async fd is non-blocking): a port of ours gone
 * down or the device failed cut us off; a queue pair in error loses its peer
 * (its failed work may never complete to tell us). */
static void device_heard(struct vb *v)
{
	struct ibv_async_event e;

	while (!ibv_get_async_event(v->ctx, &e)) {
		switch (e.event_type) {
		case IBV_EVENT_PORT_ERR:
			if (e.element.port_num == v->port)
				cut_off(v, 0);
			break;
		case IBV_EVENT_DEVICE_FATAL:
			cut_off(v, 1);
			break;
		case IBV_EVENT_QP_FATAL:
		case IBV_EVENT_QP_REQ_ERR:
		case IBV_EVENT_QP_ACCESS_ERR:
			for (int p = 0; p < v->nprocs; p++)
				if (v->qp[p] && v->qp[p] == e.element.qp)
					vb_mark_lost(v, p, Q_DEV_LOST_DIED);
			break;
		default:
			break;
		}
		ibv_ack_async_event(&e);
	}
}

/* pf[0]: the close's eventfd; pf[1]: the device's events; then rank 0's
 * connections by rank (from 1), or a rank's one connection to rank 0. */
static void *monitor_main(void *arg)
{
	struct vb *v = arg;
	struct pollfd *pf = calloc((size_t)v->nprocs + 2, sizeof(*pf));
	int worker_open = 1, device_open = 1;

	if (!pf)
		return NULL;
	while (!atomic_load(&v->stop)) {
		int n = 2;

		pf[0] = (struct pollfd){ .fd = v->efd, .events = POLLIN };
		pf[1] = (struct pollfd){ .fd = device_open ? v->ctx->async_fd : -1, .events = POLLIN };
		if (v->self == 0) {
			for (int r = 1; r < v->nprocs; r++)
				pf[r + 1] = (struct pollfd){ .fd = v->conns[r], .events = POLLIN };
			n = v->nprocs + 1;
		} else if (worker_open) {
			pf[2] = (struct pollfd){ .fd = v->conn, .events = POLLIN };
			n = 3;
		}
		if (poll(pf, (nfds_t)n, -1) < 0)
			continue;
		if (pf[0].revents)
			break;
		if (pf[1].revents)
			device_heard(v);
		if (pf[1].revents & (POLLERR | POLLHUP | POLLNVAL)) {
			cut_off(v, 1); /* the device is gone with its events: stop watching */
			device_open = 0;
		}
		for (int i = 2; i < n; i++) {
			if (!(pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			if (v->self == 0)
				master_heard(v, i - 1);
			else if (worker_heard(v))
				worker_open = 0;
		}
	}
	free(pf);
	return NULL;
}

int vb_boot_monitor_start(struct vb *v)
{
	if (v->nprocs == 1)
		return 0;
	v->efd = eventfd(0, EFD_CLOEXEC);
	if (v->efd < 0)
		return -errno;
	/* read until empty at each wake-up: never block the thread in the read */
	if (fcntl(v->ctx->async_fd, F_SETFL, fcntl(v->ctx->async_fd, F_GETFL) | O_NONBLOCK) < 0)
		return -errno;
	if (pthread_create(&v->monitor, NULL, monitor_main, v))
		return -EAGAIN;
	v->monitor_started = 1;
	return 0;
}

void vb_boot_end(struct vb *v)
{
	uint64_t one = 1;

	if (v->monitor_started) {
		atomic_store(&v->stop, 1);
		if (write(v->efd, &one, sizeof(one)) < 0)
			perror("accdma: verbs: eventfd");
		pthread_join(v->monitor, NULL);
		v->monitor_started = 0;
	}
	/* A goodbye, so that the peers complete their ops with us as closed, not died. */
	if (v->conn >= 0)
		bt_send(v->conn, BT_BYE, 0, NULL, 0);
	for (int r = 1; v->conns && r < v->nprocs; r++)
		if (v->conns[r] >= 0) {
			bt_send(v->conns[r], BT_BYE, 0, NULL, 0);
			close(v->conns[r]);
			v->conns[r] = -1;
		}
	if (v->conn >= 0)
		close(v->conn);
	if (v->listen_fd >= 0)
		close(v->listen_fd);
	if (v->efd > 0)
		close(v->efd);
	v->conn = v->listen_fd = v->efd = -1;
}
