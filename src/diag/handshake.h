/*
 * handshake.h - the server's CPU cost of one full mutual-TLS 1.3 handshake,
 * measured in-process: tern's own TLS adapter (src/tls, configured as the
 * broker configures it: TLS 1.3 only, client certificate required, X25519
 * first, AES-GCM) on both sides, the bytes moved between them in memory,
 * and only the time spent in the server's calls counted.
 */
#ifndef TERN_DIAG_HANDSHAKE_H
#define TERN_DIAG_HANDSHAKE_H

#include <stdint.h>

#include "diag/diag_clock.h"

/* Handshakes kept for the percentiles (more are not run). */
#define DIAG_HS_MAX 256u

typedef struct diag_hs_result {
    unsigned count;                /* completed handshakes */
    uint64_t server_ns[DIAG_HS_MAX]; /* each one's server time, sorted */
    uint64_t median_ns, p90_ns;    /* nearest rank */
    uint64_t total_ns;             /* sum of server_ns */
    uint64_t wall_ns;              /* whole run, client and set-up included */
    char cipher[48];               /* negotiated suite, e.g. TLS13-AES128-GCM-SHA256 */
    char version[16];
    const char *why;               /* NULL, or why none (or no more) completed */
} diag_hs_result;

/* Run one handshake, then more until now_ns() reaches deadline_ns (at most
 * DIAG_HS_MAX). r->why is set when a handshake failed (the run stops
 * there; r->count says how many completed before). */
void diag_handshake_measure(const struct diag_clock *clk, uint64_t deadline_ns,
                            diag_hs_result *r);

#endif
