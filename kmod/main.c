// SPDX-License-Identifier: MIT
/*
 * main.c - accdma.ko's load and unload. The module carries the same core as
 * libaccdma (queue/, dma/, fw_stub/), built by the top-level Kbuild.
 */
#define pr_fmt(fmt) "accdma: " fmt

#include <linux/module.h>

#include "queue/queue.h"

static int __init accdma_init(void)
{
	pr_info("loaded (firmware %#x)\n", Q_FW_VERSION);
	return 0;
}

static void __exit accdma_exit(void)
{
	pr_info("unloaded\n");
}

module_init(accdma_init);
module_exit(accdma_exit);

MODULE_DESCRIPTION("accdma: accelerator DMA queues with engines as kernel threads");
MODULE_LICENSE("Dual MIT/GPL");
