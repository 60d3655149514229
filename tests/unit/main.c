/*
 * main.c - runs the registered unit tests. With an argument, only tests whose
 * name contains it. Prints one line per failure and a closing summary line.
 */
#include "test.h"

#include <stdlib.h>

enum { MAX_TESTS = 4096 };

typedef struct test_case {
    const char *name;
    test_fn fn;
} test_case;

/* Filled by constructors before main; the only mutable globals of the test
 * binary, which is not part of the broker. */
static test_case tests[MAX_TESTS];
static size_t test_count;
static int current_failed;

void test_register(const char *name, test_fn fn)
{
    if (test_count == MAX_TESTS) {
        fprintf(stderr, "too many tests\n");
        abort();
    }
    tests[test_count].name = name;
    tests[test_count].fn = fn;
    test_count++;
}

void test_fail(const char *file, int line, const char *what)
{
    fprintf(stderr, "  FAIL %s:%d: %s\n", file, line, what);
    current_failed = 1;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const test_case *)a)->name, ((const test_case *)b)->name);
}

int main(int argc, char **argv)
{
    const char *filter = argc > 1 ? argv[1] : NULL;
    unsigned passed = 0, failed = 0;

    qsort(tests, test_count, sizeof tests[0], by_name);
    for (size_t i = 0; i < test_count; i++) {
        if (filter && !strstr(tests[i].name, filter))
            continue;
        current_failed = 0;
        tests[i].fn();
        if (current_failed) {
            fprintf(stderr, "FAIL %s\n", tests[i].name);
            failed++;
        } else {
            passed++;
        }
    }
    printf("%u passed, %u failed\n", passed, failed);
    return failed ? 1 : 0;
}
