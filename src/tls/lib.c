/*
 * lib.c - the process-wide side of wolfSSL, kept in one place: library
 * start and stop, and the clock certificate validity is checked against.
 * The state itself is wolfSSL's (its init count, its time callback); tern
 * keeps none.
 */
#include "tls/internal.h" /* first: wolfSSL's options.h before its headers */

#include <wolfssl/wolfcrypt/asn_public.h>

bool tls_library_up(void)
{
    return wolfSSL_Init() == WOLFSSL_SUCCESS;
}

void tls_library_down(void)
{
    (void)wolfSSL_Cleanup(); /* nothing to do if it fails: we are letting go */
}

void tern_tls_set_clock(tern_tls_clock_fn fn)
{
    /* wc_SetTimeCb cannot fail; NULL means wolfSSL's XTIME (time()). */
    (void)wc_SetTimeCb(fn);
}
