// SPDX-License-Identifier: MIT
/*
 * kmod-ioctl.c - checks /dev/accdma's ioctls from user space, in the test VM
 * (built static by `make kmod-tests`; run by guest-kmod.sh): INFO answers
 * with this ABI, every argument that breaks the ABI's rules is refused
 * (a wrong size, a pad, flag or reserved word not zero, a bad pointer, an
 * unknown command), and SELFTEST runs the self-test on demand.
 * Prints one line per check; exits 0 if all passed.
 * Usage: kmod-ioctl [/dev/accdma]
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
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
	close(fd);
	printf("kmod-ioctl: %s\n", failed ? "FAIL" : "ok");
	return failed != 0;
}
