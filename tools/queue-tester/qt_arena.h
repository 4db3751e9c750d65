/* SPDX-License-Identifier: MIT */
/*
 * qt_arena.h - a bump allocator: everything a parsed scenario or a plan owns
 * is freed at once, so a parse error half-way leaks nothing.
 */
#ifndef QT_ARENA_H
#define QT_ARENA_H

#include <stddef.h>

struct qt_chunk;

/** struct qt_arena - a list of chunks; zero-initialise before use. */
struct qt_arena {
	struct qt_chunk *head;
	size_t total;  /* bytes handed out */
	size_t limit;  /* 0: no limit; else qt_alloc fails beyond it */
};

/**
 * qt_alloc() - allocate zeroed memory from an arena.
 * @a: the arena. @n: bytes.
 * Return: the memory (aligned for any type), or NULL when out of memory or past @a->limit.
 */
void *qt_alloc(struct qt_arena *a, size_t n);

/**
 * qt_strndup() - copy @n bytes of @s into the arena as a NUL-terminated string.
 * @a: the arena. @s: the bytes. @n: how many.
 * Return: the copy, or NULL when out of memory.
 */
char *qt_strndup(struct qt_arena *a, const char *s, size_t n);

/**
 * qt_arena_free() - free every allocation of an arena; it may be reused afterwards.
 * @a: the arena.
 */
void qt_arena_free(struct qt_arena *a);

#endif
