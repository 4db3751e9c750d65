/* SPDX-License-Identifier: MIT */
/*
 * kmod.h - what the module's own files call of each other.
 */
#ifndef ACCDMA_KMOD_H
#define ACCDMA_KMOD_H

#include "queue/os.h"

int accdma_selftest(uint32_t ndev, int *passed, int *failed);
int accdma_chardev_init(void);
void accdma_chardev_exit(void);

#endif /* ACCDMA_KMOD_H */
