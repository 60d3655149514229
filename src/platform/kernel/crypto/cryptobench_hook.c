/*
 * cryptobench_hook.c - tern.test.cryptobench=MS (cryptobench_hook.h): the
 * report's crypto and handshake sections measured on the kernel's clock
 * (kdiagclock.h) and printed on the console.
 */
#include "crypto/cryptobench_hook.h"

#ifdef TERN_TEST_HOOKS /* test builds only */

#include "console.h"
#include "crypto/kdiagclock.h"
#include "diag/cryptobench.h"

#include <stdint.h>
#include <stdlib.h>

/* The two sections are ~6 KiB. */
#define HOOK_DOC_MAX (32u * 1024u)
/* Longest budget accepted (TCG runs stay short). */
#define HOOK_MAX_MS 60000u

void cryptobench_hook(const char *arg, const struct tsc_info *tsc)
{
    struct diag_clock clk = kdiag_clock(tsc);
    unsigned ms = 0;
    char *buf;
    size_t n;

    for (const char *p = arg; *p; p++) {
        if (*p < '0' || *p > '9' || ms > HOOK_MAX_MS) {
            kprintf("tern: cryptobench: tern.test.cryptobench=%s: want milliseconds "
                    "(0..%u)\n", arg, HOOK_MAX_MS);
            return;
        }
        ms = ms * 10u + (unsigned)(*p - '0');
    }
    if (ms > HOOK_MAX_MS || (buf = malloc(HOOK_DOC_MAX)) == NULL) {
        kprintf("tern: cryptobench: refused (budget over %u ms, or no memory)\n", HOOK_MAX_MS);
        return;
    }
    n = diag_crypto_report(buf, HOOK_DOC_MAX, &clk, ms, "test-cryptobench");
    kprintf("tern: cryptobench: begin\n");
    if (n > 0)
        console_write(buf, n);
    else
        kprintf("{\"error\": \"the report did not fit\"}");
    kprintf("\ntern: cryptobench: end\n");
    free(buf);
}

#endif
