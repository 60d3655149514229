/*
 * test_kblk.c - the kernel's block layer (dev/blk.c) on the host, over the
 * test builds' RAM disk (dev/ramdisk.c), with a fake clock: requests
 * outside the device or its limits, unsupported operations and writes to a
 * read-only disk are refused before a driver sees them; completions are
 * counted; the synchronous helpers round-trip data and retry a full queue;
 * a device that stops answering is given up after BLK_TIMEOUT_MS with
 * every request failed; a volatile write cache without flush is refused
 * for durable storage; the description line says what the disk offers;
 * the configuration-change interrupt counts a change on the disks that
 * take it and keeps the main loop awake.
 */
#include "test.h"

#define TERN_TEST_HOOKS 1
#include "platform/kernel/dev/blk.c"
#include "platform/kernel/dev/ramdisk.c"

#include <stdarg.h>
#include <stdlib.h>

/* Each reading of the clock moves it on a millisecond, so waits end. */
static uint64_t fake_now;
uint64_t clock_mono_ns(void) { return fake_now += 1000000; }

static char last_log[256];
void kprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_log, sizeof last_log, fmt, ap);
    va_end(ap);
}

enum { CAP = 64 };

static const struct blk_topology topo_512 = {
    .logical_block = 512, .physical_block = 4096, .optimal_io = 65536, .capacity = CAP,
    .max_transfer = 8192, .max_discard = 16, .max_write_zeroes = 32, .write_cache = true,
    .flush = true, .discard = true, .write_zeroes = true,
};

static struct ramdisk *disk(const struct blk_topology *t)
{
    static struct ramdisk rd;
    static uint8_t store[CAP * 4096];
    memset(store, 0, sizeof store);
    if (ramdisk_init(&rd, t, store, "ram0") != 0)
        return NULL;
    return &rd;
}

static int completions;
static void count_done(struct blk_req *r) { (void)r; completions++; }

TEST(kblk_requests_outside_the_device_or_its_limits_are_refused)
{
    struct ramdisk *rd = disk(&topo_512);
    CHECK(rd);
    struct blk_dev *d = &rd->dev;
    static uint8_t buf[16384];
    completions = 0;
    struct blk_req r = {.op = BLK_READ, .lba = CAP - 1, .count = 2, .buf = buf, .done = count_done};
    CHECK_EQ(blk_submit(d, &r), BLK_ERANGE);           /* runs off the end */
    r.lba = CAP;
    r.count = 1;
    CHECK_EQ(blk_submit(d, &r), BLK_ERANGE);           /* starts beyond it */
    r.lba = UINT64_MAX;
    CHECK_EQ(blk_submit(d, &r), BLK_ERANGE);           /* no wrap-around */
    r.lba = 0;
    r.count = 0;
    CHECK_EQ(blk_submit(d, &r), BLK_ERANGE);           /* empty */
    r.count = 17;
    CHECK_EQ(blk_submit(d, &r), BLK_ERANGE);           /* above max_transfer (16) */
    r.count = 16;
    r.buf = NULL;
    CHECK_EQ(blk_submit(d, &r), BLK_EINVAL);
    r.buf = buf;
    r.flags = 0x80;
    CHECK_EQ(blk_submit(d, &r), BLK_EINVAL);           /* unknown flag */
    r.flags = BLK_F_FUA;
    CHECK_EQ(blk_submit(d, &r), BLK_EUNSUPP);          /* no FUA on this disk */
    r.flags = 0;
    r.op = (enum blk_op)42;
    CHECK_EQ(blk_submit(d, &r), BLK_EINVAL);
    struct blk_req f = {.op = BLK_FLUSH, .count = 1, .done = count_done};
    CHECK_EQ(blk_submit(d, &f), BLK_ERANGE);           /* a flush has no range */
    struct blk_req z = {.op = BLK_DISCARD, .lba = 0, .count = 17, .done = count_done};
    CHECK_EQ(blk_submit(d, &z), BLK_ERANGE);           /* above max_discard */
    z.op = BLK_WRITE_ZEROES;
    z.count = 33;
    CHECK_EQ(blk_submit(d, &z), BLK_ERANGE);           /* above max_write_zeroes */
    CHECK_EQ(rd->queued, 0);                           /* the driver saw none */
    CHECK_EQ(d->inflight, 0);
    CHECK_EQ(completions, 0);
}

TEST(kblk_unsupported_operations_and_read_only_writes_are_refused)
{
    struct blk_topology t = topo_512;
    t.flush = t.discard = t.write_zeroes = false;
    t.write_cache = false;
    struct ramdisk *rd = disk(&t);
    CHECK(rd);
    struct blk_req r = {.op = BLK_FLUSH, .done = count_done};
    CHECK_EQ(blk_submit(&rd->dev, &r), BLK_EUNSUPP);
    r = (struct blk_req){.op = BLK_DISCARD, .count = 1, .done = count_done};
    CHECK_EQ(blk_submit(&rd->dev, &r), BLK_EUNSUPP);
    r.op = BLK_WRITE_ZEROES;
    CHECK_EQ(blk_submit(&rd->dev, &r), BLK_EUNSUPP);
    t = topo_512;
    t.read_only = true;
    rd = disk(&t);
    uint8_t buf[512] = {0};
    CHECK_EQ(blk_write_sync(&rd->dev, 0, 1, buf, 0), BLK_EUNSUPP);
    CHECK_EQ(blk_erase_sync(&rd->dev, BLK_DISCARD, 0, 1), BLK_EUNSUPP);
    CHECK_EQ(blk_read_sync(&rd->dev, 0, 1, buf), BLK_OK);
}

TEST(kblk_sync_helpers_round_trip_and_count)
{
    struct ramdisk *rd = disk(&topo_512);
    CHECK(rd);
    struct blk_dev *d = &rd->dev;
    uint8_t *out = malloc(8192), *in = malloc(8192);
    for (int i = 0; i < 8192; i++)
        out[i] = (uint8_t)(i * 7 + 3);
    CHECK_EQ(blk_write_sync(d, 10, 16, out, 0), BLK_OK);
    CHECK_EQ(blk_flush_sync(d), BLK_OK);
    CHECK_EQ(blk_read_sync(d, 10, 16, in), BLK_OK);
    CHECK_MEM(in, out, 8192);
    CHECK_EQ(blk_erase_sync(d, BLK_WRITE_ZEROES, 11, 2), BLK_OK);
    CHECK_EQ(blk_read_sync(d, 10, 4, in), BLK_OK);
    CHECK_MEM(in, out, 512);
    for (int i = 512; i < 1536; i++)
        CHECK_EQ(in[i], 0);
    CHECK_MEM(in + 1536, out + 1536, 512);
    CHECK_EQ(blk_erase_sync(d, BLK_DISCARD, 20, 4), BLK_OK);
    CHECK_EQ(blk_erase_sync(d, BLK_READ, 20, 4), BLK_EINVAL);
    CHECK_EQ(d->writes, 1);
    CHECK_EQ(d->reads, 2);
    CHECK_EQ(d->flushes, 1);
    CHECK_EQ(d->zeroes, 1);
    CHECK_EQ(d->discards, 1);
    CHECK_EQ(d->bytes_written, 8192);
    CHECK_EQ(d->bytes_read, 8192 + 2048);
    CHECK_EQ(d->errors, 0);
    CHECK_EQ(d->inflight, 0);
    free(out);
    free(in);
}

TEST(kblk_device_errors_reach_the_user_and_are_counted)
{
    struct ramdisk *rd = disk(&topo_512);
    CHECK(rd);
    uint8_t buf[512] = {1};
    rd->fail_writes = true;
    CHECK_EQ(blk_write_sync(&rd->dev, 0, 1, buf, 0), BLK_EIO);
    rd->fail_flushes = true;
    CHECK_EQ(blk_flush_sync(&rd->dev), BLK_EIO);
    CHECK_EQ(rd->dev.errors, 2);
    CHECK_EQ(rd->dev.writes, 0);
    CHECK(!rd->dev.failed);                            /* an error is not a dead device */
}

TEST(kblk_full_queue_is_eagain_and_sync_helpers_wait_it_out)
{
    struct ramdisk *rd = disk(&topo_512);
    CHECK(rd);
    rd->queue_max = 1;
    uint8_t a[512], b[512];
    struct blk_req r1 = {.op = BLK_READ, .count = 1, .buf = a, .done = count_done};
    struct blk_req r2 = {.op = BLK_READ, .count = 1, .buf = b, .done = count_done};
    completions = 0;
    CHECK_EQ(blk_submit(&rd->dev, &r1), BLK_OK);
    CHECK_EQ(blk_submit(&rd->dev, &r2), BLK_EAGAIN);
    CHECK_EQ(completions, 0);                          /* never from inside submit */
    CHECK_EQ(rd->dev.inflight, 1);
    CHECK_EQ(blk_read_sync(&rd->dev, 1, 1, b), BLK_OK); /* polls r1 out of the way */
    CHECK_EQ(completions, 1);
    CHECK_EQ(r1.status, BLK_OK);
}

TEST(kblk_stalled_device_is_given_up_after_the_timeout)
{
    struct ramdisk *rd = disk(&topo_512);
    CHECK(rd);
    CHECK(blk_register(&rd->dev) == 0 || blk_count() == BLK_MAX_DEVICES);
    rd->stall = true;
    uint8_t a[512], b[512];
    struct blk_req r1 = {.op = BLK_READ, .count = 1, .buf = a, .done = count_done};
    completions = 0;
    CHECK_EQ(blk_submit(&rd->dev, &r1), BLK_OK);
    CHECK(blk_irq_pending());                          /* polled, busy: no sleeping */
    uint64_t t0 = fake_now;
    CHECK_EQ(blk_read_sync(&rd->dev, 1, 1, b), BLK_EIO);
    CHECK(fake_now - t0 >= (uint64_t)BLK_TIMEOUT_MS * 1000000);
    CHECK(rd->reset);
    CHECK(rd->dev.failed);
    CHECK_EQ(completions, 1);                          /* the async one failed too */
    CHECK_EQ(r1.status, BLK_EIO);
    CHECK_EQ(rd->dev.inflight, 0);
    CHECK(strstr(last_log, "ram0: no completion within the time limit; disk given up"));
    CHECK_EQ(blk_submit(&rd->dev, &r1), BLK_EIO);      /* for good */
    CHECK(!blk_irq_pending());
    const char *why;
    CHECK(!blk_durable_ok(&rd->dev, &why));
    CHECK(strstr(why, "given up"));
    blk_poll_all();                                    /* a failed device is skipped */
}

TEST(kblk_config_interrupt_counts_a_change_on_disks_that_take_it)
{
    static struct ramdisk a, b;
    static uint8_t sa[CAP * 512], sb[CAP * 512];
    CHECK_EQ(ramdisk_init(&a, &topo_512, sa, "cfg-irq"), 0);
    CHECK_EQ(ramdisk_init(&b, &topo_512, sb, "cfg-polled"), 0);
    a.dev.cfg_irq = true;                              /* b's capacity is polled */
    CHECK_EQ(blk_register(&a.dev), 0);
    CHECK_EQ(blk_register(&b.dev), 0);
    blk_poll_all();
    CHECK(!blk_irq_pending());
    blk_config_irq();
    CHECK_EQ(a.dev.cfg_changes, 1u);
    CHECK_EQ(b.dev.cfg_changes, 0u);
    CHECK(blk_irq_pending());                          /* the main loop takes a turn */
    blk_config_irq();
    CHECK_EQ(a.dev.cfg_changes, 2u);                   /* each one counted */
    blk_poll_all();
    CHECK(!blk_irq_pending());
}

TEST(kblk_volatile_cache_without_flush_is_not_durable)
{
    struct blk_topology t = topo_512;
    const char *why = NULL;
    struct ramdisk *rd = disk(&t);
    CHECK(rd && blk_durable_ok(&rd->dev, &why));
    t.flush = false;
    rd = disk(&t);
    CHECK(!blk_durable_ok(&rd->dev, &why));
    CHECK(strcmp(why, "volatile write cache without flush") == 0);
    t.write_cache = false;                             /* write-through: fine */
    rd = disk(&t);
    CHECK(blk_durable_ok(&rd->dev, &why));
    t.read_only = true;
    rd = disk(&t);
    CHECK(!blk_durable_ok(&rd->dev, &why));
    CHECK(strcmp(why, "read-only") == 0);
}

TEST(kblk_describe_says_size_blocks_cache_and_operations)
{
    struct blk_topology t = topo_512;
    t.fua = true;
    struct ramdisk *rd = disk(&t);
    CHECK(rd);
    char line[256];
    blk_describe(&rd->dev, line, sizeof line);
    CHECK(strcmp(line, "ram0 \"RAM disk\": 32 KiB (64 x 512 B), physical 4 KiB, optimal i/o "
                       "64 KiB, max transfer 8 KiB; volatile write cache, flush, fua, discard, "
                       "write-zeroes; polled") == 0);
    CHECK(strcmp(blk_status_text(BLK_ERANGE), "outside the device or its limits") == 0);
    CHECK(strcmp(blk_status_text(7), "unknown status") == 0);
    t.logical_block = 3;
    CHECK(disk(&t) == NULL);
}
