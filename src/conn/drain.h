/*
 * drain.h - how long QoS 0 messages may wait in a connection's output:
 * a bound in time, turned into bytes from the rate the connection has
 * been taking its output at.
 *
 * limits.max_out_bytes bounds a connection's pending output in bytes; for
 * a reader taking 1 MB/s that is about a second of waiting, for one
 * taking 100 kB/s ten. While output stays backed up (the transport took
 * less than there was), the bytes the transport took are counted over
 * windows of CONN_DRAIN_WINDOW_MS; each window's rate times
 * CONN_QOS0_WAIT_MS is the new bound, never below CONN_QOS0_OUT_MIN. The
 * core drops QoS 0 beyond it (broker_set_qos0_out_max) as it does beyond
 * max_out_bytes. Output that drains completely ends the measurement and
 * the bound: a reader that keeps up is never limited. Pure: no clock, no
 * I/O (unit-tested in tests/unit/test_conn_drain.c).
 */
#ifndef TERN_CONN_DRAIN_H
#define TERN_CONN_DRAIN_H

#include <stddef.h>
#include <stdint.h>

typedef struct conn_drain {
    uint64_t since_ms; /* start of the window being measured */
    uint64_t bytes;    /* taken by the transport since then */
    uint32_t limit;    /* the bound now, 0 = none */
    uint8_t backed_up; /* output was left pending at the last update */
} conn_drain;

/* The transport took n bytes of the connection's output. */
void conn_drain_wrote(conn_drain *d, size_t n);

/* After a write: `pending` bytes are left. Returns the QoS 0 bound in
 * bytes for the core (0 = none). */
uint32_t conn_drain_update(conn_drain *d, size_t pending, uint64_t now_ms);

#endif
