// SPDX-License-Identifier: MIT
/*
 * kmod-ioctl.c - checks /dev/accdma's ioctls from user space, in the test VM
 * (built static by `make kmod-tests`; run by guest-kmod.sh): INFO answers
 * with this ABI, every argument that breaks the ABI's rules is refused
 * (a wrong size, a pad, flag or reserved word not zero, a bad pointer, an
 * unknown command), SELFTEST runs the self-test on demand, JOIN refuses a
 * bad shape, and nothing but JOIN works before a file joined.
 * Prints one line per check; exits 0 if all passed.
 * Usage: kmod-ioctl [/dev/accdma]
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kmod/accdma_ioctl.h"

static int failed;

/* Check that ioctl(@cmd, @arg) returns @want_errno (0: success). */
static void expect(int fd, const char *what, unsigned long cmd, void *arg, int want_errno)
{
	int rc = ioctl(fd, cmd, arg), err = rc ? errno : 0;

	if (err == want_errno) {
		printf("kmod-ioctl: ok   %s (%s)\n", what, err ? strerror(err) : "0");
		return;
	}
	printf("kmod-ioctl: FAIL %s: %s, expected %s\n", what, err ? strerror(err) : "0",
	       want_errno ? strerror(want_errno) : "0");
	failed++;
}

int main(int argc, char **argv)
{
	const char *path = argc > 1 ? argv[1] : "/dev/" ACCDMA_DEVICE_NAME;
	struct accdma_ioc_info info;
	struct accdma_ioc_selftest st;
	int fd = open(path, O_RDWR | O_CLOEXEC);

	if (fd < 0) {
		printf("kmod-ioctl: FAIL open %s: %s\n", path, strerror(errno));
		return 1;
	}
	memset(&info, 0xff, sizeof(info));
	info.size = sizeof(info);
	expect(fd, "INFO", ACCDMA_IOC_INFO, &info, 0);
	if (info.abi_version != ACCDMA_ABI_VERSION || info.max_devices < 2 || info.reserved[0]) {
		printf("kmod-ioctl: FAIL INFO says ABI %u, %u devices\n", info.abi_version,
		       info.max_devices);
		failed++;
	}
	info.size = sizeof(info) - 8;
	expect(fd, "INFO, a smaller size", ACCDMA_IOC_INFO, &info, EINVAL);
	expect(fd, "INFO, a NULL argument", ACCDMA_IOC_INFO, NULL, EFAULT);
	expect(fd, "an unknown command", _IOWR(ACCDMA_IOC_MAGIC, 0x7f, struct accdma_ioc_info),
	       &info, ENOTTY);

	memset(&st, 0, sizeof(st));
	st.size = sizeof(st);
	st.devices = 1;
	expect(fd, "SELFTEST, 1 device", ACCDMA_IOC_SELFTEST, &st, EINVAL);
	st.devices = 2;
	st.pad = 1;
	expect(fd, "SELFTEST, a pad not zero", ACCDMA_IOC_SELFTEST, &st, EINVAL);
	st.pad = 0;
	st.flags = 1;
	expect(fd, "SELFTEST, an unknown flag", ACCDMA_IOC_SELFTEST, &st, EINVAL);
	st.flags = 0;
	st.reserved[1] = 1;
	expect(fd, "SELFTEST, a reserved word not zero", ACCDMA_IOC_SELFTEST, &st, EINVAL);
	st.reserved[1] = 0;
	expect(fd, "SELFTEST, 2 devices", ACCDMA_IOC_SELFTEST, &st, 0);
	if (st.passed <= 0 || st.failed != 0) {
		printf("kmod-ioctl: FAIL SELFTEST: %d passed, %d failed\n", st.passed, st.failed);
		failed++;
	}

	/* before a join: no word to wait on, no call to serve, nothing to map */
	struct accdma_ioc_word wd = { .size = sizeof(wd) };
	struct accdma_ioc_call call = { .size = sizeof(call) };

	expect(fd, "WAIT before JOIN", ACCDMA_IOC_WAIT, &wd, EINVAL);
	expect(fd, "WAKE before JOIN", ACCDMA_IOC_WAKE, &wd, EINVAL);
	expect(fd, "CALL before JOIN", ACCDMA_IOC_CALL, &call, EINVAL);
	if (mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) != MAP_FAILED ||
	    errno != ENODEV) {
		printf("kmod-ioctl: FAIL mmap before JOIN: not ENODEV\n");
		failed++;
	} else {
		printf("kmod-ioctl: ok   mmap before JOIN (ENODEV)\n");
	}

	/* JOIN: every rule of the ABI and the shape's bounds */
	struct accdma_ioc_join good = { .size = sizeof(good), .key = 0xacdull << 40,
					.devices = 2, .queues = 1, .engines = 1, .depth = 64,
					.eager_max = 64, .first = 0, .count = 1,
					.mem_size = 1 << 20, .timeout_ns = 1000000 };
	struct accdma_ioc_join j;

#define JOIN_BAD(what, field, value)                                      \
	do {                                                              \
		j = good;                                                 \
		j.field = value;                                          \
		expect(fd, "JOIN, " what, ACCDMA_IOC_JOIN, &j, EINVAL);   \
	} while (0)
	JOIN_BAD("a smaller size", size, sizeof(j) - 8);
	JOIN_BAD("an unknown flag", flags, 1);
	JOIN_BAD("a pad not zero", pad, 1);
	JOIN_BAD("a reserved word not zero", reserved[1], 1);
	JOIN_BAD("an out field not zero", arena_size, 4096);
	JOIN_BAD("0 devices", devices, 0);
	JOIN_BAD("no engine", engines, 0);
	JOIN_BAD("the first device past the world", first, 2);
	JOIN_BAD("more devices than the world", count, 3);
	JOIN_BAD("no memory", mem_size, 0);
	expect(fd, "JOIN, a NULL argument", ACCDMA_IOC_JOIN, NULL, EFAULT);
	/* a good join of one device of two: nobody claims the other */
	j = good;
	expect(fd, "JOIN, the other device never claimed", ACCDMA_IOC_JOIN, &j, ETIMEDOUT);
	j = good;
	expect(fd, "JOIN twice", ACCDMA_IOC_JOIN, &j, EBUSY);
	wd.offset = 2;
	expect(fd, "WAIT, a misaligned word", ACCDMA_IOC_WAIT, &wd, EINVAL);
	wd.offset = 1ull << 40;
	expect(fd, "WAIT, a word past the arena", ACCDMA_IOC_WAIT, &wd, EINVAL);
	wd.offset = 0;
	wd.timeout_ns = 1000;
	expect(fd, "WAKE, a timeout given", ACCDMA_IOC_WAKE, &wd, EINVAL);
	call.flags = 4;
	expect(fd, "CALL, an unknown flag", ACCDMA_IOC_CALL, &call, EINVAL);
	call.flags = ACCDMA_CALL_ANSWER;
	expect(fd, "CALL, an answer with no call", ACCDMA_IOC_CALL, &call, EINVAL);
	close(fd);
	printf("kmod-ioctl: %s\n", failed ? "FAIL" : "ok");
	return failed != 0;
}
