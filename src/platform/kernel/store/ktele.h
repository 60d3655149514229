/*
 * ktele.h - the unikernel's telemetry journal writer (SPEC D7, issue 14):
 * opens the journal in the data partition's telemetry region at boot,
 * writes the boot record (and a power-cut record when the previous boot
 * left no stop record) and makes them durable before the broker serves,
 * then records periodic statistics, store state changes and backups from
 * the main loop, and publishes the journal on $SYS.
 *
 * The main loop only queues records in memory; a cooperative thread
 * (kthread.h) appends and syncs them, yielding while the disk works, so a
 * slow disk never stops the network. Durability: the boot and power-cut
 * records are flushed before kserve_start; every other record is flushed
 * by the thread within one main-loop turn of being queued (a sync per
 * batch), so a power cut loses at most the records queued since the last
 * finished sync. Format: disk/tele.h, docs/DISK.md.
 */
#ifndef TERN_KSTORE_KTELE_H
#define TERN_KSTORE_KTELE_H

#include "broker/broker.h"
#include "dev/blk.h"
#include "disk/layout.h"
#include "store/kstore.h"

#include <stdint.h>

enum {
    KTELE_QUEUE = 32,      /* records queued between two syncs, at most */
    KTELE_SHOWN = 16,      /* events and statistics kept for $SYS */
    KTELE_STACK_PAGES = 16,
    KTELE_CERT_WARN_DAYS = 30,       /* warn when the certificate expires sooner */
    KTELE_CERT_CHECK_MS = 86400000,  /* and check again daily */
};

/* Watch the server certificate's expiry (notAfter, s since 1970; 0: no
 * certificate): checked at ktele_open and daily after, a certificate
 * record and a console warning when fewer than KTELE_CERT_WARN_DAYS
 * remain. Call before ktele_open. */
void ktele_watch_cert(int64_t not_after_s);

/* What the boot record says. mode: 1 installed disk, 2 live, 3 other. */
struct ktele_boot {
    const char *release;
    uint32_t mode;
    uint64_t partition_bytes;
    const char *disk;
};

/* Boot, after the layout was accepted: open the journal in l's telemetry
 * region on d, write and flush the boot (and power-cut) records. A journal
 * that is refused, or an I/O error, is said on the console and the broker
 * serves without one (telemetry must not stop the broker). 0 when open. */
int ktele_open(struct blk_dev *d, const struct klayout *l, const struct ktele_boot *boot,
               uint32_t interval_s);

#ifdef TERN_TEST_HOOKS
/* Test builds (tern.test.tele_ms=N): statistics every N ms instead of
 * telemetry.interval, so a test can fill the ring and watch it wrap.
 * Call before ktele_open. */
void ktele_test_interval_ms(uint32_t ms);
#endif

/* Main loop, after the broker's turn (k may be NULL: no store): queue the
 * statistics when due and the store's and backups' changes, publish $SYS
 * when the journal changed, resume the writer. Nonzero when it did work. */
int ktele_poll(broker *b, struct kstore *k, uint64_t now_ms);

/* The telemetry queue lock's counters (spinlock.h); 0 when no journal is
 * open (out untouched), 1 otherwise. */
struct spin_stats;
int ktele_lock_stats(struct spin_stats *out);

#endif
