/* SPDX-License-Identifier: MIT */
/* qt_arena.c - bump allocator for scenario ASTs and plans. */
#include "qt_arena.h"

#include <stdalign.h>
#include <stdlib.h>
#include <string.h>

struct qt_chunk {
	struct qt_chunk *next;
	size_t size;
	size_t used;
	alignas(max_align_t) unsigned char data[];
};

#define QT_CHUNK_MIN (64 * 1024)

/**
 * qt_alloc() - allocate zeroed memory from an arena.
 * @a: the arena. @n: bytes.
 * Return: the memory, or NULL when out of memory or past the arena's limit.
 */
void *qt_alloc(struct qt_arena *a, size_t n)
{
	const size_t al = alignof(max_align_t);
	struct qt_chunk *c = a->head;

	if (n == 0)
		n = 1;
	if (n > ((size_t)1 << 40))
		return NULL;
	n = (n + al - 1) & ~(al - 1);
	if (a->limit && a->total + n > a->limit)
		return NULL;
	if (!c || c->size - c->used < n) {
		size_t sz = n > QT_CHUNK_MIN ? n : QT_CHUNK_MIN;

		c = malloc(sizeof(*c) + sz);
		if (!c)
			return NULL;
		c->size = sz;
		c->used = 0;
		c->next = a->head;
		a->head = c;
	}
	void *p = c->data + c->used;

	c->used += n;
	a->total += n;
	memset(p, 0, n);
	return p;
}

/**
 * qt_strndup() - copy @n bytes of @s into the arena as a NUL-terminated string.
 * @a: the arena. @s: the bytes. @n: how many.
 * Return: the copy, or NULL when out of memory.
 */
char *qt_strndup(struct qt_arena *a, const char *s, size_t n)
{
	char *d = qt_alloc(a, n + 1);

	if (!d)
		return NULL;
	if (n)
		memcpy(d, s, n);
	d[n] = '\0';
	return d;
}

/**
 * qt_arena_free() - free every allocation of an arena.
 * @a: the arena.
 */
void qt_arena_free(struct qt_arena *a)
{
	struct qt_chunk *c = a->head;

	while (c) {
		struct qt_chunk *n = c->next;

		free(c);
		c = n;
	}
	a->head = NULL;
	a->total = 0;
}
