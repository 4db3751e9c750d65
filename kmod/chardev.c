// SPDX-License-Identifier: MIT
/*
 * chardev.c - /dev/accdma, a misc device: its ioctls report what the module
 * takes, run the self-test on demand, and let a process join a world and
 * wait and wake on its words (kjoin.c); mmap maps the world. An open file
 * pins the module (fops.owner), and a mapping holds its file, so rmmod
 * fails with EBUSY until the last one is closed and unmapped.
 */
#define pr_fmt(fmt) "accdma: " fmt

#include <linux/capability.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "kmod/accdma_ioctl.h"
#include "kmod/kjoin.h"
#include "kmod/kmod.h"
#include "queue/queue.h"

/* One self-test at a time: it starts threads and takes tens of MiB. */
static DEFINE_MUTEX(accdma_selftest_lock);

/* Every byte of @p (@n bytes) zero? Pads and reserved fields must be. */
static bool accdma_zeroed(const void *p, size_t n)
{
	return !memchr_inv(p, 0, n);
}

static long accdma_ioc_info(void __user *argp)
{
	struct accdma_ioc_info info = { .size = sizeof(info) };
	u32 size;

	if (get_user(size, (u32 __user *)argp))
		return -EFAULT;
	if (size != sizeof(info))
		return -EINVAL;
	info.abi_version = ACCDMA_ABI_VERSION;
	info.fw_version = Q_FW_VERSION;
	info.max_devices = Q_MAX_DEVICES;
	info.max_queues = Q_MAX_QUEUES;
	info.max_engines = Q_MAX_ENGINES;
	info.max_depth = 65536;
	info.eager_max = ACCDMA_EAGER_MAX;
	return copy_to_user(argp, &info, sizeof(info)) ? -EFAULT : 0;
}

static long accdma_ioc_selftest(void __user *argp)
{
	struct accdma_ioc_selftest st;

	if (copy_from_user(&st, argp, sizeof(st)))
		return -EFAULT;
	if (st.size != sizeof(st) || st.flags || st.pad || st.passed || st.failed ||
	    !accdma_zeroed(st.reserved, sizeof(st.reserved)) || st.devices < 2 ||
	    st.devices > 16)
		return -EINVAL;
	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	if (mutex_lock_interruptible(&accdma_selftest_lock))
		return -EINTR;
	/* a test that fails, or whose world cannot be opened, counts as failed */
	accdma_selftest(st.devices, &st.passed, &st.failed);
	mutex_unlock(&accdma_selftest_lock);
	return copy_to_user(argp, &st, sizeof(st)) ? -EFAULT : 0;
}

static long accdma_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	void __user *argp = (void __user *)arg;

	switch (cmd) {
	case ACCDMA_IOC_INFO:
		return accdma_ioc_info(argp);
	case ACCDMA_IOC_SELFTEST:
		return accdma_ioc_selftest(argp);
	case ACCDMA_IOC_JOIN:
		return kj_join(file->private_data, argp);
	case ACCDMA_IOC_WAIT:
		return kj_wait(file->private_data, argp);
	case ACCDMA_IOC_WAKE:
		return kj_wake(file->private_data, argp);
	case ACCDMA_IOC_CALL:
		return kj_call(file->private_data, argp);
	case ACCDMA_IOC_POLL:
		return kj_poll(file->private_data, argp);
	default:
		return -ENOTTY;
	}
}

static int accdma_fop_open(struct inode *inode, struct file *file)
{
	file->private_data = kzalloc(sizeof(struct kj_file), GFP_KERNEL);
	return file->private_data ? 0 : -ENOMEM;
}

/* The death notice: the process closed its last reference, or died. */
static int accdma_fop_release(struct inode *inode, struct file *file)
{
	kj_release(file->private_data);
	kfree(file->private_data);
	return 0;
}

static int accdma_fop_mmap(struct file *file, struct vm_area_struct *vma)
{
	return kj_mmap(file->private_data, vma);
}

static const struct file_operations accdma_fops = {
	.owner = THIS_MODULE,
	.open = accdma_fop_open,
	.release = accdma_fop_release,
	.mmap = accdma_fop_mmap,
	.unlocked_ioctl = accdma_ioctl,
	/* the structures are the same for 32-bit callers: fixed width, padded */
	.compat_ioctl = compat_ptr_ioctl,
	.llseek = noop_llseek,
};

static struct miscdevice accdma_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = ACCDMA_DEVICE_NAME,
	.fops = &accdma_fops,
	.mode = 0600,
};

/**
 * accdma_chardev_init() - register /dev/accdma.
 *
 * Return: 0, or the error misc_register() gave.
 */
int accdma_chardev_init(void)
{
	return misc_register(&accdma_misc);
}

/**
 * accdma_chardev_exit() - remove /dev/accdma (no file is open: each pins
 * the module).
 */
void accdma_chardev_exit(void)
{
	misc_deregister(&accdma_misc);
}
