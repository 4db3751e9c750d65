/* SPDX-License-Identifier: MIT */
/*
 * kjoin.h - processes joining worlds through /dev/accdma (kjoin.c): what
 * chardev.c calls for a file.
 */
#ifndef ACCDMA_KMOD_KJOIN_H
#define ACCDMA_KMOD_KJOIN_H

#include <linux/compiler_types.h>
#include <linux/types.h>

struct kj_world;
struct vm_area_struct;

/**
 * struct kj_file - an open /dev/accdma.
 * @w: the world it joined, or NULL.
 * @first: its first device.
 * @count: its devices.
 * @call_stop: ACCDMA_CALL_STOP came: its CALLs end.
 */
struct kj_file {
	struct kj_world *w;
	u32 first;
	u32 count;
	bool call_stop;
};

long kj_join(struct kj_file *f, void __user *argp);
long kj_wait(struct kj_file *f, void __user *argp);
long kj_wake(struct kj_file *f, void __user *argp);
long kj_call(struct kj_file *f, void __user *argp);
int kj_mmap(struct kj_file *f, struct vm_area_struct *vma);
void kj_release(struct kj_file *f);

#endif /* ACCDMA_KMOD_KJOIN_H */
