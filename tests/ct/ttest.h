/*
 * ttest.h - Welch's t-test between two classes of timings, accumulated
 * one sample at a time (Welford's running mean and variance), as dudect
 * (Reparaz, Balasch, Verbauwhede, 2017) uses it: |t| far above a few
 * means the two classes' timing distributions differ.
 */
#ifndef TERN_CT_TTEST_H
#define TERN_CT_TTEST_H

struct ttest {
    double n[2], mean[2], m2[2];
};

/* Add sample x to class cls (0 or 1). */
void ttest_push(struct ttest *t, int cls, double x);
/* Welch's t statistic of class 0 against class 1; 0 while either class
 * has fewer than two samples; infinite when neither varies but their
 * values differ. */
double ttest_t(const struct ttest *t);

#endif
