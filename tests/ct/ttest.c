/*
 * ttest.c - Welch's t-test with running means and variances (ttest.h).
 * Welford's update keeps the variance exact enough over millions of
 * cycle counts where a sum of squares would lose it.
 */
#include "ttest.h"

#include <math.h>

void ttest_push(struct ttest *t, int cls, double x)
{
    t->n[cls] += 1;
    double delta = x - t->mean[cls];
    t->mean[cls] += delta / t->n[cls];
    t->m2[cls] += delta * (x - t->mean[cls]);
}

double ttest_t(const struct ttest *t)
{
    if (t->n[0] < 2 || t->n[1] < 2)
        return 0;
    double v0 = t->m2[0] / (t->n[0] - 1), v1 = t->m2[1] / (t->n[1] - 1);
    double se = sqrt(v0 / t->n[0] + v1 / t->n[1]);
    double diff = t->mean[0] - t->mean[1];
    if (se == 0) /* two constants: equal, or as different as can be */
        return diff == 0 ? 0 : copysign(INFINITY, diff);
    return diff / se;
}
