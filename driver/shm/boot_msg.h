/* SPDX-License-Identifier: MIT */
/*
 * boot_msg.h - the shm bootstrap's messages (bootstrap.c): one
 * SOCK_SEQPACKET datagram each, a header and a payload, with file
 * descriptors alongside (SCM_RIGHTS). Private to driver/shm/.
 */
#ifndef ACCDMA_DRIVER_SHM_BOOT_MSG_H
#define ACCDMA_DRIVER_SHM_BOOT_MSG_H

#include <stdint.h>
#include <sys/types.h>

#include "driver/shm/shm.h"

#define BOOT_MAGIC 0xacc0b007u
#define BOOT_VERSION 1
#define BOOT_FDS_PER_MSG 64
#define BOOT_MAX_PAYLOAD (sizeof(struct boot_setup) + Q_MAX_DEVICES * sizeof(struct drv_boot_proc))

enum boot_type { BM_HELLO = 1, BM_SETUP, BM_FDS, BM_READY, BM_GO, BM_FAIL };

struct boot_hdr {
	uint32_t magic;
	uint32_t type;
	uint32_t len; /* payload bytes after the header */
	uint32_t nfds;
};

struct boot_hello {
	uint32_t version;
	int32_t first, count, ndev, queues, engines;
	uint32_t depth;
	uint32_t pad;
	uint64_t mem_size;
};

struct boot_setup {
	int32_t nprocs;
	int32_t self;
};

struct boot_fail {
	int32_t err;
	char text[400];
};

struct boot_buf {
	struct boot_hdr h;
	union {
		struct boot_hello hello;
		struct boot_setup setup;
		struct boot_fail fail;
		char raw[BOOT_MAX_PAYLOAD];
	} u;
};

/* Milliseconds left until @deadline (q_now_ns() time), rounded up; 0 once past. */
int64_t boot_ms_left(uint64_t deadline);
/* Is the process at the other end of unix socket @fd of our user? Its pid into @pid. */
int boot_peer_uid_ok(int fd, pid_t *pid);
/* Send one message of @type: @len bytes of @payload, and @nfds descriptors. 0 or -errno. */
int boot_send(int fd, uint32_t type, const void *payload, uint32_t len, const int *fds, uint32_t nfds);
/* Send FAIL with @err and @text (nothing if @fd < 0). */
void boot_send_fail(int fd, int err, const char *text);
int boot_recv(int fd, uint64_t deadline, struct boot_buf *buf, int *fds, uint32_t *nfds);

#endif /* ACCDMA_DRIVER_SHM_BOOT_MSG_H */
