/* SPDX-License-Identifier: MIT */
/*
 * rdv.h - the rendezvous table's operations (rdv.c). Each but
 * fw_rdv_lock() is called with the table's lock held.
 */
#ifndef ACCDMA_FW_RDV_H
#define ACCDMA_FW_RDV_H

#include "fw_stub/peer.h"

/**
 * fw_rdv_lock() - take table @r's lock, taking it over from a holder that
 * is gone; give up if @fd is stopping.
 * Return: 0 with the lock held, -1 if not taken (treat the table as unavailable).
 */
int fw_rdv_lock(struct fw_device *fd, const struct fw_rdv *r);

/** fw_rdv_unlock() - release table @r's lock. */
void fw_rdv_unlock(const struct fw_rdv *r);

/** fw_rdv_find() - the entry for (@src, @tag, @seq) in @r, or NULL. */
struct q_rdv *fw_rdv_find(const struct fw_rdv *r, int32_t src, uint64_t tag, uint64_t seq);

/** fw_rdv_insert() - a new entry for (@src, @tag, @seq) in @r, or NULL if the table is full. */
struct q_rdv *fw_rdv_insert(const struct fw_rdv *r, int32_t src, uint64_t tag, uint64_t seq);

/** fw_rdv_set_side() - set whose entry @e is (keeps @r's count of send entries). */
void fw_rdv_set_side(const struct fw_rdv *r, struct q_rdv *e, uint16_t side);

/** fw_rdv_remove() - take entry @e out of @r. */
void fw_rdv_remove(const struct fw_rdv *r, struct q_rdv *e);

#endif /* ACCDMA_FW_RDV_H */
