/* SPDX-License-Identifier: MIT */
/*
 * qt_random.h - random valid scenarios: random partial permutations per round,
 * random sizes and tags (tags repeat across rounds, so FIFO matching is
 * exercised), random dependency DAGs over earlier rounds' tokens, exec steps
 * chained on recvs, fences. Generated as scenario text, so a failing one is
 * written to a file and replayed like any other.
 */
#ifndef QT_RANDOM_H
#define QT_RANDOM_H

#include <stdint.h>

/**
 * qt_random_scenario() - generate one scenario.
 * @seed: the seed (the same seed gives the same text).
 * @max_devices: the largest device count to pick (2..1024).
 * Return: the scenario text (free() it), or NULL when out of memory.
 */
char *qt_random_scenario(uint64_t seed, int max_devices);

/**
 * qt_random_scenario_n() - generate one scenario for a given device count
 * (a shm world of that many processes runs it).
 * @seed/@max_devices: as qt_random_scenario(). @devices: 0 (drawn), or 2..1024:
 * the device count to use instead of the one drawn.
 * Return: the scenario text (free() it), or NULL when out of memory.
 */
char *qt_random_scenario_n(uint64_t seed, int max_devices, int devices);

#endif
