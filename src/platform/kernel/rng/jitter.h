/*
 * jitter.h - the CPU timing-jitter noise source: the time, in TSC ticks,
 * that a short walk over a scratch buffer takes varies with caches, TLB,
 * pipeline and (in a VM) the host. Raw samples only; entropy.c runs the
 * health tests and decides what they are worth.
 */
#ifndef TERN_RNG_JITTER_H
#define TERN_RNG_JITTER_H

#include <stddef.h>
#include <stdint.h>

/* 0 once the scratch buffer is allocated; -1 without memory. */
int jitter_init(void);
/* Take n samples: deltas[i] is the full TSC delta of one walk. */
void jitter_sample(uint64_t *deltas, size_t n);

#endif
