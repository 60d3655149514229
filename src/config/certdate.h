/*
 * certdate.h - the notAfter date of the first certificate in a PEM file:
 * what the unikernel's telemetry journal watches to warn that the server
 * certificate is about to expire (issue 14). A pure parser over bytes
 * (base64 and a short DER walk, no crypto library): the certificate was
 * already accepted by the TLS adapter; this only reads its date.
 */
#ifndef TERN_CONFIG_CERTDATE_H
#define TERN_CONFIG_CERTDATE_H

#include <stddef.h>
#include <stdint.h>

/* Seconds since 1970 (UTC) of the first certificate's notAfter in pem,
 * decoded into scratch (cap bytes: CERTDATE_SCRATCH holds any usual
 * certificate). 0 with *out set, or -1 when there is no readable
 * certificate (no PEM block, one larger than cap, no PEM
 * block, bad base64, DER that is not an X.509 certificate's shape, a time
 * that is not UTCTime or GeneralizedTime in Z form). */
enum { CERTDATE_SCRATCH = 16384 };
int certdate_not_after(const uint8_t *pem, size_t len, uint8_t *scratch, size_t cap, int64_t *out);

#endif
