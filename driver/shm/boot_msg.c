// SPDX-License-Identifier: MIT
/*
 * boot_msg.c - the shm bootstrap's messages: sending one, and receiving one
 * with every field that crosses the socket checked (its size against its
 * header, the descriptors it carries against the header's count) before
 * bootstrap.c reads it.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "driver/shm/boot_msg.h"

int64_t boot_ms_left(uint64_t deadline)
{
	uint64_t now = q_now_ns();

	return now >= deadline ? 0 : (int64_t)((deadline - now + 999999) / 1000000);
}

int boot_peer_uid_ok(int fd, pid_t *pid)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len))
		return 0;
	if (pid)
		*pid = cr.pid;
	return cr.uid == geteuid();
}

int boot_send(int fd, uint32_t type, const void *payload, uint32_t len, const int *fds,
		    uint32_t nfds)
{
	struct boot_hdr h = { BOOT_MAGIC, type, len, nfds };
	struct iovec iov[2] = { { &h, sizeof(h) }, { (void *)payload, len } };
	union {
		struct cmsghdr c;
		char buf[CMSG_SPACE(sizeof(int) * BOOT_FDS_PER_MSG)];
	} cm;
	struct msghdr m = { .msg_iov = iov, .msg_iovlen = len ? 2 : 1 };

	if (nfds > BOOT_FDS_PER_MSG)
		return -EINVAL;
	if (nfds) {
		memset(&cm, 0, sizeof(cm));
		m.msg_control = cm.buf;
		m.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		cm.c.cmsg_level = SOL_SOCKET;
		cm.c.cmsg_type = SCM_RIGHTS;
		cm.c.cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(&cm.c), fds, sizeof(int) * nfds);
	}
	for (;;) {
		ssize_t n = sendmsg(fd, &m, MSG_NOSIGNAL);

		if (n >= 0)
			return 0;
		if (errno != EINTR)
			return -errno;
	}
}

void boot_send_fail(int fd, int err, const char *text)
{
	struct boot_fail f = { .err = err };

	if (fd < 0)
		return;
	snprintf(f.text, sizeof(f.text), "%s", text);
	boot_send(fd, BM_FAIL, &f, sizeof(f), NULL, 0);
}

/* Receive one message by @deadline; fds (up to BOOT_FDS_PER_MSG) into @fds.
 * Return: 0, -ETIMEDOUT, -ECONNRESET (peer gone), -EPROTO (malformed). */
int boot_recv(int fd, uint64_t deadline, struct boot_buf *buf, int *fds, uint32_t *nfds)
{
	union {
		struct cmsghdr c;
		char buf[CMSG_SPACE(sizeof(int) * BOOT_FDS_PER_MSG)];
	} cm;
	struct iovec iov = { buf, sizeof(*buf) };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct pollfd p = { .fd = fd, .events = POLLIN };
	struct cmsghdr *c;
	uint32_t got = 0;
	ssize_t n;
	int rc;

	for (;;) {
		rc = poll(&p, 1, (int)(boot_ms_left(deadline) > 1000000 ? 1000000 : boot_ms_left(deadline)));
		if (rc > 0)
			break;
		if (rc == 0 && boot_ms_left(deadline) == 0)
			return -ETIMEDOUT;
		if (rc < 0 && errno != EINTR)
			return -errno;
	}
	m.msg_control = cm.buf;
	m.msg_controllen = sizeof(cm.buf);
	do
		n = recvmsg(fd, &m, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n <= 0)
		return n == 0 ? -ECONNRESET : -errno;
	for (c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		uint32_t k = (uint32_t)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		int tmp[BOOT_FDS_PER_MSG];

		memcpy(tmp, CMSG_DATA(c), k * sizeof(int));
		for (uint32_t i = 0; i < k; i++) {
			if (fds && got < BOOT_FDS_PER_MSG)
				fds[got++] = tmp[i];
			else
				close(tmp[i]);
		}
	}
	if (nfds)
		*nfds = got;
	if ((size_t)n < sizeof(buf->h) || buf->h.magic != BOOT_MAGIC || (m.msg_flags & MSG_TRUNC) ||
	    buf->h.len != (size_t)n - sizeof(buf->h) || buf->h.nfds != got) {
		for (uint32_t i = 0; fds && i < got; i++)
			close(fds[i]);
		return -EPROTO;
	}
	if (buf->h.type == BM_FAIL) {
		if (buf->h.len != sizeof(struct boot_fail))
			return -EPROTO;
		buf->u.fail.text[sizeof(buf->u.fail.text) - 1] = 0;
	}
	return 0;
}
