/* SPDX-License-Identifier: MIT */
/*
 * qt_fuzz.c - libFuzzer target: parse arbitrary bytes as a scenario and, when
 * that succeeds, expand it for each of its device counts (small limits), which
 * exercises the lexer, parser and expression evaluator. Built by `make fuzz`.
 */
#include <stddef.h>
#include <stdint.h>

#include "qt_parse.h"
#include "qt_plan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/**
 * LLVMFuzzerTestOneInput() - one fuzz input.
 * @data/@size: the bytes.
 * Return: 0.
 */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct qt_scenario *sc;
	struct qt_plan_limits lim = {
		.max_ins = 20000, .max_steps = 200000, .max_buf_bytes = 1 << 20,
		.max_dev_bytes = 4 << 20,
	};
	char err[512];

	if (qt_parse("fuzz.acc", (const char *)data, size, &sc, err, sizeof(err)))
		return 0;
	for (int k = 0; k < sc->ndevices; k++) {
		struct qt_plan *plan;
		int N = sc->devices[k] > 16 ? 16 : sc->devices[k];

		if (qt_plan_build(sc, N, 0, N, &lim, &plan, err, sizeof(err)) == 0)
			qt_plan_free(plan);
	}
	qt_scenario_free(sc);
	return 0;
}
