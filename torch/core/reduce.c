// SPDX-License-Identifier: MIT
/*
 * reduce.c - elementwise reductions of two staging buffers, run on the
 * device's engine as exec ops. Half precision is widened to float for the
 * arithmetic and rounded back to nearest even, as torch's CPU kernels do.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "atc.h"

#define LOOP(T, EXPR)                                      \
	do {                                               \
		T *d = dst;                                \
		const T *s = src;                          \
		for (uint64_t i = 0; i < count; i++) {     \
			T a = d[i], b = s[i];              \
			d[i] = (EXPR);                     \
		}                                          \
	} while (0)

#define ARITH(T)                                                      \
	switch (op) {                                                 \
	case ATC_SUM: LOOP(T, (T)(a + b)); return 0;                  \
	case ATC_PROD: LOOP(T, (T)(a * b)); return 0;                 \
	case ATC_MIN: LOOP(T, a < b ? a : b); return 0;               \
	case ATC_MAX: LOOP(T, a > b ? a : b); return 0;               \
	default: return -EINVAL;                                      \
	}

/* Signed integers wrap, as in torch: the arithmetic is done unsigned. */
#define ARITH_U(T, U)                                                 \
	switch (op) {                                                 \
	case ATC_SUM: LOOP(T, (T)((U)a + (U)b)); return 0;            \
	case ATC_PROD: LOOP(T, (T)((U)a * (U)b)); return 0;           \
	case ATC_MIN: LOOP(T, a < b ? a : b); return 0;               \
	case ATC_MAX: LOOP(T, a > b ? a : b); return 0;               \
	default: return -EINVAL;                                      \
	}

static float bf16_to_f(uint16_t h)
{
	uint32_t u = (uint32_t)h << 16;
	float f;

	memcpy(&f, &u, 4);
	return f;
}

static uint16_t f_to_bf16(float f)
{
	uint32_t u;

	memcpy(&u, &f, 4);
	if ((u & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((u >> 16) | 0x40); /* NaN stays a quiet NaN */
	u += 0x7fffu + ((u >> 16) & 1);
	return (uint16_t)(u >> 16);
}

static float fop(float a, float b, int op)
{
	switch (op) {
	case ATC_SUM: return a + b;
	case ATC_PROD: return a * b;
	case ATC_MIN: return a < b ? a : b;
	default: return a > b ? a : b;
	}
}

static int reduce_bf16(uint16_t *d, const uint16_t *s, uint64_t count, int op)
{
	for (uint64_t i = 0; i < count; i++)
		d[i] = f_to_bf16(fop(bf16_to_f(d[i]), bf16_to_f(s[i]), op));
	return 0;
}

static int reduce_f16(_Float16 *d, const _Float16 *s, uint64_t count, int op)
{
	for (uint64_t i = 0; i < count; i++)
		d[i] = (_Float16)fop((float)d[i], (float)s[i], op);
	return 0;
}

/* Complex numbers as (re, im) pairs: sum and product only. */
#define COMPLEX(T)                                                        \
	do {                                                              \
		T *d = dst;                                               \
		const T *s = src;                                         \
		for (uint64_t i = 0; i < count; i++) {                    \
			T ar = d[2 * i], ai = d[2 * i + 1];               \
			T br = s[2 * i], bi = s[2 * i + 1];               \
			if (op == ATC_SUM) {                              \
				d[2 * i] = ar + br;                       \
				d[2 * i + 1] = ai + bi;                   \
			} else {                                          \
				d[2 * i] = ar * br - ai * bi;             \
				d[2 * i + 1] = ar * bi + ai * br;         \
			}                                                 \
		}                                                         \
	} while (0)

int atc_reduce_supported(int dtype, int op)
{
	if (dtype < 0 || dtype >= ATC__NDTYPES || op < 0 || op >= ATC__NREDOPS)
		return 0;
	if ((dtype == ATC_C64 || dtype == ATC_C128) && (op == ATC_MIN || op == ATC_MAX))
		return 0;
	return 1;
}

int atc_reduce(void *dst, const void *src, uint64_t count, int dtype, int op)
{
	if (!atc_reduce_supported(dtype, op))
		return -EINVAL;
	switch (dtype) {
	case ATC_F32: ARITH(float);
	case ATC_F64: ARITH(double);
	case ATC_F16: return reduce_f16(dst, src, count, op);
	case ATC_BF16: return reduce_bf16(dst, src, count, op);
	case ATC_I8: ARITH(int8_t);
	case ATC_U8: ARITH(uint8_t);
	case ATC_I16: ARITH(int16_t);
	case ATC_I32: ARITH_U(int32_t, uint32_t);
	case ATC_I64: ARITH_U(int64_t, uint64_t);
	case ATC_BOOL:
		/* torch: sum and max are "or", product and min are "and". */
		if (op == ATC_SUM || op == ATC_MAX)
			LOOP(uint8_t, (uint8_t)(a || b));
		else
			LOOP(uint8_t, (uint8_t)(a && b));
		return 0;
	case ATC_C64: COMPLEX(float); return 0;
	case ATC_C128: COMPLEX(double); return 0;
	default: return -EINVAL;
	}
}

int atc_red_exec(void *arg)
{
	const struct atc_red *r = arg;

	return atc_reduce(r->dst, r->src, r->count, r->dtype, r->op) ? 1 : 0;
}
