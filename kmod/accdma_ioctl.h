/* SPDX-License-Identifier: MIT */
/*
 * accdma_ioctl.h - the ioctl ABI of /dev/accdma, between the module and
 * user space (libaccdma's kmod transport, tests). Included alike by both.
 *
 * The rules every structure here keeps, so that a 32-bit and a 64-bit
 * process see the same layout and the ABI can grow without breaking:
 *  - fixed-width fields only (__u32, __u64, ...), no pointer, no enum, no
 *    bool; a user address would travel as a __u64;
 *  - padding spelled out as fields, every structure a multiple of 8 bytes
 *    (checked below), so no compiler inserts any;
 *  - the first field is the structure's size as the caller knows it: the
 *    module refuses any size but its own (-EINVAL) until a version adds
 *    fields;
 *  - every pad, reserved field and flag not defined must be zero on the way
 *    in (-EINVAL otherwise), so that a later version may give them meaning.
 */
#ifndef ACCDMA_IOCTL_H
#define ACCDMA_IOCTL_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define ACCDMA_DEVICE_NAME "accdma" /* /dev/accdma */
#define ACCDMA_ABI_VERSION 3
#define ACCDMA_IOC_MAGIC 0xac

/**
 * struct accdma_ioc_info - ACCDMA_IOC_INFO: what this module is and takes.
 * @size: in: sizeof(struct accdma_ioc_info).
 * @abi_version: out: ACCDMA_ABI_VERSION.
 * @fw_version: out: the engines' firmware version (Q_FW_VERSION).
 * @max_devices: out: the most devices a world has.
 * @max_queues: out: the most queues a device has.
 * @max_engines: out: the most engines a device has.
 * @max_depth: out: the deepest queue.
 * @eager_max: out: the largest eager send.
 * @reserved: out: zeros.
 */
struct accdma_ioc_info {
	__u32 size;
	__u32 abi_version;
	__u32 fw_version;
	__u32 max_devices;
	__u32 max_queues;
	__u32 max_engines;
	__u32 max_depth;
	__u32 eager_max;
	__u64 reserved[4];
};

/**
 * struct accdma_ioc_selftest - ACCDMA_IOC_SELFTEST: run the module's
 * self-test now (CAP_SYS_ADMIN; one at a time).
 * @size: in: sizeof(struct accdma_ioc_selftest).
 * @devices: in: devices of the first world, 2..16.
 * @flags: in: 0.
 * @pad: in: 0.
 * @passed: out: the tests that passed.
 * @failed: out: the tests that failed.
 * @reserved: in: zeros.
 */
struct accdma_ioc_selftest {
	__u32 size;
	__u32 devices;
	__u32 flags;
	__u32 pad;
	__s32 passed;
	__s32 failed;
	__u64 reserved[2];
};

/**
 * struct accdma_ioc_join - ACCDMA_IOC_JOIN: join (or start) the world of
 * @key on this host and claim devices [@first, @first + @count) of it; the
 * call returns once every device of the world is claimed. A file joins once.
 * Then mmap() the file: offset 0 is the arena (@arena_size bytes: rings,
 * completion records, tables), offset @seg_offset + d * @seg_stride device
 * d's memory, for this file's own devices only.
 * @size: in: sizeof(struct accdma_ioc_join).
 * @flags: in: 0.
 * @key: in: the job's rendezvous (worlds are per user and key).
 * @devices: in: devices of the world (1..max_devices).
 * @queues: in: queues per device.
 * @engines: in: engine threads per device (1..max_engines).
 * @depth: in: slots per queue (a power of two).
 * @eager_max: in: the largest eager send.
 * @first: in: this process's first device.
 * @count: in: its devices.
 * @pad: in: 0.
 * @mem_size: in: bytes of each device's memory (rounded up to pages, at most
 *            the module's mem_max_mb: @seg_stride says what it gave).
 * @spin_ns: in: how long an idle engine spins before it sleeps.
 * @timeout_ns: in: how long to wait for the other devices to be claimed.
 * @arena_size: out: bytes of the arena's mapping.
 * @seg_offset: out: the mmap offset of device 0's memory.
 * @seg_stride: out: bytes of each device's memory.
 * @reserved: in: zeros.
 */
struct accdma_ioc_join {
	__u32 size;
	__u32 flags;
	__u64 key;
	__u32 devices;
	__u32 queues;
	__u32 engines;
	__u32 depth;
	__u32 eager_max;
	__u32 first;
	__u32 count;
	__u32 pad;
	__u64 mem_size;
	__u64 spin_ns;
	__u64 timeout_ns;
	__u64 arena_size;
	__u64 seg_offset;
	__u64 seg_stride;
	__u64 reserved[2];
};

/**
 * struct accdma_ioc_word - ACCDMA_IOC_WAIT and ACCDMA_IOC_WAKE: the futex of
 * a word of the arena this file mapped (a user futex cannot meet a kernel
 * engine, which sleeps on the word's kernel wait queue).
 * @size: in: sizeof(struct accdma_ioc_word).
 * @val: in: WAIT sleeps while the word holds this; WAKE: 0.
 * @offset: in: the word's offset in the arena (4-byte aligned).
 * @timeout_ns: in: WAIT's longest sleep (< 0: none); WAKE: 0.
 * @reserved: in: 0.
 */
struct accdma_ioc_word {
	__u32 size;
	__u32 val;
	__u64 offset;
	__s64 timeout_ns;
	__u64 reserved;
};

/**
 * struct accdma_ioc_call - ACCDMA_IOC_CALL: serve the engines' host calls
 * (exec ops: a kernel engine cannot call a function of the process, so it
 * asks, and waits for the answer). A thread of the library per device
 * loops: answer the last call, sleep until an engine of its device calls,
 * run the exec the call names, and so on.
 * @size: in: sizeof(struct accdma_ioc_call).
 * @flags: in: ACCDMA_CALL_ANSWER (answer @dev's call with @result first),
 *         ACCDMA_CALL_STOP (wake and end every CALL of this file: -ESHUTDOWN).
 * @dev: in: the device served (one of this file's; STOP: any).
 * @queue: out: the exec's queue.
 * @handle: out: the exec's handle (its descriptor's, as the process wrote it).
 * @result: in: 0 the function returned 0, 1 it failed, < 0 no such exec.
 * @pad: in: 0.
 * @reserved: in: zeros.
 */
struct accdma_ioc_call {
	__u32 size;
	__u32 flags;
	__u32 dev;
	__u32 queue;
	__u64 handle;
	__s32 result;
	__u32 pad;
	__u64 reserved[2];
};
#define ACCDMA_CALL_ANSWER 1u
#define ACCDMA_CALL_STOP 2u

/**
 * struct accdma_ioc_poll - ACCDMA_IOC_POLL: lend the calling thread to this
 * file's devices: it runs their engines' passes itself, in the kernel, as a
 * waiting host thread does over shm (io_uring without SQPOLL submits in the
 * caller's context alike), while their engine threads nap. One pass of an
 * engine runs at a time, whoever runs it. It ends when the word at @offset
 * no longer holds @val (ACCDMA_POLL_WATCH; without it, when a pass moved
 * something), when @spin_ns have passed, or on a signal.
 * @size: in: sizeof(struct accdma_ioc_poll).
 * @flags: in: ACCDMA_POLL_WATCH or 0.
 * @offset: in: the watched word's offset in the arena (4-byte aligned); 0
 *          without ACCDMA_POLL_WATCH.
 * @val: in: the value the word holds; 0 without ACCDMA_POLL_WATCH.
 * @pad: in: 0.
 * @spin_ns: in: the longest time spent (at most 10 ms is taken).
 * @reserved: in: zeros.
 */
struct accdma_ioc_poll {
	__u32 size;
	__u32 flags;
	__u64 offset;
	__u32 val;
	__u32 pad;
	__u64 spin_ns;
	__u64 reserved[2];
};
#define ACCDMA_POLL_WATCH 1u

#define ACCDMA_IOC_INFO _IOWR(ACCDMA_IOC_MAGIC, 0x00, struct accdma_ioc_info)
#define ACCDMA_IOC_SELFTEST _IOWR(ACCDMA_IOC_MAGIC, 0x01, struct accdma_ioc_selftest)
#define ACCDMA_IOC_JOIN _IOWR(ACCDMA_IOC_MAGIC, 0x02, struct accdma_ioc_join)
#define ACCDMA_IOC_WAIT _IOW(ACCDMA_IOC_MAGIC, 0x03, struct accdma_ioc_word)
#define ACCDMA_IOC_WAKE _IOW(ACCDMA_IOC_MAGIC, 0x04, struct accdma_ioc_word)
#define ACCDMA_IOC_CALL _IOWR(ACCDMA_IOC_MAGIC, 0x05, struct accdma_ioc_call)
#define ACCDMA_IOC_POLL _IOW(ACCDMA_IOC_MAGIC, 0x06, struct accdma_ioc_poll)

/* No hidden padding, the same size on every ABI. */
_Static_assert(sizeof(struct accdma_ioc_info) == 64, "accdma_ioc_info: 64 bytes");
_Static_assert(sizeof(struct accdma_ioc_selftest) == 40, "accdma_ioc_selftest: 40 bytes");
_Static_assert(sizeof(struct accdma_ioc_join) == 112, "accdma_ioc_join: 112 bytes");
_Static_assert(sizeof(struct accdma_ioc_word) == 32, "accdma_ioc_word: 32 bytes");
_Static_assert(sizeof(struct accdma_ioc_call) == 48, "accdma_ioc_call: 48 bytes");
_Static_assert(sizeof(struct accdma_ioc_poll) == 48, "accdma_ioc_poll: 48 bytes");

#endif /* ACCDMA_IOCTL_H */
