// SPDX-License-Identifier: MIT
/*
 * transport.c - the transports this build has.
 */
#include "driver/transport.h"

const struct drv_transport *drv_transport_find(enum accdma_transport t)
{
	switch (t) {
	case ACCDMA_TRANSPORT_LOCAL:
		return &drv_transport_local;
	case ACCDMA_TRANSPORT_SHM:
		return &drv_transport_shm;
	case ACCDMA_TRANSPORT_LOOP:
		return &drv_transport_loop;
	case ACCDMA_TRANSPORT_KMOD:
		return &drv_transport_kmod;
#ifdef ACCDMA_HAVE_VERBS
	case ACCDMA_TRANSPORT_VERBS:
		return &drv_transport_verbs;
#endif
	default:
		return NULL;
	}
}
