/*
 * cryptobench.h - the diagnostics report's "crypto" and "handshake"
 * sections (docs/DIAGNOSTICS.md): the cost of the crypto operations tern's
 * TLS uses and the server's CPU cost of one full mutual-TLS 1.3 handshake,
 * measured through the same wolfCrypt the TLS uses. Portable: the daemon
 * (ternd --diag, the console's diag command) and the kernel compile it.
 */
#ifndef TERN_DIAG_CRYPTOBENCH_H
#define TERN_DIAG_CRYPTOBENCH_H

#include "diag/diag_clock.h"
#include "json/json.h"

/* Budget of the diagnostics mode and of ternd --diag (the whole crypto +
 * handshake run), in ms. A plain number: the usage text prints it. */
#define DIAG_CRYPTO_BUDGET_MS 3000

/* Write the members "crypto" and "handshake" into w's open object. The
 * measurements take at most about budget_ms in total, but each runs at
 * least once (budget 0: exactly once; a few ms on a host, more under
 * emulation); a figure that could not be measured is null with its
 * "_why". Runs on the caller's thread, which it holds meanwhile. */
void diag_crypto_write(jw *w, const struct diag_clock *clk, unsigned budget_ms);

/* A whole document of those two sections alone, for the platforms' own
 * read-outs (ternd --diag, the kernel's test hook): {"schema": 1, "tern":
 * VERSION, "mode": mode, "crypto": ..., "handshake": ...} into buf[0..cap)
 * with a NUL; its length, or 0 when it did not fit. */
size_t diag_crypto_report(char *buf, size_t cap, const struct diag_clock *clk,
                          unsigned budget_ms, const char *mode);

#endif
