/*
 * test.h - the unit-test harness: TEST() registers a function at load time,
 * CHECK*() records a failure and returns from the test. tests/unit/main.c
 * runs every registered test (or those whose name contains argv[1]) and ends
 * with the line "N passed, N failed".
 */
#ifndef TERN_TEST_H
#define TERN_TEST_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef void (*test_fn)(void);
void test_register(const char *name, test_fn fn);
void test_fail(const char *file, int line, const char *what);

#define TEST(name)                                                              \
    static void name(void);                                                     \
    __attribute__((constructor)) static void name##_register(void)              \
    {                                                                           \
        test_register(#name, name);                                             \
    }                                                                           \
    static void name(void)

#define CHECK(cond)                                                             \
    do {                                                                        \
        if (!(cond)) {                                                          \
            test_fail(__FILE__, __LINE__, #cond);                               \
            return;                                                             \
        }                                                                       \
    } while (0)

#define CHECK_EQ(a, b)                                                          \
    do {                                                                        \
        long long check_a_ = (long long)(a), check_b_ = (long long)(b);         \
        if (check_a_ != check_b_) {                                             \
            char check_msg_[256];                                               \
            snprintf(check_msg_, sizeof check_msg_, "%s == %s (%lld != %lld)",   \
                     #a, #b, check_a_, check_b_);                               \
            test_fail(__FILE__, __LINE__, check_msg_);                          \
            return;                                                             \
        }                                                                       \
    } while (0)

#define CHECK_MEM(a, b, n) CHECK(memcmp((a), (b), (n)) == 0)

#endif
