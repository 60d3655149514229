/*
 * main.c - the constant-time tests (SPEC H6; make ct-test): every target
 * of targets.c is timed dudect-style (dudect.h) and judged:
 *
 *   a target that must be constant-time fails only when every one of
 *   ATTEMPTS runs flags it (|t| > CT_T_THRESHOLD): a real dependence on
 *   the secret shows in every run, while a burst of other load on a
 *   shared machine rarely lines up with one class three times over;
 *
 *   the leaky control fails the test when no run flags it: then the
 *   measurement has stopped seeing timing differences and every other
 *   verdict would be vacuous.
 *
 * Usage: ct-tests [-n MEASUREMENTS] [NAME...] (default CT_MEASUREMENTS
 * per run, every target). Prints one line per run and a verdict; exits
 * 1 when any verdict fails.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include "dudect.h"
#include "targets.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Measurements per run: enough that the leaky control's |t| is far past
 * the threshold and the whole test takes seconds. */
enum { CT_MEASUREMENTS = 100000 };
/* Runs per target before a verdict. */
enum { ATTEMPTS = 3 };

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int wanted(const char *name, int argc, char **argv, int first)
{
    if (first >= argc)
        return 1;
    for (int i = first; i < argc; i++)
        if (strcmp(argv[i], name) == 0)
            return 1;
    return 0;
}

/* Returns 1 when the target's verdict is right. */
static int judge(const struct ct_target *t, size_t n)
{
    for (int a = 1; a <= ATTEMPTS; a++) {
        struct ct_result r;
        double t0 = now_s();
        if (ct_measure(t, n, &r) != 0) {
            printf("ct: %s: cannot measure (no memory or no random bytes)\n", t->name);
            return 0;
        }
        int flagged = r.max_t > CT_T_THRESHOLD;
        printf("ct: %-22s run %d: max |t| %8.2f (crop at %5.1f%%) over %zu calls, %.2f s: "
               "%s\n",
               t->name, a, r.max_t, r.crop, r.n, now_s() - t0,
               flagged ? "timing depends on the secret" : "no dependence seen");
        fflush(stdout);
        if (flagged == t->leaky)
            return 1;
    }
    if (t->leaky)
        printf("ct: FAIL: %s: the leaky control was never flagged: the measurement sees "
               "nothing\n",
               t->name);
    else
        printf("ct: FAIL: %s: its time depends on its secret input in all %d runs\n", t->name,
               ATTEMPTS);
    return 0;
}

int main(int argc, char **argv)
{
    size_t n = CT_MEASUREMENTS;
    int first = 1, failed = 0, ran = 0;
    double t0 = now_s();

    if (argc > 2 && strcmp(argv[1], "-n") == 0) {
        char *end;
        unsigned long v = strtoul(argv[2], &end, 10);
        if (*end != '\0' || v < 1000) {
            fprintf(stderr, "ct-tests: -n wants a count of at least 1000\n");
            return 2;
        }
        n = v;
        first = 3;
    }
    for (size_t i = 0; i < ct_ntargets; i++) {
        if (!wanted(ct_targets[i].name, argc, argv, first))
            continue;
        ran++;
        if (!judge(&ct_targets[i], n))
            failed++;
    }
    if (ran == 0) {
        fprintf(stderr, "ct-tests: no target of that name\n");
        return 2;
    }
    printf("ct: %d targets, %d failed, %.1f s (threshold |t| > %.0f, %d runs at most)\n", ran,
           failed, now_s() - t0, CT_T_THRESHOLD, ATTEMPTS);
    return failed ? 1 : 0;
}
