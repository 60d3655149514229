/*
 * jitter.c - timing jitter around memory accesses. Each sample times a
 * walk of 64 dependent reads and writes over a 64 KiB scratch buffer, the
 * position of each step depending on the previous value read and on the
 * previous delta, so neither the compiler nor the CPU can skip or fully
 * predict the work. Larger than L1, so cache and TLB state shows in the
 * timing.
 */
#include "rng/jitter.h"

#include "arch/x86_64/cpu.h"
#include "mm/kmalloc.h"

enum { SCRATCH = 64 * 1024, STEPS = 64 };

/* Scratch memory for the walks: the boot CPU's only. */
static volatile uint8_t *scratch;

int jitter_init(void)
{
    if (!scratch)
        scratch = kzalloc(SCRATCH);
    return scratch ? 0 : -1;
}

void jitter_sample(uint64_t *deltas, size_t n)
{
    uint64_t prev = 0;
    uint32_t pos = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t t0 = rdtsc();
        for (unsigned s = 0; s < STEPS; s++) {
            pos = (pos * 1103515245u + 12345u + scratch[pos % SCRATCH] + (uint32_t)prev) %
                  SCRATCH;
            scratch[pos] = (uint8_t)(scratch[pos] + 1 + (uint8_t)t0);
        }
        uint64_t d = rdtsc() - t0;
        deltas[i] = d;
        prev = d;
    }
}
