/*
 * check.h — the tiny assertion layer of the C unit tests.
 *
 * CHECK(expr) evaluates expr once; on failure it prints file:line and the
 * expression and counts the failure; the test goes on. The CHECK_EQ
 * variants also print both values. Keep side effects out of the checked
 * expressions: compute into a variable first, then check it.
 * main() ends with `return check_report("name");` which prints a summary
 * and returns non-zero if anything failed.
 */
#ifndef SY_TEST_CHECK_H
#define SY_TEST_CHECK_H

#include <stdio.h>
#include <string.h>

static unsigned long check_count;
static unsigned long check_failures;

#define CHECK(expr)                                                        \
    do {                                                                   \
        check_count++;                                                     \
        if (!(expr)) {                                                     \
            check_failures++;                                              \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__,        \
                    __LINE__, #expr);                                      \
        }                                                                  \
    } while (0)

/* Signed comparison (values converted to long long). */
#define CHECK_EQ(a, b)                                                     \
    do {                                                                   \
        long long check_a_ = (long long)(a), check_b_ = (long long)(b);    \
        check_count++;                                                     \
        if (check_a_ != check_b_) {                                        \
            check_failures++;                                              \
            fprintf(stderr, "%s:%d: CHECK failed: %s == %s (%lld vs %lld)\n", \
                    __FILE__, __LINE__, #a, #b, check_a_, check_b_);       \
        }                                                                  \
    } while (0)

/* Unsigned comparison (values converted to unsigned long long). */
#define CHECK_EQU(a, b)                                                    \
    do {                                                                   \
        unsigned long long check_a_ = (unsigned long long)(a);             \
        unsigned long long check_b_ = (unsigned long long)(b);             \
        check_count++;                                                     \
        if (check_a_ != check_b_) {                                        \
            check_failures++;                                              \
            fprintf(stderr, "%s:%d: CHECK failed: %s == %s (%llu vs %llu)\n", \
                    __FILE__, __LINE__, #a, #b, check_a_, check_b_);       \
        }                                                                  \
    } while (0)

/* p[0..n) equals the string literal or C string s exactly. */
#define CHECK_MEMSTR(p, n, s)                                              \
    do {                                                                   \
        size_t check_n_ = (size_t)(n);                                     \
        const char *check_s_ = (s);                                        \
        const void *check_p_ = (p);                                        \
        check_count++;                                                     \
        if (check_n_ != strlen(check_s_) ||                                \
            (check_n_ > 0 && memcmp(check_p_, check_s_, check_n_) != 0)) { \
            check_failures++;                                              \
            fprintf(stderr, "%s:%d: CHECK failed: %s is \"%.*s\", not \"%s\"\n", \
                    __FILE__, __LINE__, #p, (int)(check_n_ < 200 ? check_n_ : 200), \
                    check_p_ == NULL ? "" : (const char *)check_p_, check_s_); \
        }                                                                  \
    } while (0)

/* Connection state transitions outside sy_conn.c's table (testing builds
 * count them; weak: a test that does not link sy_conn has none). A test
 * that makes some on purpose says how many in check_illegal_expected. */
unsigned sy_conn_illegal_transitions(void) __attribute__((weak));
static unsigned check_illegal_expected;

static inline int check_report(const char *name)
{
    if (sy_conn_illegal_transitions != NULL && sy_conn_illegal_transitions() != check_illegal_expected) {
        check_failures++;
        fprintf(stderr, "%s: %u connection state transitions outside the table (see above)\n", name,
                sy_conn_illegal_transitions() - check_illegal_expected);
    }
    printf("%s: %lu checks, %lu failed\n", name, check_count, check_failures);
    return check_failures == 0 ? 0 : 1;
}

#endif
