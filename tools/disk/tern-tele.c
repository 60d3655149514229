/*
 * tern-tele.c - the host reader of a disk image's telemetry journal (SPEC
 * D7): the power-cut harness and the kernel tests read the journal with it
 * after each boot, through the same parser the kernel writes with
 * (src/platform/kernel/disk/tele.c). Reads only.
 *
 *   tern-tele [--logical-block 512|4096] IMAGE
 *       "head H tail T generation G slots N lba L seg0 B" (the region's
 *       first LBA, the first slot's byte offset in it); then one JSON
 *       object per record, oldest first ({"segment":S,...the record...});
 *       a live segment that fails its checks: "bad segment S: WHY".
 *       Exit 0 when the journal reads cleanly (empty included), 1 when a
 *       live segment is bad, 2 when the layout or the journal is refused.
 */
#define _GNU_SOURCE

#include "platform/kernel/disk/layout.h"
#include "platform/kernel/disk/tele.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct fdisk {
    struct kdisk disk;
    int fd;
};

static int fd_read(void *ctx, uint64_t lba, uint32_t count, void *buf)
{
    struct fdisk *f = ctx;
    size_t len = (size_t)count * f->disk.logical_block;
    ssize_t n = pread(f->fd, buf, len, (off_t)(lba * f->disk.logical_block));
    return n == (ssize_t)len ? 0 : -EIO;
}

static unsigned bad_count;

static void on_rec(void *ctx, const struct tele_seg *s, const struct tele_rec *r)
{
    (void)ctx;
    char line[512];
    if (tele_rec_json(r, line, sizeof line) >= sizeof line)
        snprintf(line, sizeof line, "{}");
    /* {"segment":S, followed by the record's own fields */
    printf("{\"segment\":%llu,\"segment_boot\":%llu,%s\n", (unsigned long long)s->seq,
           (unsigned long long)s->boot, line + 1);
}

static void on_bad(void *ctx, uint64_t seq, const char *why)
{
    (void)ctx;
    bad_count++;
    printf("bad segment %llu: %s\n", (unsigned long long)seq, why);
}

int main(int argc, char **argv)
{
    uint32_t logical = 512;
    int i = 1;
    if (i + 1 < argc && !strcmp(argv[i], "--logical-block")) {
        logical = (uint32_t)atoi(argv[i + 1]);
        i += 2;
    }
    if (i + 1 != argc) {
        fprintf(stderr, "usage: tern-tele [--logical-block 512|4096] IMAGE\n");
        return 2;
    }
    const char *path = argv[i];
    static struct fdisk f;
    f.fd = open(path, O_RDONLY);
    struct stat st;
    if (f.fd < 0 || fstat(f.fd, &st)) {
        fprintf(stderr, "%s: %s\n", path, strerror(errno));
        return 2;
    }
    uint8_t *io = aligned_alloc(512, KDISK_IO_BYTES);
    uint8_t *seg = malloc(TELE_SEG_BYTES);
    static struct klayout l;
    if (!io || !seg)
        return 2;
    f.disk = (struct kdisk){.read = fd_read, .ctx = &f, .logical_block = logical,
                            .physical_block = logical, .capacity = (uint64_t)st.st_size / logical,
                            .io = io};
    struct kdisk_report rep;
    kdisk_report_clear(&rep);
    static const uint8_t none[16];
    if (klayout_open(&f.disk, 0, none, &l, &rep)) {
        fprintf(stderr, "%s: %s\n", path, rep.error[0] ? rep.error : "blank tern partition");
        return 2;
    }
    const struct kdisk_region *r = klayout_region(&l, KDISK_REGION_TELEMETRY);
    struct tele_geom g;
    char why[KDISK_MSG_MAX];
    if (!r || tele_geom_init(&g, l.super.sb.volume_id, r->lba, r->blocks, logical,
                             l.super.sb.physical_block, why, sizeof why)) {
        fprintf(stderr, "%s: %s\n", path, r ? why : "no telemetry region");
        return 2;
    }
    static struct tele t;
    kdisk_report_clear(&rep);
    if (tele_open(&t, &f.disk, &g, seg, NULL, NULL, &rep)) {
        fprintf(stderr, "%s: %s\n", path, rep.error);
        return 2;
    }
    for (unsigned n = 0; n < rep.note_count; n++)
        printf("note: %s\n", rep.notes[n]);
    printf("head %llu tail %llu generation %llu slots %llu lba %llu seg0 %llu\n",
           (unsigned long long)t.head.head_seq, (unsigned long long)t.head.tail_seq,
           (unsigned long long)t.head.generation, (unsigned long long)g.nseg,
           (unsigned long long)g.lba, (unsigned long long)g.seg0);
    kdisk_report_clear(&rep);
    if (tele_scan(&f.disk, &g, &t.head, seg, on_rec, on_bad, NULL, &rep)) {
        fprintf(stderr, "%s: %s\n", path, rep.error);
        return 2;
    }
    return bad_count ? 1 : 0;
}
