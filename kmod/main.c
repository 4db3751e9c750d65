// SPDX-License-Identifier: MIT
/*
 * main.c - accdma.ko's load and unload. The module carries the same core as
 * libaccdma (queue/, dma/, fw_stub/), built by the top-level Kbuild; with
 * selftest=1 it proves at load that the engines run as kernel threads
 * (kmod/selftest.c). /dev/accdma (kmod/chardev.c) reports what the module
 * takes and runs the self-test on demand; processes join worlds there next.
 */
#define pr_fmt(fmt) "accdma: " fmt

#include <linux/module.h>
#include <linux/moduleparam.h>

#include "kmod/accdma_ioctl.h"
#include "kmod/kmod.h"
#include "queue/queue.h"

static bool selftest;
module_param(selftest, bool, 0444);
MODULE_PARM_DESC(selftest, "run the self-test at load (result in the kernel log)");

static uint selftest_devices = 4;
module_param(selftest_devices, uint, 0444);
MODULE_PARM_DESC(selftest_devices, "devices of the self-test's first world (2..16)");

/* Read back by scripts: -1 not run, else how many tests failed. */
static int selftest_failed = -1;
module_param(selftest_failed, int, 0444);
MODULE_PARM_DESC(selftest_failed, "tests the self-test failed (-1: not run)");

static int __init accdma_init(void)
{
	int passed, rc;

	if (selftest && (selftest_devices < 2 || selftest_devices > 16)) {
		pr_err("selftest_devices=%u: out of 2..16\n", selftest_devices);
		return -EINVAL;
	}
	/* A failed self-test still loads: the log says what failed, and the
	 * module can be unloaded as usual. */
	if (selftest)
		accdma_selftest(selftest_devices, &passed, &selftest_failed);
	rc = accdma_chardev_init();
	if (rc) {
		pr_err("registering /dev/%s: %d\n", ACCDMA_DEVICE_NAME, rc);
		return rc;
	}
	pr_info("loaded (firmware %#x, ABI %d)\n", Q_FW_VERSION, ACCDMA_ABI_VERSION);
	return 0;
}

static void __exit accdma_exit(void)
{
	accdma_chardev_exit();
	pr_info("unloaded\n");
}

module_init(accdma_init);
module_exit(accdma_exit);

MODULE_DESCRIPTION("accdma: accelerator DMA queues with engines as kernel threads");
MODULE_LICENSE("Dual MIT/GPL");
