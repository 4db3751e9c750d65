// SPDX-License-Identifier: MIT
/*
 * token_dup.c - whether a list of tokens names one op twice.
 *
 * Waiting on a token twice would consume it and then fail -ESTALE half-way
 * through the list, so accdma_wait_all() asks before it consumes anything.
 */
#include <stdlib.h>
#include <string.h>

#include "driver/internal.h"

#define DUP_PAIRWISE 8 /* lists up to this long are compared pair by pair */
#define DUP_SET_LOCAL 512 /* entries of the set kept on the stack (256 tokens) */

/**
 * drv_tokens_repeat() - does a token appear twice in @tokens?
 * @tokens/@count: the list (non-zero tokens), one the caller found not in
 * strictly increasing order of slots (a list in order cannot repeat).
 *
 * A short list is compared pair by pair, a long one through a small
 * open-addressing set: one pass either way, no sort.
 * Return: 1, 0, or -ENOMEM.
 */
int drv_tokens_repeat(const accdma_token *tokens, int count)
{
	accdma_token local[DUP_SET_LOCAL], *set = local;
	uint64_t size = 16;
	int dup = 0;

	if (count <= DUP_PAIRWISE) {
		for (int i = 1; i < count; i++)
			for (int j = 0; j < i; j++)
				if (tokens[i] == tokens[j])
					return 1;
		return 0;
	}
	while (size < 2 * (uint64_t)count)
		size <<= 1;
	if (size > DUP_SET_LOCAL)
		set = calloc(size, sizeof(*set));
	else
		memset(set, 0, size * sizeof(*set));
	if (!set)
		return -ENOMEM;
	for (int i = 0; i < count && !dup; i++) {
		/* tokens are never 0: 0 marks an empty entry */
		uint64_t h = ((tokens[i] * 0x9e3779b97f4a7c15ull) >> 32) & (size - 1);

		while (set[h] && !(dup = set[h] == tokens[i]))
			h = (h + 1) & (size - 1);
		set[h] = tokens[i];
	}
	if (set != local)
		free(set);
	return dup;
}
