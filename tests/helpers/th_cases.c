/* SPDX-License-Identifier: MIT */
/*
 * th_cases.c - running one test case at a time, and one case per configuration.
 *
 * Every test binary links this file, so every one of them takes a case-name
 * filter without code of its own: `build/tests/test_fence 'test_fence_*'`, or
 * ACCDMA_TEST_FILTER='...' in the environment (what `make check` passes on).
 * ACCDMA_TEST_SKIP='...' skips the cases it matches. Patterns are cmocka's:
 * `*` and `?` wildcards, matched against the whole case name.
 */
#include "helpers/th.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char th_argv1[256];

/* The first argument, from /proc (a constructor has no argv): only one that is
 * not an option, since shm tests run themselves again with --shm-child ... */
static const char *first_arg(void)
{
	FILE *f = fopen("/proc/self/cmdline", "r");
	size_t n;
	char buf[4096];
	const char *a1;

	if (!f)
		return NULL;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	a1 = buf + strlen(buf) + 1; /* past argv[0] and its NUL */
	if (a1 >= buf + n || !*a1 || *a1 == '-')
		return NULL;
	snprintf(th_argv1, sizeof(th_argv1), "%s", a1);
	return th_argv1;
}

__attribute__((constructor)) static void th_filters_init(void)
{
	const char *f = first_arg(), *skip = getenv("ACCDMA_TEST_SKIP");

	if (!f)
		f = getenv("ACCDMA_TEST_FILTER");
	if (f && *f)
		cmocka_set_test_filter(f);
	if (skip && *skip)
		cmocka_set_skip_filter(skip);
}

const char *th_test_filter(void)
{
	const char *f = th_argv1[0] ? th_argv1 : getenv("ACCDMA_TEST_FILTER");

	return f && *f ? f : NULL;
}

int th_quick(void)
{
	const char *e = getenv("ACCDMA_TEST_QUICK");

	return e && *e && strcmp(e, "0");
}

void th_case(struct th_cases *c, CMUnitTestFunction fn, void *arg, const char *fmt, ...)
{
	va_list ap;
	char *name;

	if (c->n == c->cap) {
		int cap = c->cap ? 2 * c->cap : 16;
		struct CMUnitTest *t = realloc(c->t, (size_t)cap * sizeof(*t));

		if (!t) {
			fprintf(stderr, "th_case: out of memory\n");
			exit(1);
		}
		c->t = t;
		c->cap = cap;
	}
	va_start(ap, fmt);
	if (vasprintf(&name, fmt, ap) < 0) {
		fprintf(stderr, "th_case: out of memory\n");
		exit(1);
	}
	va_end(ap);
	c->t[c->n++] = (struct CMUnitTest){ .name = name, .test_func = fn, .initial_state = arg };
}

int th_run_cases(const char *group, struct th_cases *c, CMFixtureFunction setup,
		 CMFixtureFunction teardown)
{
	int rc = _cmocka_run_group_tests(group, c->t, (size_t)c->n, setup, teardown);

	for (int i = 0; i < c->n; i++)
		free((char *)c->t[i].name);
	free(c->t);
	*c = (struct th_cases){ 0 };
	return rc;
}
