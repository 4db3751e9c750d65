// SPDX-License-Identifier: MIT
/*
 * membarrier-probe.c - does membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED) reach
 * every CPU that runs a registered process?
 *
 * accdma's light kicks rely on it (queue/queue.h). Process A registers and
 * spins on CPU 1; process B, on CPU 0, issues the membarrier N times and
 * counts the function-call interrupts CPU 1 took meanwhile (the CAL line of
 * /proc/interrupts, x86). Twice: once as is, once after a thread of A exited
 * on CPU 1. Each membarrier should interrupt CPU 1 both times; a count near
 * 0 the second time means the kernel skips that CPU, and a light kick sent
 * from it is fenced by nothing.
 *
 *   gcc -O2 -pthread -o /tmp/membarrier-probe tools/accdma-bw/probe/membarrier-probe.c
 *   /tmp/membarrier-probe
 *
 * Needs two CPUs. Not part of the tests: it describes the kernel, not accdma.
 */
#define _GNU_SOURCE
#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define BARRIERS 20000

static void pin(int cpu)
{
	cpu_set_t s;

	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	if (sched_setaffinity(0, sizeof(s), &s)) {
		perror("sched_setaffinity");
		exit(2);
	}
}

/* Function-call interrupts CPU 1 took so far, or -1. */
static long cpu1_calls(void)
{
	FILE *f = fopen("/proc/interrupts", "r");
	char line[4096];
	long c0, c1 = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, " CAL: %ld %ld", &c0, &c1) == 2)
			break;
	fclose(f);
	return c1;
}

static void *exit_at_once(void *arg)
{
	return arg;
}

/* One run: A registers on CPU 1 (a thread of it exits there first if
 * @exited) and spins; B counts. Return: CPU 1's interrupts, or -1. */
static long run(int exited)
{
	_Atomic int *phase = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	_Atomic long *count = (_Atomic long *)(phase + 16);
	pid_t pid;

	if (phase == MAP_FAILED)
		return -1;
	pid = fork();
	if (pid == 0) { /* B */
		long before;

		pin(0);
		while (atomic_load(phase) != 1)
			;
		before = cpu1_calls();
		for (int i = 0; i < BARRIERS; i++)
			syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL_EXPEDITED, 0, 0);
		atomic_store(count, before < 0 ? -1 : cpu1_calls() - before);
		atomic_store(phase, 2);
		_exit(0);
	}
	pin(1);
	if (syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED, 0, 0)) {
		perror("membarrier register");
		exit(2);
	}
	if (exited) {
		pthread_t t;

		pthread_create(&t, NULL, exit_at_once, NULL); /* inherits CPU 1 */
		pthread_join(t, NULL);
	}
	atomic_store(phase, 1);
	while (atomic_load(phase) != 2)
		;
	waitpid(pid, NULL, 0);
	return atomic_load(count);
}

int main(void)
{
	long plain, exited;

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
		fprintf(stderr, "membarrier-probe: needs two CPUs\n");
		return 2;
	}
	plain = run(0);
	exited = run(1);
	if (plain < 0 || exited < 0) {
		fprintf(stderr, "membarrier-probe: no CAL line in /proc/interrupts (not x86?)\n");
		return 2;
	}
	printf("membarrier-probe: CPU 1 interrupted %ld times for %d membarriers; "
	       "after a thread exited there, %ld times%s\n", plain, BARRIERS, exited,
	       exited < BARRIERS / 4 ? ": the kernel skips that CPU" : "");
	return 0;
}
