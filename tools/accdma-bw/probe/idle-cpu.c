// SPDX-License-Identifier: MIT
/*
 * idle-cpu.c - how much CPU an open world with nothing posted uses.
 *
 *   build/idle-cpu [seconds=5] [devices...]     (default: 2 16 128 1024)
 *
 * For each size, opens a local world of that many devices (one engine
 * thread each, the default), lets the engines settle for a second, then
 * reads this process's CPU time (user + system) and voluntary context
 * switches over the measured seconds, and prints per size the share of one
 * CPU and the wake-ups a second per engine. A benchmark, not a test: the
 * numbers go to BENCHMARKS.md with the command that printed them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#include <accdma.h>

static double cpu_s(long *nvcsw)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	*nvcsw = ru.ru_nvcsw + ru.ru_nivcsw;
	return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
	       ru.ru_stime.tv_usec / 1e6;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int measure(int ndev, double secs)
{
	struct accdma_world_opts o;
	accdma_world *w;
	double c0, c1, t0, t1;
	long s0, s1;
	int rc;

	accdma_world_opts_init(&o);
	o.num_devices = ndev;
	o.mem_size = 1 << 20;
	rc = accdma_world_open(&o, &w);
	if (rc) {
		fprintf(stderr, "idle-cpu: %d devices: accdma_world_open = %d\n", ndev, rc);
		return 1;
	}
	nanosleep(&(struct timespec){ 1, 0 }, NULL); /* the engines settle */
	c0 = cpu_s(&s0);
	t0 = now_s();
	nanosleep(&(struct timespec){ (time_t)secs, (long)((secs - (time_t)secs) * 1e9) }, NULL);
	c1 = cpu_s(&s1);
	t1 = now_s();
	printf("%5d devices: %6.2f %% of a CPU, %8.1f wake-ups/s per engine\n", ndev,
	       100.0 * (c1 - c0) / (t1 - t0), (double)(s1 - s0) / (t1 - t0) / ndev);
	fflush(stdout);
	return accdma_world_close(w) != 0;
}

int main(int argc, char **argv)
{
	static const int sizes[] = { 2, 16, 128, 1024 };
	double secs = argc > 1 ? atof(argv[1]) : 5;
	int fail = 0;

	if (secs <= 0) {
		fprintf(stderr, "usage: idle-cpu [seconds] [devices...]\n");
		return 2;
	}
	if (argc > 2)
		for (int i = 2; i < argc; i++)
			fail |= measure(atoi(argv[i]), secs);
	else
		for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
			fail |= measure(sizes[i], secs);
	return fail;
}
