/*
 * agree.c - the vote of time_agree() (agree.h): median of the answers,
 * then a strict majority of the configured sources within a second of it.
 * The median, not the mean, so one liar cannot drag the result however far
 * it lies.
 */
#include "time/agree.h"

/* Insertion sort: at most TIME_MAX_SOURCES values. */
static void sort(int64_t *v, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        int64_t x = v[i];
        size_t j = i;
        while (j > 0 && v[j - 1] > x) {
            v[j] = v[j - 1];
            j--;
        }
        v[j] = x;
    }
}

/* Median of sorted v[0..n), n >= 1; the lower middle pair's mean for even
 * n, computed without overflow. */
static int64_t median(const int64_t *v, size_t n)
{
    if (n % 2)
        return v[n / 2];
    int64_t a = v[n / 2 - 1], b = v[n / 2];
    return a + (b - a) / 2;
}

/* Only for values within +-INT64_MAX / 2 (checked before). */
static int64_t abs64(int64_t v)
{
    return v < 0 ? -v : v;
}

time_verdict time_agree(const time_sample *s, size_t n, unsigned configured,
                        int64_t max_step_ms, time_agreement *out)
{
    int64_t offs[TIME_MAX_SOURCES], near[TIME_MAX_SOURCES];
    size_t m = 0, k = 0;

    *out = (time_agreement){.verdict = TIME_NO_MAJORITY, .configured = configured};
    if (configured > TIME_MAX_SOURCES)
        configured = out->configured = TIME_MAX_SOURCES;
    if (n > configured)
        n = configured;
    for (size_t i = 0; i < n; i++) {
        /* Refuse absurd values before any arithmetic on them. */
        if (s[i].delay_ms < 0 || s[i].delay_ms > TIME_MAX_DELAY_MS)
            continue;
        if (s[i].offset_ms > INT64_MAX / 4 || s[i].offset_ms < -(INT64_MAX / 4))
            continue;
        offs[m++] = s[i].offset_ms;
    }
    out->answered = (unsigned)m;
    if (configured == 0) {
        out->reason = "no time sources configured";
        return out->verdict;
    }
    if (m * 2 <= configured) {
        out->reason = "too few sources answered for a majority";
        return out->verdict;
    }
    sort(offs, m);
    int64_t med = median(offs, m);
    for (size_t i = 0; i < m; i++) {
        /* offs[i] and med are both bounded by INT64_MAX / 4. */
        if (abs64(offs[i] - med) <= TIME_AGREE_WINDOW_MS)
            near[k++] = offs[i];
    }
    out->agreeing = (unsigned)k;
    if (k * 2 <= configured) {
        out->reason = "no majority of sources within 1 s of their median";
        return out->verdict;
    }
    out->offset_ms = median(near, k); /* near[] is sorted: a subsequence */
    if (max_step_ms > 0 && abs64(out->offset_ms) > max_step_ms) {
        out->verdict = TIME_STEP_REFUSED;
        out->reason = "the agreed step exceeds time.max_step";
        return out->verdict;
    }
    out->verdict = TIME_AGREED;
    out->reason = "agreed";
    return out->verdict;
}
