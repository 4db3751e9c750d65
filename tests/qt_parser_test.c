/* SPDX-License-Identifier: MIT */
/*
 * qt_parser_test.c - cmocka tests of queue-tester's scenario parser, expression
 * evaluator and expansion: valid files parse into the expected plan, invalid
 * ones fail with file:line:col and what was expected, hostile input is bounded.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "qt_parse.h"
#include "qt_plan.h"

static struct qt_scenario *parse_ok(const char *src)
{
	struct qt_scenario *sc = NULL;
	char err[512];
	int rc = qt_parse("t.acc", src, strlen(src), &sc, err, sizeof(err));

	if (rc)
		print_error("unexpected parse error: %s\n", err);
	assert_int_equal(rc, 0);
	assert_non_null(sc);
	return sc;
}

/* Parse must fail and the message must contain @want. */
static void parse_bad(const char *src, const char *want)
{
	struct qt_scenario *sc = NULL;
	char err[512];
	int rc = qt_parse("t.acc", src, strlen(src), &sc, err, sizeof(err));

	assert_int_equal(rc, -1);
	assert_null(sc);
	if (!strstr(err, want))
		print_error("message '%s' lacks '%s'\n", err, want);
	assert_non_null(strstr(err, want));
}

static int64_t eval_str(const char *expr, int rank, int N)
{
	char src[512], err[512];
	struct qt_scenario *sc;
	struct qt_plan *plan;
	int64_t v;

	snprintf(src, sizeof(src), "buffer b int32 1\nprogram { let v = %s\nfence }\n", expr);
	sc = parse_ok(src);
	assert_int_equal(qt_plan_build(sc, N, 0, N, NULL, &plan, err, sizeof(err)), 0);
	/* re-evaluate the let's expression directly with the base env */
	struct qt_var store[QT_ENV_MAX];
	struct qt_env env = { store, 0, QT_ENV_MAX };

	qt_base_env(&env, rank, N);
	assert_int_equal(qt_eval_int(sc->program->value, &env, &v, err, sizeof(err)), 0);
	qt_plan_free(plan);
	qt_scenario_free(sc);
	return v;
}

static void test_minimal(void **state)
{
	(void)state;
	struct qt_scenario *sc = parse_ok("program { fence }");

	assert_string_equal(sc->name, "t");
	assert_int_equal(sc->ndevices, 1);
	assert_int_equal(sc->devices[0], 2);
	assert_non_null(sc->program);
	assert_int_equal(sc->program->kind, QS_OP);
	assert_int_equal(sc->program->op, QO_FENCE);
	qt_scenario_free(sc);
}

static void test_full_file(void **state)
{
	(void)state;
	const char *src =
		"# comment\n"
		"name \"perm\"\n"
		"devices 2, 4 8\n"
		"timeout 250\n"
		"buffer snd float32 4 = rank\n"
		"buffer rcv float32 4 = -1\n"
		"program {\n"
		"  if even {\n"
		"    send snd to (rank+1)%N tag 3 as s\n"
		"    recv rcv from (rank-1)%N tag 3 after s as r\n"
		"  } else {\n"
		"    recv rcv[0:4] from (rank-1)%N tag 3; send snd to (rank+1)%N tag 3\n"
		"  }\n"
		"}\n"
		"check {\n  expect rcv = (rank-1)%N\n}\n"
		"expect snd[0] = rank\n";
	struct qt_scenario *sc = parse_ok(src);
	struct qt_plan *plan;
	char err[512];

	assert_string_equal(sc->name, "perm");
	assert_int_equal(sc->ndevices, 3);
	assert_int_equal(sc->devices[2], 8);
	assert_int_equal(sc->timeout_ms, 250);
	assert_int_equal(sc->nbufs, 2);
	assert_int_equal(sc->bufs[0].type, QT_FLOAT32);
	assert_non_null(sc->check);
	assert_non_null(sc->check->next);

	assert_int_equal(qt_plan_build(sc, 4, 0, 4, NULL, &plan, err, sizeof(err)), 0);
	/* rank 0 (even): send to 1, recv from 3 depending on the send */
	struct qt_devplan *d0 = &plan->dev[0];

	assert_int_equal(d0->nins, 2);
	assert_int_equal(d0->ins[0].op, QO_SEND);
	assert_int_equal(d0->ins[0].peer, 1);
	assert_int_equal(d0->ins[0].tag, 3);
	assert_int_equal(d0->ins[0].lo, 0);
	assert_int_equal(d0->ins[0].hi, 4);
	assert_int_equal(d0->ins[1].op, QO_RECV);
	assert_int_equal(d0->ins[1].peer, 3);
	assert_int_equal(d0->ins[1].ndeps, 1);
	assert_int_equal(d0->ins[1].deps[0], 0);
	/* rank 1 (odd): recv first */
	assert_int_equal(plan->dev[1].ins[0].op, QO_RECV);
	assert_int_equal(plan->dev[1].ins[0].peer, 0);
	assert_int_equal(plan->dev[1].nchecks, 2);
	assert_int_equal(plan->dev[1].checks[1].hi, 1);
	qt_plan_free(plan);
	qt_scenario_free(sc);
}

static void test_expressions(void **state)
{
	(void)state;
	assert_int_equal(eval_str("(rank - 1) % N", 0, 4), 3);
	assert_int_equal(eval_str("-7 / 2", 0, 2), -4);
	assert_int_equal(eval_str("7 / 2", 0, 2), 3);
	assert_int_equal(eval_str("1 + 2 * 3", 0, 2), 7);
	assert_int_equal(eval_str("(1 + 2) * 3", 0, 2), 9);
	assert_int_equal(eval_str("rank < N/2 ? 10 : 20", 3, 8), 10);
	assert_int_equal(eval_str("rank < N/2 ? 10 : 20", 5, 8), 20);
	assert_int_equal(eval_str("1 << 10 | 3", 0, 2), 1027);
	assert_int_equal(eval_str("rank ^ 1", 6, 8), 7);
	assert_int_equal(eval_str("min(3, rank) + max(1, 2) + abs(-4)", 1, 2), 7);
	assert_int_equal(eval_str("int(2.75) + odd", 1, 2), 3);
	assert_int_equal(eval_str("!0 && 2 >= 2 || 0", 0, 2), 1);
	assert_int_equal(eval_str("0x10 + ~0", 0, 2), 15);
	assert_int_equal(eval_str("9223372036854775807 + 1 < 0", 0, 2), 1); /* wraps, no UB */
}

static void test_plan_repeat_wait(void **state)
{
	(void)state;
	const char *src = "buffer b int32 8\n"
			  "program {\n"
			  "  repeat 3 as k { send b[k] to 1 tag k as s }\n"
			  "  wait s\n"
			  "  exec add b[0:2] k0 + i after s\n"
			  "  wait all\n"
			  "}\n";
	/* k0 is unknown: expansion succeeds (exec values are evaluated when posting) */
	struct qt_scenario *sc = parse_ok(src);
	struct qt_plan *plan;
	char err[512];

	assert_int_equal(qt_plan_build(sc, 2, 0, 2, NULL, &plan, err, sizeof(err)), 0);
	struct qt_devplan *d = &plan->dev[0];

	assert_int_equal(d->nins, 6);
	assert_int_equal(d->ins[2].tag, 2);
	assert_int_equal(d->ins[2].lo, 2);
	assert_int_equal(d->ins[2].hi, 3);
	assert_int_equal(d->ins[3].kind, QI_WAIT);
	assert_int_equal(d->ins[3].nwaits, 1);
	assert_int_equal(d->ins[3].waits[0], 2); /* s names the last send */
	assert_int_equal(d->ins[4].deps[0], 2);
	assert_int_equal(d->ins[5].kind, QI_WAIT);
	assert_int_equal(d->ins[5].nwaits, 3); /* sends 0, 1 and the exec */
	qt_plan_free(plan);
	qt_scenario_free(sc);
}

static void test_expect_status(void **state)
{
	(void)state;
	struct qt_scenario *sc = parse_ok("buffer b bytes 4\nprogram {\n"
					  " recv b from 0 tag 1 expect TIMEOUT\n"
					  " send b to 1 badkey expect bad_key as x\n}\n");

	assert_int_equal(sc->program->expect, QT_EXPECT_TIMEOUT);
	assert_int_equal(sc->program->next->expect, ACCDMA_ST_BAD_KEY);
	assert_int_equal(sc->program->next->badkey, 1);
	assert_string_equal(sc->program->next->as, "x");
	assert_int_equal(qt_status_from_name("Truncated"), ACCDMA_ST_TRUNCATED);
	assert_string_equal(qt_status_name(ACCDMA_ST_NOT_ATTEMPTED), "NOT_ATTEMPTED");
	qt_scenario_free(sc);
}

static void test_syntax_errors(void **state)
{
	(void)state;
	parse_bad("buffer b int32 4\nprogram {\n  send b tp 1\n}\n", "t.acc:3:10: expected 'to PEER'");
	parse_bad("program {\n  send x to 1\n}\n", "t.acc:2:8: unknown buffer 'x'");
	parse_bad("program { fence\n", "t.acc:1:9: '{' is never closed");
	parse_bad("buffer b int32 4\nprogram { send b to (1 }", "t.acc:2:24: expected ')'");
	parse_bad("buffer b int33 4", "t.acc:1:10: expected a type (int32, float32, bytes), got 'int33'");
	parse_bad("devices 0\nprogram { fence }", "t.acc:1:1: device count 0 outside 1..1024");
	parse_bad("devices rank\nprogram { fence }", "must be a constant integer");
	parse_bad("buffer b int32 4\nprogram { recv b from 0 expect maybe }", "unknown status 'maybe'");
	parse_bad("buffer b int32 4\nbuffer b int32 4\nprogram { fence }", "t.acc:2:8: buffer 'b' declared twice");
	parse_bad("fence", "t.acc:1:1: expected 'name', 'devices'");
	parse_bad("buffer b int32 4\n", "no 'program' block");
	parse_bad("program { fence fence }", "t.acc:1:17: expected end of line or ';'");
	parse_bad("check { send }\nprogram { fence }", "ops belong in 'program'");
	parse_bad("program { fence }\nprogram { fence }", "a second 'program' block");
	parse_bad("program { exec add }", "expected a buffer name");
	parse_bad("program { exec frob }", "expected an exec step");
	parse_bad("name \"unterminated\nprogram { fence }", "t.acc:1:6: unterminated string");
	parse_bad("program { fence } @", "t.acc:1:19: unexpected character '@'");
	parse_bad("program { let x = 99999999999999999999 }", "integer literal malformed or too large");
	parse_bad("program { let x = foo(1) }", "unknown function 'foo'");
	parse_bad("program { let tag = 1 }", "expected a variable name, got 'tag'");
	parse_bad("program { fence tag 1 }", "this op takes no tag");
	parse_bad("buffer b int32 4\nprogram { write b to 1 at b[0:2] }", "takes an offset, not a range");
}

static void test_expansion_errors(void **state)
{
	(void)state;
	static const struct {
		const char *src;
		const char *want;
	} cases[] = {
		{ "buffer b int32 4\nprogram { send b to rank + 1 }", "peer 2 outside 0..1" },
		{ "buffer b int32 4\nprogram { send b to 1 after nope }", "unknown token 'nope'" },
		{ "buffer b int32 4\nprogram { let z = 1 / (rank - rank) }", "division by zero" },
		{ "buffer b int32 4\nprogram { exec add b[2:9] 1 }", "past the end of 'b'" },
		{ "buffer b int32 0\nprogram { fence }", "buffer 'b' has 0 elements" },
		{ "buffer b int32 4\nprogram { repeat 100000000 { repeat 100000000 { fence } } }",
		  "more than" },
		{ "buffer b int32 4\nprogram { send b to 1 as s\n wait s\n wait s }", "already waited" },
		{ "buffer b int32 4\nprogram { send b to 1 tag -1 }", "negative tag" },
		{ "buffer b int32 4\nprogram { let q = undefined_var }", "unknown variable" },
		{ "buffer b int32 4\nprogram { let q = 1 << 64 }", "shift count" },
	};
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		struct qt_scenario *sc = parse_ok(cases[k].src);
		struct qt_plan *plan = NULL;
		char err[512] = "";
		struct qt_plan_limits lim;

		qt_plan_default_limits(&lim);
		lim.max_ins = 100000;
		lim.max_steps = 1000000;
		assert_int_equal(qt_plan_build(sc, 2, 0, 2, &lim, &plan, err, sizeof(err)), -1);
		assert_null(plan);
		if (!strstr(err, cases[k].want))
			print_error("case %zu: message '%s' lacks '%s'\n", k, err, cases[k].want);
		assert_non_null(strstr(err, cases[k].want));
		qt_scenario_free(sc);
	}
}

static void test_hostile_input(void **state)
{
	(void)state;
	size_t n = 100000;
	char *buf = malloc(n + 64);
	struct qt_scenario *sc;
	char err[512];

	assert_non_null(buf);
	/* deep parentheses */
	strcpy(buf, "program { let x = ");
	size_t l = strlen(buf);

	memset(buf + l, '(', n);
	buf[l + n] = '\0';
	assert_int_equal(qt_parse("t.acc", buf, strlen(buf), &sc, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "nested too deeply"));
	/* a long chain of additions (left-deep tree) */
	strcpy(buf, "program { let x = 1");
	l = strlen(buf);
	for (size_t k = 0; k + 2 < n; k += 2) {
		buf[l++] = '+';
		buf[l++] = '1';
	}
	buf[l] = '\0';
	assert_int_equal(qt_parse("t.acc", buf, l, &sc, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "nested too deeply"));
	/* deep blocks */
	strcpy(buf, "program ");
	l = strlen(buf);
	for (int k = 0; k < 1000; k++) {
		memcpy(buf + l, "{ if 1 ", 7);
		l += 7;
	}
	buf[l] = '\0';
	assert_int_equal(qt_parse("t.acc", buf, l, &sc, err, sizeof(err)), -1);
	/* binary garbage, including NUL bytes, without a terminating NUL */
	for (size_t k = 0; k < 4096; k++)
		buf[k] = (char)((k * 2654435761u) >> 13);
	assert_int_equal(qt_parse("t.acc", buf, 4096, &sc, err, sizeof(err)), -1);
	/* every prefix of a valid file either parses or fails cleanly */
	const char *good = "name \"x\"\ndevices 2 4\nbuffer b float32 4 = rank + i * 0.5\n"
			   "program {\n if rank == 0 { send b[1:3] to 1 tag 2 as s\n wait s }"
			   " else { recv b[0:2] from 0 tag 2 expect ok }\n}\n"
			   "check { if rank == 1 { expect b[0:2] = 0.5 + i * 0.5 } }\n";
	for (size_t k = 0; k <= strlen(good); k++) {
		memcpy(buf, good, k);
		if (qt_parse("t.acc", buf, k, &sc, err, sizeof(err)) == 0)
			qt_scenario_free(sc);
	}
	free(buf);
}

/* A chain of 40 000 `else if` links parses and expands without a stack frame
 * per link (expansion overflowed the stack at 40 000 links, 10 000 under
 * ASan), each rank taking the branch its condition picks, and the step
 * limit still counts every link it walks. */
static void test_else_if_chain(void **state)
{
	(void)state;
	const int links = 40000;
	size_t cap = (size_t)links * 48 + 256, l;
	char *buf = malloc(cap), err[512];
	struct qt_scenario *sc;
	struct qt_plan *plan = NULL;
	struct qt_plan_limits lim;

	assert_non_null(buf);
	/* link k is taken when v == k + 2: rank 3 takes link 1, rank 2 the last link */
	l = (size_t)snprintf(buf, cap, "buffer b int32 4\nprogram {\n let v = rank == 2 ? %d : rank\n"
			     " if v == -1 { fence }\n", links + 1);
	for (int k = 0; k < links; k++)
		l += (size_t)snprintf(buf + l, cap - l, " else if v == %d { send b to 0 tag %d }\n",
				      k + 2, k);
	l += (size_t)snprintf(buf + l, cap - l, " else { recv b from 3 tag 77 }\n}\n");
	assert_true(l < cap);
	assert_int_equal(qt_parse("t.acc", buf, l, &sc, err, sizeof(err)), 0);
	assert_int_equal(qt_plan_build(sc, 4, 0, 4, NULL, &plan, err, sizeof(err)), 0);
	for (int r = 0; r < 2; r++) { /* through every link to the else */
		assert_int_equal(plan->dev[r].nins, 1);
		assert_int_equal(plan->dev[r].ins[0].op, QO_RECV);
		assert_int_equal(plan->dev[r].ins[0].peer, 3);
		assert_int_equal(plan->dev[r].ins[0].tag, 77);
	}
	assert_int_equal(plan->dev[2].nins, 1);
	assert_int_equal(plan->dev[2].ins[0].op, QO_SEND);
	assert_int_equal(plan->dev[2].ins[0].tag, links - 1);
	assert_int_equal(plan->dev[3].nins, 1);
	assert_int_equal(plan->dev[3].ins[0].op, QO_SEND);
	assert_int_equal(plan->dev[3].ins[0].tag, 1);
	qt_plan_free(plan);
	plan = NULL;
	qt_plan_default_limits(&lim);
	lim.max_steps = 1000;
	assert_int_equal(qt_plan_build(sc, 4, 0, 4, &lim, &plan, err, sizeof(err)), -1);
	assert_null(plan);
	assert_non_null(strstr(err, "more than 1000 steps"));
	qt_scenario_free(sc);
	free(buf);
}

/* Storing into an int32 element: integers wrap modulo 2^32, floats truncate
 * toward zero and saturate (docs/scenarios.md); 3e9 wrapped before. */
static void test_int32_store(void **state)
{
	(void)state;
	struct qt_val f = { 1, 0, 3e9 };

	assert_int_equal(qt_val_int32(f), INT32_MAX);
	f.f = -3e9;
	assert_int_equal(qt_val_int32(f), INT32_MIN);
	f.f = -2.75;
	assert_int_equal(qt_val_int32(f), -2);
	f.f = 1e300;
	assert_int_equal(qt_val_int32(f), INT32_MAX);
	f.f = NAN;
	assert_int_equal(qt_val_int32(f), 0);
	assert_int_equal(qt_val_int32(qt_val_int(3000000000ll)), -1294967296);
	assert_int_equal(qt_val_int32(qt_val_int(-1)), -1);
	assert_int_equal(qt_val_int32(qt_val_int(INT64_MAX)), -1);
}

/**
 * main() - run the parser tests.
 * Return: the number of failed tests.
 */
int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_minimal),
		cmocka_unit_test(test_full_file),
		cmocka_unit_test(test_expressions),
		cmocka_unit_test(test_plan_repeat_wait),
		cmocka_unit_test(test_expect_status),
		cmocka_unit_test(test_syntax_errors),
		cmocka_unit_test(test_expansion_errors),
		cmocka_unit_test(test_hostile_input),
		cmocka_unit_test(test_else_if_chain),
		cmocka_unit_test(test_int32_store),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
