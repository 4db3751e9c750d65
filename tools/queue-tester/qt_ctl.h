/* SPDX-License-Identifier: MIT */
/*
 * qt_ctl.h - queue-tester's control channel between the processes of a shm
 * world (one process per device, started by accdma-run, torchrun, mpirun or
 * by queue-tester itself), and the launcher queue-tester uses for `-t shm`.
 *
 * The control channel is queue-tester's own, separate from the library's
 * bootstrap: rank 0 listens on the abstract unix socket
 * "@accdma-qt.<uid>.<rendezvous>" (the rendezvous is named like the
 * library's: MASTER_PORT, else a launcher's job id); the other ranks connect.
 * Over it the processes run one scenario in lockstep: they exchange their
 * region keys (a `write` names the peer's key), meet before anyone checks
 * data or closes its world, and send their results to rank 0, which merges
 * and prints them.
 */
#ifndef QT_CTL_H
#define QT_CTL_H

#include <stddef.h>
#include <stdint.h>

/**
 * struct qt_ctl - one process's end of the control channel.
 * @rank/@nprocs: this process and the number of processes.
 * @local_devices: devices each process drives (ACCDMA_LOCAL_DEVICES).
 * @fd: a worker's connection to rank 0. @fds: rank 0's connections (fds[0] = -1).
 */
struct qt_ctl {
	int rank;
	int nprocs;
	int local_devices;
	int fd;
	int *fds;
};

/**
 * qt_ctl_from_env() - is this process one rank of a launched world?
 * @rank/@nprocs/@local_devices: filled from RANK/WORLD_SIZE (or
 * OMPI_COMM_WORLD_*, PMI_*) and ACCDMA_LOCAL_DEVICES.
 * Return: 1 if RANK and WORLD_SIZE (or an equivalent pair) are set and valid,
 * 0 if not set, -1 if set but invalid.
 */
int qt_ctl_from_env(int *rank, int *nprocs, int *local_devices);

/**
 * qt_ctl_open() - join the control channel (rank 0 waits for everyone).
 * @c: filled. @rank/@nprocs/@local_devices: as from qt_ctl_from_env().
 * @timeout_ms: how long to wait for the other ranks (or rank 0).
 * @err/@errlen: a message on failure.
 * Return: 0 or a negative errno.
 */
int qt_ctl_open(struct qt_ctl *c, int rank, int nprocs, int local_devices, int64_t timeout_ms,
		char *err, size_t errlen);

/**
 * qt_ctl_allgather() - every rank contributes a blob; every rank gets all of them.
 * @c: the channel (NULL or one process: @all is a copy of @buf).
 * @buf/@len: this rank's blob.
 * @all: out, malloc'd: the blobs of ranks 0..nprocs-1 one after the other (free() it).
 * @lens: out, nprocs lengths (may be NULL).
 *
 * A failure of the channel (a rank died, or closed it) is fatal: the process
 * prints why and exits 1, so no rank is ever left waiting for a dead one.
 */
void qt_ctl_allgather(struct qt_ctl *c, const void *buf, uint32_t len, char **all, uint32_t *lens);

/**
 * qt_ctl_barrier() - wait until every rank got here.
 * @c: the channel (NULL: returns at once).
 */
void qt_ctl_barrier(struct qt_ctl *c);

/**
 * qt_ctl_close() - leave the channel.
 * @c: the channel.
 */
void qt_ctl_close(struct qt_ctl *c);

/** qt_ctl_now_ms() - the monotonic clock in milliseconds. */
int64_t qt_ctl_now_ms(void);

/**
 * struct qt_spawn_res - what one launched instance produced.
 * @blob/@len: what rank 0 wrote to the result descriptor (malloc'd, may be NULL).
 * @failed_rank/@status: the first rank that failed (-1: none) and its status
 * (exit code, or 128 + signal).
 */
struct qt_spawn_res {
	char *blob;
	size_t len;
	int failed_rank;
	int status;
};

/**
 * qt_spawn() - run @argv as @nprocs processes of one shm world on this host,
 * as accdma-run does (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT,
 * ACCDMA_TRANSPORT=shm, ACCDMA_LOCAL_DEVICES=1, ACCDMA_PEER_TIMEOUT_MS=30000
 * unless set), with rank 0's descriptor
 * @result_fd reading into @res->blob. When a rank fails, the others get
 * SIGTERM, then SIGKILL after 5 s. The ranks die with this process.
 * @path: the program. @argv: its arguments (argv[0] included, NULL-terminated).
 * @nprocs: the number of processes. @result_fd: the descriptor number rank 0 writes to.
 * @res: filled.
 * Return: 0 once every rank was reaped; a negative errno if none could be started.
 */
int qt_spawn(const char *path, char *const argv[], int nprocs, int result_fd,
	     struct qt_spawn_res *res);

#endif
