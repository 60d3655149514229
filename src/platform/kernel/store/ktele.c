/*
 * ktele.c - the kernel's telemetry journal writer (see ktele.h): a struct
 * kdisk whose calls wait through kthread_wait_until (kwaitdisk.h: on the
 * writer thread they yield while the disk works, at boot they poll), the
 * discard callback over BLK_DISCARD / BLK_WRITE_ZEROES, the boot-time
 * open with the boot and power-cut records, the record queue the main
 * loop fills and the thread drains, and the $SYS topics.
 *
 * With a storage core (kstorecpu.h, ADR-064) the writer runs on CPU 1
 * and the main loop on CPU 0: what both touch - the queue's indices, the
 * published figures (pub), sys_dirty - is under kt.lock, held for copies
 * only, never across the disk (the main loop looks at sys_dirty without
 * it first, and takes it only when the flag is set). A queued record's slot is the main loop's
 * until qtail passes it and the writer's until qhead does, both moved
 * under the lock, so its bytes need no lock of their own. The journal
 * itself (kt.t), the oldest-segment look and the error text are the
 * writer's (and boot's, before the hand-over); the shown records and
 * the dropped count are the main loop's.
 */
#include "store/ktele.h"

#include "arch/x86_64/spinlock.h"
#include "broker/journal.h"
#include "console.h"
#include "disk/blkdisk.h"
#include "disk/tele.h"
#include "kthread.h"
#include "mm/kmalloc.h"
#include "store/ksqlite.h"
#include "store/kstorecpu.h"
#include "store/kwaitdisk.h"
#include "wallclock.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

struct qrec {
    uint8_t kind;
    uint32_t len;
    int64_t time_ms;
    uint8_t payload[96];
};

/* One rendered record kept for $SYS. */
struct shown {
    char line[KTELE_SHOWN][320];
    unsigned n, next; /* ring of the last KTELE_SHOWN */
};

/* The journal's figures for $SYS, as of the writer's last batch. */
struct tele_pub {
    uint64_t next_record, head_seq, tail_seq, nseg, expired, discards, errors;
    int64_t oldest_ms;
};

/* Boot-time state of the one journal (like ds in kdisk_store.c). */
static struct {
    struct spinlock lock; /* qhead, qtail, pub, sys_dirty (file comment) */
    struct tele_pub pub;
    int open;
    struct blkdisk bd;
    struct blk_dev *dev;
    struct tele t;
    struct kthread *thread;
    uint32_t interval_ms;
    uint32_t test_interval_ms;
    int64_t cert_not_after;
    uint64_t next_cert_ms;
    uint64_t oldest_seq;   /* the segment oldest_ms was read from */
    int64_t oldest_ms;     /* when the oldest live segment was started; 0 unknown */
    uint64_t next_stats_ms;
    uint64_t boot_ms;
    /* the queue: main loop pushes at tail, thread pops at head */
    struct qrec q[KTELE_QUEUE];
    unsigned qhead, qtail;
    uint64_t dropped, errors, written;
    int syncing;
    /* what the main loop saw last */
    int have_status;
    broker_store_status last;
    struct shown events, history;
    _Atomic int sys_dirty; /* set and cleared under lock; read without it */
    char last_error[KDISK_MSG_MAX];
} kt;

/* Return expired space: discard where offered, else write zeroes, else
 * nothing (tele.c then never calls this). */
static int t_discard(void *ctx, uint64_t lba, uint32_t count)
{
    struct blk_dev *d = ctx;
    return kwaitdisk_xfer(d, d->topo.discard ? BLK_DISCARD : BLK_WRITE_ZEROES, lba, count, NULL);
}

/* ---- records ---- */

static int64_t wall_ms(void) { return wallclock_valid() ? (int64_t)wallclock_now() * 1000 : 0; }

static void show(struct shown *s, const char *line)
{
    snprintf(s->line[s->next], sizeof s->line[0], "%s", line);
    s->next = (s->next + 1) % KTELE_SHOWN;
    if (s->n < KTELE_SHOWN)
        s->n++;
}

/* Keep a record's JSON for $SYS. */
static void remember(uint8_t kind, uint64_t number, int64_t time_ms, const void *p, uint32_t len)
{
    struct tele_rec r = {.kind = kind, .version = 1, .number = number, .time_ms = time_ms,
                         .payload = p, .payload_len = len};
    char line[320];
    if (tele_rec_json(&r, line, sizeof line) >= sizeof line)
        return;
    show(kind == TELE_K_STATS ? &kt.history : &kt.events, line);
    spin_lock(&kt.lock);
    atomic_store_explicit(&kt.sys_dirty, 1, memory_order_release);
    spin_unlock(&kt.lock);
}

/* Main context: queue a record for the thread. */
static void queue(uint8_t kind, const void *p, uint32_t len)
{
    if (!kt.open)
        return;
    spin_lock(&kt.lock);
    unsigned used = kt.qtail - kt.qhead;
    spin_unlock(&kt.lock);
    if (used == KTELE_QUEUE || len > sizeof kt.q[0].payload) {
        kt.dropped++;
        return;
    }
    struct qrec *r = &kt.q[kt.qtail % KTELE_QUEUE]; /* ours until qtail passes it */
    r->kind = (uint8_t)kind;
    r->len = len;
    r->time_ms = wall_ms();
    memcpy(r->payload, p, len);
    spin_lock(&kt.lock);
    kt.qtail++;
    /* The number it will get: what the journal has plus what waits. */
    uint64_t number = kt.pub.next_record + (kt.qtail - kt.qhead) - 1;
    spin_unlock(&kt.lock);
    remember(kind, number, r->time_ms, p, len);
}

/* The writer's figures for the main loop; called locked. */
static void pub_refresh(void)
{
    kt.pub = (struct tele_pub){
        .next_record = kt.t.next_record, .head_seq = kt.t.head.head_seq,
        .tail_seq = kt.t.head.tail_seq, .nseg = kt.t.g.nseg, .expired = kt.t.expired,
        .discards = kt.t.discards, .errors = kt.errors, .oldest_ms = kt.oldest_ms,
    };
    atomic_store_explicit(&kt.sys_dirty, 1, memory_order_release);
}

/* The oldest live segment's start time, for $SYS: one block read when
 * the tail moved (at boot, and after an expiry). */
static void read_oldest(void)
{
    const uint64_t tail = kt.t.head.tail_seq;
    if (!kt.t.head.head_seq || tail == kt.oldest_seq)
        return;
    struct kdisk_report rep;
    struct tele_seg s;
    char why[KDISK_MSG_MAX];
    kdisk_report_clear(&rep);
    kt.oldest_seq = tail;
    kt.oldest_ms = 0;
    if (kdisk_read(&kt.bd.disk, tele_slot_lba(&kt.t.g, tele_slot(&kt.t.g, tail)), 1, kt.bd.disk.io,
                   "a telemetry segment header", &rep) == KDISK_OK &&
        tele_seg_decode(kt.bd.disk.io, kt.t.g.logical_block, &kt.t.g, tail, &s, why, sizeof why) ==
            TELE_VALID)
        kt.oldest_ms = s.created_ms;
}

/* Records wait: their indices, copied under the lock. */
static unsigned waiting(unsigned *head)
{
    spin_lock(&kt.lock);
    unsigned n = kt.qtail - kt.qhead;
    *head = kt.qhead;
    spin_unlock(&kt.lock);
    return n;
}

static bool has_records(void *arg)
{
    (void)arg;
    unsigned head;
    return waiting(&head) != 0;
}

static void writer(void *arg)
{
    (void)arg;
    for (;;) {
        kthread_wait_until(has_records, NULL, NULL);
        struct kdisk_report rep;
        kdisk_report_clear(&rep);
        int rc = KDISK_OK;
        unsigned head;
        while (waiting(&head) != 0 && rc == KDISK_OK) {
            struct qrec *r = &kt.q[head % KTELE_QUEUE]; /* ours until qhead passes it */
            rc = tele_append(&kt.t, r->kind, 1, r->time_ms, r->payload, r->len, &rep);
            if (rc == KDISK_OK) {
                spin_lock(&kt.lock);
                kt.qhead++;
                /* with qhead: queue() numbers a record next_record + waiting */
                kt.pub.next_record = kt.t.next_record;
                spin_unlock(&kt.lock);
                kt.written++;
            }
        }
        if (rc == KDISK_OK)
            rc = tele_sync(&kt.t, &rep);
        if (rc != KDISK_OK) {
            /* Said once per change of reason; the records stay queued (or in
             * the segment in memory) and the next batch tries again. */
            kt.errors++;
            if (strcmp(kt.last_error, rep.error))
                kprintf("tern: telemetry: %s\n", rep.error);
            snprintf(kt.last_error, sizeof kt.last_error, "%s", rep.error);
            kthread_yield();
        } else if (kt.last_error[0]) {
            kprintf("tern: telemetry: writing works again\n");
            kt.last_error[0] = 0;
        }
        if (rc == KDISK_OK)
            read_oldest();
        spin_lock(&kt.lock);
        pub_refresh();
        spin_unlock(&kt.lock);
        kthread_yield();
    }
}

/* ---- the certificate ---- */

void ktele_watch_cert(int64_t not_after_s) { kt.cert_not_after = not_after_s; }

/* A certificate record and a console warning when the server certificate
 * expires within KTELE_CERT_WARN_DAYS (or has expired). */
static void check_cert(void)
{
    if (!kt.cert_not_after || !wallclock_valid())
        return;
    const int64_t left = kt.cert_not_after - (int64_t)wallclock_now();
    if (left >= (int64_t)KTELE_CERT_WARN_DAYS * 86400)
        return;
    const int32_t days = (int32_t)(left >= 0 ? left / 86400 : -((-left + 86399) / 86400));
    uint8_t p[16] = {0};
    kdisk_put64(p, (uint64_t)kt.cert_not_after);
    kdisk_put32(p + 8, (uint32_t)days);
    queue(TELE_K_CERT, p, sizeof p);
    if (left >= 0)
        kprintf("tern: telemetry: warning: the server certificate expires in %d days\n", (int)days);
    else
        kprintf("tern: telemetry: warning: the server certificate expired %d days ago\n", (int)-days);
}

/* ---- boot ---- */

/* The newest boot number and the last record of the head segment. */
static void survey(uint64_t *boot, struct tele_rec *last, int *have_last)
{
    *boot = kt.t.have_seg ? kt.t.cur.boot : 0;
    *have_last = 0;
    if (!kt.t.have_seg)
        return;
    struct tele_iter it;
    struct tele_rec r;
    tele_iter_start(&it);
    while (tele_rec_next(kt.t.seg, TELE_SEG_BYTES, &kt.t.g, &kt.t.cur, &it, &r)) {
        if (r.kind == TELE_K_BOOT && r.version == 1 && r.payload_len >= 8 &&
            kdisk_le64(r.payload) > *boot)
            *boot = kdisk_le64(r.payload);
        *last = r;
        *have_last = 1;
        /* the head segment's records are the first $SYS shows */
        char line[320];
        if (tele_rec_json(&r, line, sizeof line) < sizeof line)
            show(r.kind == TELE_K_STATS ? &kt.history : &kt.events, line);
    }
}

static void put_text(uint8_t *dst, size_t n, const char *s)
{
    size_t l = strlen(s);
    memcpy(dst, s, l < n ? l : n);
}

int ktele_open(struct blk_dev *d, const struct klayout *l, const struct ktele_boot *boot,
               uint32_t interval_s)
{
    const struct kdisk_region *r = klayout_region(l, KDISK_REGION_TELEMETRY);
    char why[KDISK_MSG_MAX];
    struct tele_geom g;
    struct kdisk_report rep;
    if (!r || tele_geom_init(&g, l->super.sb.volume_id, r->lba, r->blocks, d->topo.logical_block,
                             d->topo.physical_block, why, sizeof why)) {
        kprintf("tern: telemetry: %s: %s; no journal\n", d->name, r ? why : "no telemetry region");
        return -1;
    }
    uint8_t *seg = kmalloc(TELE_SEG_BYTES);
    if (!seg || blkdisk_open(d, &kt.bd)) {
        kfree(seg);
        kprintf("tern: telemetry: no memory for the journal; no journal\n");
        return -1;
    }
    kt.dev = d;
    kwaitdisk_attach(&kt.bd);
    kdisk_report_clear(&rep);
    const int erase = d->topo.discard || d->topo.write_zeroes;
    int rc = tele_open(&kt.t, &kt.bd.disk, &g, seg, erase ? t_discard : NULL, d, &rep);
    for (unsigned i = 0; i < rep.note_count; i++)
        kprintf("tern: telemetry: %s\n", rep.notes[i]);
    if (rc) {
        kprintf("tern: telemetry: %s: %s; serving without a journal\n", d->name, rep.error);
        return -1;
    }
    uint64_t last_boot;
    struct tele_rec last = {0};
    int have_last;
    survey(&last_boot, &last, &have_last);
    kt.t.boot = last_boot + 1;
    kt.lock = (struct spinlock)SPINLOCK_INIT;
    spin_lock(&kt.lock);
    pub_refresh(); /* queue() numbers records from it */
    spin_unlock(&kt.lock);
    kt.open = 1;
    kt.interval_ms = kt.test_interval_ms ? kt.test_interval_ms : interval_s * 1000u;

    if (have_last && last.kind != TELE_K_STOP) {
        uint8_t p[24];
        kdisk_put64(p, last_boot);
        kdisk_put64(p + 8, last.number);
        kdisk_put64(p + 16, (uint64_t)last.time_ms);
        queue(TELE_K_POWER_CUT, p, sizeof p);
    }
    uint8_t b[96];
    memset(b, 0, sizeof b);
    kdisk_put64(b, kt.t.boot);
    kdisk_put32(b + 8, boot->mode);
    kdisk_put64(b + 16, boot->partition_bytes);
    put_text(b + 24, 32, boot->release);
    put_text(b + 56, 40, boot->disk);
    queue(TELE_K_BOOT, b, sizeof b);
    check_cert();
    /* Durable before the broker serves: appended and flushed here, on
     * the main context (the calls poll). */
    kdisk_report_clear(&rep);
    rc = KDISK_OK;
    while (kt.qhead != kt.qtail && rc == KDISK_OK) {
        struct qrec *q = &kt.q[kt.qhead % KTELE_QUEUE];
        rc = tele_append(&kt.t, q->kind, 1, q->time_ms, q->payload, q->len, &rep);
        if (rc == KDISK_OK)
            kt.qhead++;
    }
    if (rc == KDISK_OK)
        rc = tele_sync(&kt.t, &rep);
    if (rc) {
        kprintf("tern: telemetry: %s: %s; serving without a journal\n", d->name, rep.error);
        kt.open = 0;
        return -1;
    }
    kprintf("tern: telemetry: %s: boot %llu recorded (record %llu)%s; segments %llu..%llu of %llu, "
            "%s\n",
            d->name, (unsigned long long)kt.t.boot, (unsigned long long)(kt.t.next_record - 1),
            have_last && last.kind != TELE_K_STOP ? " after a power cut" : "",
            (unsigned long long)kt.t.head.tail_seq, (unsigned long long)kt.t.head.head_seq,
            (unsigned long long)g.nseg,
            d->topo.discard ? "expired space discarded" : d->topo.write_zeroes ? "expired space zeroed"
                                                                               : "no discard");
    read_oldest();
    kt.thread = kthread_create("telemetry", KTELE_STACK_PAGES, writer, NULL);
    kstorecpu_add(kt.thread);
    spin_lock(&kt.lock);
    pub_refresh();
    spin_unlock(&kt.lock);
    return 0;
}

#ifdef TERN_TEST_HOOKS
void ktele_test_interval_ms(uint32_t ms) { kt.test_interval_ms = ms; }
#endif

/* ---- the main loop ---- */

static void put_shown(broker *b, const char *topic, const struct shown *s)
{
    char *buf = kmalloc(KTELE_SHOWN * sizeof s->line[0] + 1);
    if (!buf)
        return;
    size_t len = 0;
    for (unsigned i = 0; i < s->n; i++) {
        const char *line = s->line[(s->next + KTELE_SHOWN - s->n + i) % KTELE_SHOWN];
        size_t l = strlen(line);
        memcpy(buf + len, line, l);
        len += l;
        buf[len++] = '\n';
    }
    buf[len] = 0;
    broker_sys_put(b, topic, buf);
    kfree(buf);
}

static void put_u64(broker *b, const char *topic, uint64_t v)
{
    char buf[24];
    snprintf(buf, sizeof buf, "%llu", (unsigned long long)v);
    broker_sys_put(b, topic, buf);
}

/* The $SYS topics from pub (a copy taken under the lock) and the main
 * loop's own records and counters. */
static void publish(broker *b, const struct tele_pub *p)
{
    put_shown(b, "$SYS/broker/telemetry/events", &kt.events);
    put_shown(b, "$SYS/broker/telemetry/history", &kt.history);
    put_u64(b, "$SYS/broker/telemetry/records", p->next_record - 1);
    put_u64(b, "$SYS/broker/telemetry/segments",
            p->head_seq ? p->head_seq - p->tail_seq + 1 : 0);
    put_u64(b, "$SYS/broker/telemetry/segments_total", p->nseg);
    put_u64(b, "$SYS/broker/telemetry/oldest_ms", (uint64_t)p->oldest_ms);
    put_u64(b, "$SYS/broker/telemetry/expired_segments", p->expired);
    put_u64(b, "$SYS/broker/telemetry/discards", p->discards);
    put_u64(b, "$SYS/broker/telemetry/dropped", kt.dropped);
    put_u64(b, "$SYS/broker/telemetry/errors", p->errors);
}

static void stats_record(broker *b, const broker_store_status *st, uint64_t now_ms)
{
    broker_stats bs;
    broker_get_stats(b, &bs);
    struct kmalloc_stats ms;
    kmalloc_get_stats(&ms);
    ksqlite_heap_add(&ms);
    uint64_t v[10] = {kt.t.boot, now_ms - kt.boot_ms, bs.clients_connected, bs.msgs_received,
                      bs.msgs_sent, bs.publish_dropped, st ? st->commits : 0,
                      st ? st->failed_commits : 0, ms.bytes_in_use, (uint64_t)ms.pages * 4096u};
    uint8_t p[80];
    for (unsigned i = 0; i < 10; i++)
        kdisk_put64(p + 8 * i, v[i]);
    queue(TELE_K_STATS, p, sizeof p);
}

int ktele_poll(broker *b, struct kstore *k, uint64_t now_ms)
{
    if (!kt.open)
        return 0;
    const unsigned tail = kt.qtail; /* the main loop's own index */
    broker_store_status st;
    if (k) {
        kstore_status(k, &st);
        if (kt.have_status && st.failing != kt.last.failing) {
            uint8_t p[16] = {0};
            kdisk_put32(p, st.failing ? 1 : 0);
            kdisk_put64(p + 8, st.failed_commits);
            queue(TELE_K_STORE, p, sizeof p);
        }
        for (int failed = 0; kt.have_status && failed < 2; failed++) {
            uint64_t now = failed ? st.backups_failed : st.backups_done;
            uint64_t was = failed ? kt.last.backups_failed : kt.last.backups_done;
            if (now != was) {
                uint8_t p[16] = {0};
                kdisk_put32(p, (uint32_t)failed);
                kdisk_put64(p + 8, now);
                queue(TELE_K_BACKUP, p, sizeof p);
            }
        }
        kt.last = st;
        kt.have_status = 1;
    }
    if (!kt.boot_ms) {
        kt.boot_ms = now_ms ? now_ms : 1;
        kt.next_stats_ms = now_ms + kt.interval_ms;
    }
    if (!kt.next_cert_ms)
        kt.next_cert_ms = now_ms + KTELE_CERT_CHECK_MS;
    if (now_ms >= kt.next_cert_ms) {
        check_cert();
        kt.next_cert_ms = now_ms + KTELE_CERT_CHECK_MS;
    }
    if (kt.interval_ms && now_ms >= kt.next_stats_ms) {
        stats_record(b, k ? &st : NULL, now_ms);
        kt.next_stats_ms = now_ms + kt.interval_ms;
    }
    /* The flag first, without the lock (issue 18: no lock per turn on the
     * network CPU): set under the lock after pub changed, so a set flag
     * seen here means the copy below is at least that fresh. */
    if (atomic_load_explicit(&kt.sys_dirty, memory_order_acquire)) {
        spin_lock(&kt.lock);
        struct tele_pub pub = kt.pub;
        atomic_store_explicit(&kt.sys_dirty, 0, memory_order_relaxed);
        spin_unlock(&kt.lock);
        publish(b, &pub);
    }
    return kstorecpu_run(kt.thread, kt.qtail != tail);
}

int ktele_lock_stats(struct spin_stats *out)
{
    if (!kt.open)
        return 0;
    spin_stats_read(&kt.lock, out);
    return 1;
}
