/*
 * agree.h - trusted time by agreement (SPEC B4): from the offsets that
 * several time sources reported, decide whether they agree well enough to
 * set the clock, and by how much. Pure and portable (no clock, no I/O):
 * the kernel's SNTP client (platform/kernel/net/sntp.c) feeds it, unit
 * tests drive it directly.
 */
#ifndef TERN_TIME_AGREE_H
#define TERN_TIME_AGREE_H

#include <stddef.h>
#include <stdint.h>

/* Sources agree when they lie within this of their median (SPEC B4). */
#define TIME_AGREE_WINDOW_MS 1000
/* A reply whose round trip took longer than this says too little about
 * the offset (its error is up to half the delay): it does not vote. */
#define TIME_MAX_DELAY_MS 2000
/* At most this many sources are considered (time.sntp_servers). */
#define TIME_MAX_SOURCES 8

/* One answer: the source's clock minus ours, and the round trip. */
typedef struct time_sample {
    int64_t offset_ms;
    int64_t delay_ms;
} time_sample;

typedef enum time_verdict {
    TIME_AGREED,       /* offset_ms is the agreed correction */
    TIME_NO_MAJORITY,  /* too few sources answered or lie together */
    TIME_STEP_REFUSED, /* they agree, but on a step beyond max_step */
} time_verdict;

typedef struct time_agreement {
    time_verdict verdict;
    int64_t offset_ms;  /* the median of the agreeing sources (also when refused) */
    unsigned agreeing;  /* sources within TIME_AGREE_WINDOW_MS of the median */
    unsigned answered;  /* samples that voted (delay within TIME_MAX_DELAY_MS) */
    unsigned configured;
    const char *reason; /* one line, static text: why not agreed, or "agreed" */
} time_agreement;

/*
 * Vote over n samples from `configured` sources (n <= configured; sources
 * that did not answer count against agreement, so silencing honest servers
 * cannot hand the vote to a liar). Agreement needs a strict majority of the
 * configured sources within TIME_AGREE_WINDOW_MS of the median of those
 * that answered. An agreed |offset| above max_step_ms (0 = no limit) is
 * refused. Returns out->verdict.
 */
time_verdict time_agree(const time_sample *s, size_t n, unsigned configured,
                        int64_t max_step_ms, time_agreement *out);

#endif
