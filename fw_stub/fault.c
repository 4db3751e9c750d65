// SPDX-License-Identifier: MIT
/*
 * fault.c - fault-injection points of the firmware stub.
 *
 * Each site has a countdown: arming it with n makes the n-th next pass fail.
 * The sites are the places real hardware fails: reading a descriptor, moving
 * a matched transfer, running a compute step, ringing a peer's doorbell for
 * an eager message or waking host waiters at a completion (the wake-up is
 * lost); and, in dma/, each data mover.
 * Two more points let a test make a race happen rather than a failure: the
 * moment an engine goes to sleep, and the middle of its pass (fw_race_set()).
 */

#include "fw_stub/fw_internal.h"

static _Atomic uint32_t countdown[FW_FAULT__COUNT];

void fw_fault_arm(enum fw_fault_site site, uint32_t nth)
{
	if (site < FW_FAULT__COUNT)
		os_store(&countdown[site], nth, OS_SEQ_CST);
}

/**
 * fw_fault_hit() - the fault-injection point: true when this pass is the armed one.
 * @site: the site.
 */
int fw_fault_hit(enum fw_fault_site site)
{
	return dma_fault_countdown(&countdown[site]);
}

static fw_race_fn _Atomic race_fn[FW_RACE__COUNT];
static void *_Atomic race_arg[FW_RACE__COUNT];

void fw_race_set(enum fw_race_site site, fw_race_fn fn, void *arg)
{
	if (site >= FW_RACE__COUNT)
		return;
	/* The argument before the function, and never cleared: a call racing
	 * this one gets a function with its own argument. */
	if (fn)
		os_store(&race_arg[site], arg, OS_SEQ_CST);
	os_store(&race_fn[site], fn, OS_SEQ_CST);
}

void fw_race_point(enum fw_race_site site, uint32_t dev, uint32_t engine)
{
	fw_race_fn fn = os_load(&race_fn[site], OS_SEQ_CST);

	if (fn)
		fn(dev, engine, os_load(&race_arg[site], OS_SEQ_CST));
}

int fw_fault_parse(const char *v)
{
	static const char *const names[] = { "fetch", "match", "exec", "copy", "zero", "kick", "wake" };
	enum { NSITES = sizeof(names) / sizeof(names[0]) };
	uint32_t nth[NSITES] = { 0 };

	if (!v || !*v)
		return 0;
	/* "site:nth[,site:nth]": scanned by hand, so that the firmware needs no libc parser */
	while (*v) {
		const char *name = v;
		size_t len, i;
		uint64_t n = 0;

		while (*v && *v != ':' && *v != ',')
			v++;
		if (*v != ':')
			return -EINVAL;
		len = (size_t)(v++ - name);
		if (*v < '0' || *v > '9')
			return -EINVAL;
		while (*v >= '0' && *v <= '9' && n <= 0xffffffffu)
			n = n * 10 + (uint64_t)(*v++ - '0');
		if ((*v && *v != ',') || n == 0 || n > 0xffffffffu)
			return -EINVAL;
		if (*v == ',' && !*++v)
			return -EINVAL; /* a trailing comma */
		for (i = 0; i < NSITES && (strlen(names[i]) != len || memcmp(names[i], name, len)); i++)
			;
		if (i == NSITES)
			return -EINVAL;
		nth[i] = (uint32_t)n;
	}
	fw_fault_arm(FW_FAULT_FETCH, nth[0]);
	fw_fault_arm(FW_FAULT_MATCH, nth[1]);
	fw_fault_arm(FW_FAULT_EXEC, nth[2]);
	dma_fault_arm(DMA_FAULT_COPY, nth[3]);
	dma_fault_arm(DMA_FAULT_ZERO, nth[4]);
	fw_fault_arm(FW_FAULT_KICK, nth[5]);
	fw_fault_arm(FW_FAULT_WAKE, nth[6]);
	return 0;
}
