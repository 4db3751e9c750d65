// SPDX-License-Identifier: MIT
/*
 * status.c - names of statuses, op kinds and stages.
 */
#include "include/accdma.h"

const char *accdma_status_str(enum accdma_status st)
{
	static const char *const names[] = {
		[ACCDMA_OK] = "OK",
		[ACCDMA_ST_NOT_ATTEMPTED] = "NOT_ATTEMPTED",
		[ACCDMA_ST_BAD_KEY] = "BAD_KEY",
		[ACCDMA_ST_OUT_OF_BOUNDS] = "OUT_OF_BOUNDS",
		[ACCDMA_ST_BAD_LENGTH] = "BAD_LENGTH",
		[ACCDMA_ST_TRUNCATED] = "TRUNCATED",
		[ACCDMA_ST_PEER_ERROR] = "PEER_ERROR",
		[ACCDMA_ST_CANCELED] = "CANCELED",
		[ACCDMA_ST_FLUSHED] = "FLUSHED",
		[ACCDMA_ST_EXEC_FAILED] = "EXEC_FAILED",
		[ACCDMA_ST_DMA_ERROR] = "DMA_ERROR",
		[ACCDMA_ST_PEER_LOST] = "PEER_LOST",
	};

	if ((unsigned int)st >= ACCDMA_ST__COUNT)
		return "UNKNOWN";
	return names[st];
}

const char *accdma_op_kind_str(enum accdma_op_kind kind)
{
	static const char *const names[] = {
		[ACCDMA_OP_SEND] = "send",	[ACCDMA_OP_RECV] = "recv",
		[ACCDMA_OP_WRITE] = "write",	[ACCDMA_OP_FENCE] = "fence",
		[ACCDMA_OP_EXEC] = "exec",	[ACCDMA_OP_AFTER_ALL] = "after_all",
		[ACCDMA_OP_ZERO] = "zero",
	};

	if ((unsigned int)kind >= ACCDMA_OP__COUNT || !names[kind])
		return "unknown";
	return names[kind];
}

const char *accdma_op_stage_str(enum accdma_op_stage stage)
{
	static const char *const names[] = {
		[ACCDMA_STAGE_POSTED] = "posted, not yet read by the engine",
		[ACCDMA_STAGE_BLOCKED] = "behind a fence",
		[ACCDMA_STAGE_DEPS] = "waiting for dependencies",
		[ACCDMA_STAGE_PEER] = "waiting for the matching op on the peer",
		[ACCDMA_STAGE_RUNNING] = "running",
		[ACCDMA_STAGE_DONE] = "done",
	};

	if ((unsigned int)stage > ACCDMA_STAGE_DONE)
		return "unknown";
	return names[stage];
}
