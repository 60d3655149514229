/*
 * gen_disk_seeds.c - writes fuzz_disk's seeds under
 * tests/fuzz/corpus/disk/ (make fuzz-seeds). The GPTs and superblocks come
 * from the layout's own writer and formatter on a memory disk, and the
 * region headers from the store VFS's encoder, so the seeds stay valid
 * when that code changes; fuzz_disk.c describes
 * the input format of each mode.
 *
 * Usage: gen_disk_seeds CORPUS_DIR
 */
#include "platform/kernel/disk/layout.h"
#include "platform/kernel/store/region.h"
#include "unit/mem_disk.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MIB = 1 << 20, SEED_MAX = 64 * 1024 };

struct seed {
    uint8_t b[SEED_MAX];
    size_t len;
};

static void put(struct seed *s, const void *p, size_t n)
{
    if (s->len + n > sizeof s->b) {
        fprintf(stderr, "gen_disk_seeds: seed overflow\n");
        exit(1);
    }
    memcpy(s->b + s->len, p, n);
    s->len += n;
}

static void put_u8(struct seed *s, uint8_t v) { put(s, &v, 1); }

static void put_u32(struct seed *s, uint32_t v)
{
    uint8_t b[4];
    kdisk_put32(b, v);
    put(s, b, 4);
}

static void write_seed(const char *dir, const char *name, const struct seed *s)
{
    char path[512];
    snprintf(path, sizeof path, "%s/disk/seed-%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(s->b, 1, s->len, f) != s->len || fclose(f) != 0) {
        perror(path);
        exit(1);
    }
}

static void must(int rc, const struct kdisk_report *rep)
{
    if (rc) {
        fprintf(stderr, "gen_disk_seeds: %d %s\n", rc, rep->error);
        exit(1);
    }
}

static const uint8_t random64[64] = {7, 7, 7, 7, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12,
                                     13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28,
                                     29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44};

static uint8_t flags_of(uint32_t logical, uint32_t physical)
{
    return (uint8_t)((logical == 4096 ? 1 : 0) | (physical == 4096 ? 2 : 0));
}

/* A partitioned and formatted disk of 64 MiB. */
static void make_disk(struct mem_disk *m, uint32_t logical, uint32_t physical)
{
    struct kdisk_report rep;
    static struct klayout l;
    kdisk_report_clear(&rep);
    if (mem_disk_init(m, logical, physical, 64ull * MIB / logical)) {
        fprintf(stderr, "gen_disk_seeds: out of memory\n");
        exit(1);
    }
    must(klayout_partition(&m->disk, 0, 8 * MIB, random64, &rep), &rep);
    must(klayout_open(&m->disk, KLAYOUT_FORMAT, random64, &l, &rep), &rep);
}

/* Mode 0: the disk's GPT areas (head up to the first usable LBA, tail from
 * the backup array on). */
static void gpt_seed(const char *dir, const char *name, struct mem_disk *m)
{
    struct seed s = {.len = 0};
    const uint32_t bs = m->disk.logical_block;
    const size_t head = 2 * bs + 16384, tail = bs + 16384;
    put_u8(&s, 0);
    put_u8(&s, flags_of(bs, m->disk.physical_block));
    put_u32(&s, (uint32_t)m->disk.capacity - 1); /* the target adds 1 */
    put_u32(&s, (uint32_t)head);
    put(&s, m->data, head);
    put(&s, m->data + m->bytes - tail, tail);
    write_seed(dir, name, &s);
}

/* Mode 2: the data partition's two slots (it starts at 9 MiB). */
static void slots_seed(const char *dir, const char *name, struct mem_disk *m)
{
    struct seed s = {.len = 0};
    uint8_t size[2];
    kdisk_put16(size, 54 - 1); /* the data partition's MiB, less 1 */
    put_u8(&s, 2);
    put_u8(&s, flags_of(m->disk.logical_block, m->disk.physical_block));
    put(&s, size, 2);
    put(&s, m->data + 9 * MIB + KSUPER_SLOT_A, KSUPER_READ_BYTES);
    put(&s, m->data + 9 * MIB + KSUPER_SLOT_B, KSUPER_READ_BYTES);
    write_seed(dir, name, &s);
}

static void plan_seed(const char *dir, const char *name, uint8_t flags, uint32_t start_4k,
                      uint32_t size_4k, uint32_t optimal)
{
    struct seed s = {.len = 0};
    put_u8(&s, 3);
    put_u8(&s, flags);
    put_u32(&s, start_4k);
    put_u32(&s, size_4k);
    put_u32(&s, optimal);
    write_seed(dir, name, &s);
}

/* Mode 4: two region header copies from the VFS's own encoder, for a
 * region of role at LBA 2048 of 8192 blocks holding 4 MiB - 8 KiB. */
static void region_seed(const char *dir, const char *name, uint8_t flags, uint32_t role,
                        const uint8_t *c0, size_t len0, const uint8_t *c1, size_t len1)
{
    struct seed s = {.len = 0};
    put_u8(&s, 4);
    put_u8(&s, flags);
    put_u8(&s, (uint8_t)role);
    put_u32(&s, 2048);
    put_u32(&s, 8192);
    put_u32(&s, 8192 - 16);
    put_u8(&s, (uint8_t)len0);
    put(&s, c0, len0);
    put(&s, c1, len1);
    write_seed(dir, name, &s);
}

static void region_seeds(const char *dir)
{
    struct rgn_hdr h = {.role = RGN_ROLE_DB, .owner = RGN_OWNER_MAIN, .seq = 7,
                        .size = 1 << 20, .lba = 2048, .blocks = 8192};
    uint8_t a[RGN_HDR_BYTES], b[RGN_HDR_BYTES], blank[RGN_HDR_BYTES] = {0};
    rgn_hdr_encode(&h, a);
    h.seq = 8;
    h.size = 2 << 20;
    rgn_hdr_encode(&h, b);
    region_seed(dir, "region-db", 0, RGN_ROLE_DB, a, sizeof a, b, sizeof b);
    b[40] ^= 1; /* a torn newer copy: the older one is used */
    region_seed(dir, "region-db-torn", 0, RGN_ROLE_DB, a, sizeof a, b, sizeof b);
    region_seed(dir, "region-db-fixed", 1, RGN_ROLE_DB, a, sizeof a, b, sizeof b);
    region_seed(dir, "region-db-short", 0, RGN_ROLE_DB, a, 20, b, sizeof b);
    h = (struct rgn_hdr){.role = RGN_ROLE_LOG, .owner = RGN_OWNER_WAL, .seq = 1,
                         .size = 4096 * 3, .lba = 2048, .blocks = 8192};
    rgn_hdr_encode(&h, a);
    region_seed(dir, "region-log-wal", 0, RGN_ROLE_LOG, a, sizeof a, blank, sizeof blank);
    region_seed(dir, "region-blank", 0, RGN_ROLE_BACKUP, blank, sizeof blank, blank,
                sizeof blank);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: gen_disk_seeds CORPUS_DIR\n");
        return 2;
    }
    const char *dir = argv[1];
    struct mem_disk m;
    static const uint32_t geo[][2] = {{512, 512}, {512, 4096}, {4096, 4096}};
    static const char *names[] = {"512", "512-4096", "4096"};
    for (unsigned i = 0; i < 3; i++) {
        char name[64];
        make_disk(&m, geo[i][0], geo[i][1]);
        snprintf(name, sizeof name, "gpt-%s", names[i]);
        gpt_seed(dir, name, &m);
        snprintf(name, sizeof name, "slots-%s", names[i]);
        slots_seed(dir, name, &m);
        if (i == 0) {
            /* the backup path: a primary header with a bad CRC */
            m.data[512 + 16] ^= 1;
            gpt_seed(dir, "gpt-512-bad-primary", &m);
            /* one slot with a bad CRC, and a superblock alone (mode 1) */
            struct seed s = {.len = 0};
            put_u8(&s, 1);
            put(&s, m.data + 9 * MIB, KSUPER_BYTES);
            write_seed(dir, "super", &s);
            m.data[9 * MIB + KSUPER_SLOT_B + 30] ^= 1;
            slots_seed(dir, "slots-512-bad-b", &m);
        }
        mem_disk_free(&m);
    }
    plan_seed(dir, "plan-1g", 0, 256, 262144, 0);
    plan_seed(dir, "plan-optimal-192k", 2, 1, 262144, 192 * 1024);
    plan_seed(dir, "plan-too-small", 0, 256, 5000, 0);
    region_seeds(dir);
    return 0;
}
