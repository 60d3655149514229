/*
 * assert.c - what a failed assert() does in the kernel: a fatal report
 * naming the expression and where (the report's text is one line).
 */
#include <assert.h>
#include <stdio.h>

#include "panic.h"

void tern_assert_fail(const char *expr, const char *file, int line)
{
    char msg[160]; /* panic() does not return: the stack stays */

    (void)snprintf(msg, sizeof msg, "assertion failed: %s (%s:%d)", expr, file, line);
    panic(msg);
}
