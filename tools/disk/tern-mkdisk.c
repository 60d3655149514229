/*
 * tern-mkdisk.c - the host tool that partitions a raw disk image for tern
 * (SPEC F3, issue 13): a GPT with an EFI System Partition of a given size
 * and tern's data partition filling the rest, zeroed, so the kernel finds
 * it blank and formats layout v3 on first boot. The same layout code as
 * the kernel's (src/platform/kernel/disk) writes it. Putting GRUB and the
 * kernel into the ESP is the image builder's step, not this tool's.
 *
 *   tern-mkdisk [--size SIZE] [--bios-boot SIZE] [--esp SIZE] [--logical-block 512|4096]
 *               [--physical-block BYTES] IMAGE
 *       SIZE: bytes, or with a K, M or G suffix (binary). With --size the
 *       image is created (or truncated) as a sparse file of that size;
 *       without, the existing file's size is used and its contents past
 *       the GPT are lost. --esp defaults to 64M; 0 means no ESP.
 *       --bios-boot (default 0: none) puts a BIOS boot partition for
 *       GRUB's core.img in front of the ESP (the image builder's disks).
 *       --guid-seed HEX (128 hex digits, 64 bytes) replaces the random
 *       bytes the disk's and partitions' GUIDs are made from: release
 *       builds derive it from the version and commit so two builds of one
 *       commit give the same image (docs/RELEASING.md).
 *   tern-mkdisk --show [--logical-block 512|4096] IMAGE
 *       print the GPT, the data partition and its layout (or why it is
 *       refused) without writing; exit 0 when usable or blank.
 */
#define _GNU_SOURCE

#include "platform/kernel/disk/layout.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

enum {
    MIB = 1024 * 1024,
    SHORT_IO = -100000, /* a status for a short read or write; others are -errno */
};

struct image {
    int fd;
    const char *path;
};

/* The file behind a struct kdisk; pread/pwrite with the block size. */
struct file_disk {
    struct kdisk disk;
    struct image img;
};

static int fd_read(void *ctx, uint64_t lba, uint32_t count, void *buf)
{
    struct file_disk *f = ctx;
    size_t len = (size_t)count * f->disk.logical_block;
    ssize_t n = pread(f->img.fd, buf, len, (off_t)(lba * f->disk.logical_block));
    return n == (ssize_t)len ? 0 : n < 0 ? -errno : SHORT_IO;
}

static int fd_write(void *ctx, uint64_t lba, uint32_t count, const void *buf)
{
    struct file_disk *f = ctx;
    size_t len = (size_t)count * f->disk.logical_block;
    ssize_t n = pwrite(f->img.fd, buf, len, (off_t)(lba * f->disk.logical_block));
    return n == (ssize_t)len ? 0 : n < 0 ? -errno : SHORT_IO;
}

static int fd_flush(void *ctx)
{
    struct file_disk *f = ctx;
    return fsync(f->img.fd) ? -errno : 0;
}

/* Text of a status from the calls above. */
static const char *fd_status(int status)
{
    if (status == SHORT_IO)
        return "short read or write (past the end of the file?)";
    return strerror(-status);
}

static int parse_size(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *s == '-')
        return -1;
    unsigned shift = 0;
    if (*end == 'K' || *end == 'k')
        shift = 10, end++;
    else if (*end == 'M' || *end == 'm')
        shift = 20, end++;
    else if (*end == 'G' || *end == 'g')
        shift = 30, end++;
    if (*end || (shift && v > (~0ull >> shift)))
        return -1;
    *out = (uint64_t)v << shift;
    return 0;
}

/* 128 hex digits -> 64 bytes; -1 for anything else. */
static int parse_seed(const char *s, uint8_t out[64])
{
    if (strlen(s) != 128)
        return -1;
    for (size_t i = 0; i < 128; i++) {
        char c = s[i];
        int v = c >= '0' && c <= '9' ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
        if (v < 0)
            return -1;
        out[i / 2] = (uint8_t)(i % 2 ? out[i / 2] | v : v << 4);
    }
    return 0;
}

static void usage(void)
{
    fprintf(stderr, "usage: tern-mkdisk [--size SIZE] [--bios-boot SIZE] [--esp SIZE]\n"
                    "                   [--logical-block 512|4096] [--guid-seed HEX128]\n"
                    "                   [--physical-block BYTES] IMAGE\n"
                    "       tern-mkdisk --show [--logical-block 512|4096] IMAGE\n");
    exit(2);
}

static void print_report(const char *path, const struct kdisk_report *rep)
{
    for (unsigned i = 0; i < rep->note_count; i++)
        printf("%s: note: %s\n", path, rep->notes[i]);
}

static int show(struct file_disk *f)
{
    struct kdisk_report rep;
    static struct klayout l;
    static const uint8_t unused[16];
    kdisk_report_clear(&rep);
    int rc = klayout_open(&f->disk, 0, unused, &l, &rep);
    print_report(f->img.path, &rep);
    if (rc == KDISK_EIO || (rc && l.gpt.count == 0)) {
        fprintf(stderr, "%s: %s\n", f->img.path, rep.error);
        return 1;
    }
    char guid[GPT_GUID_TEXT];
    gpt_guid_text(&l.gpt.hdr.disk_guid, guid);
    printf("%s: GPT %s (%s), usable LBAs %llu..%llu of %llu-byte blocks\n", f->img.path, guid,
           l.gpt.from_backup ? "backup copy" : "primary copy",
           (unsigned long long)l.gpt.hdr.first_usable, (unsigned long long)l.gpt.hdr.last_usable,
           (unsigned long long)f->disk.logical_block);
    for (unsigned i = 0; i < l.gpt.count; i++) {
        const struct gpt_part *p = &l.gpt.parts[i];
        gpt_guid_text(&p->type, guid);
        printf("  #%u %-22s LBA %llu..%llu (%llu MiB) type %s\n", (unsigned)p->index, p->name,
               (unsigned long long)p->first, (unsigned long long)p->last,
               (unsigned long long)((p->last - p->first + 1) * f->disk.logical_block / MIB), guid);
    }
    if (rc == KDISK_EBLANK) {
        printf("data partition #%u: blank (the kernel formats it at first boot)\n", (unsigned)l.part.index);
        return 0;
    }
    if (rc) {
        fprintf(stderr, "%s: %s\n", f->img.path, rep.error);
        return 1;
    }
    const struct ksuper *sb = &l.super.sb;
    printf("data partition #%u: layout v%u, generation %llu (superblock %c), aligned to %u KiB\n",
           (unsigned)l.part.index, (unsigned)sb->version, (unsigned long long)sb->generation,
           l.super.slot ? 'B' : 'A', (unsigned)(sb->align / 1024));
    for (unsigned i = 0; i < l.region_count; i++)
        printf("  %-10s LBA %llu, %llu blocks (%llu MiB)\n", ksuper_kind_name(l.regions[i].kind),
               (unsigned long long)l.regions[i].lba, (unsigned long long)l.regions[i].blocks,
               (unsigned long long)(l.regions[i].blocks * f->disk.logical_block / MIB));
    return 0;
}

/* Zero the data partition: punch a hole (sparse and fast), else write. */
static int zero_range(int fd, uint64_t off, uint64_t len)
{
    if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off, (off_t)len) == 0)
        return 0;
    static const uint8_t zero[MIB];
    while (len) {
        size_t n = len < sizeof zero ? (size_t)len : sizeof zero;
        if (pwrite(fd, zero, n, (off_t)off) != (ssize_t)n)
            return -1;
        off += n, len -= n;
    }
    return 0;
}

/* seed: the GUIDs' 64 bytes (--guid-seed), or NULL for random ones. */
static int make(struct file_disk *f, uint64_t bios, uint64_t esp, const uint8_t *seed)
{
    struct kdisk_report rep;
    uint8_t random[64];
    static struct klayout l;
    static const uint8_t unused[16];
    if (seed)
        memcpy(random, seed, sizeof random);
    else if (getrandom(random, sizeof random, 0) != (ssize_t)sizeof random) {
        fprintf(stderr, "%s: getrandom: %s\n", f->img.path, strerror(errno));
        return 1;
    }
    kdisk_report_clear(&rep);
    if (klayout_partition(&f->disk, bios, esp, random, &rep)) {
        fprintf(stderr, "%s: %s\n", f->img.path, rep.error);
        return 1;
    }
    /* Read back as the kernel will: a GPT with exactly one blank data
     * partition. */
    int rc = klayout_open(&f->disk, 0, unused, &l, &rep);
    if (rc != KDISK_EBLANK) {
        fprintf(stderr, "%s: reading back what was written: %s\n", f->img.path,
                rc ? rep.error : "the data partition is not blank");
        return 1;
    }
    const uint64_t bs = f->disk.logical_block;
    if (zero_range(f->img.fd, l.part.first * bs, (l.part.last - l.part.first + 1) * bs) ||
        fsync(f->img.fd)) {
        fprintf(stderr, "%s: zeroing the data partition: %s\n", f->img.path, strerror(errno));
        return 1;
    }
    printf("%s: %llu MiB, %llu-byte blocks: ", f->img.path,
           (unsigned long long)(f->disk.capacity * bs / MIB), (unsigned long long)bs);
    for (unsigned i = 0; i < l.gpt.count; i++)
        printf("%s#%u %s at %llu MiB, %llu MiB", i ? "; " : "", (unsigned)l.gpt.parts[i].index,
               l.gpt.parts[i].name, (unsigned long long)(l.gpt.parts[i].first * bs / MIB),
               (unsigned long long)((l.gpt.parts[i].last - l.gpt.parts[i].first + 1) * bs / MIB));
    printf("\n");
    return 0;
}

int main(int argc, char **argv)
{
    uint64_t size = 0, bios = 0, esp = 64ull * MIB, logical = 512, physical = 0;
    int do_show = 0, have_size = 0, have_seed = 0;
    uint8_t seed[64];
    const char *path = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        uint64_t *val = !strcmp(a, "--size")             ? &size
                        : !strcmp(a, "--bios-boot")      ? &bios
                        : !strcmp(a, "--esp")            ? &esp
                        : !strcmp(a, "--logical-block")  ? &logical
                        : !strcmp(a, "--physical-block") ? &physical
                                                         : NULL;
        if (val) {
            if (i + 1 >= argc || parse_size(argv[++i], val)) {
                fprintf(stderr, "tern-mkdisk: %s needs a size (bytes, or with K, M or G)\n", a);
                usage();
            }
            have_size |= val == &size;
        } else if (!strcmp(a, "--show")) {
            do_show = 1;
        } else if (!strcmp(a, "--guid-seed")) {
            if (i + 1 >= argc || parse_seed(argv[++i], seed)) {
                fprintf(stderr, "tern-mkdisk: --guid-seed needs 128 hex digits (64 bytes)\n");
                usage();
            }
            have_seed = 1;
        } else if (a[0] == '-' || path) {
            usage();
        } else {
            path = a;
        }
    }
    if (!path || (do_show && (have_size || have_seed)))
        usage();
    if (logical != 512 && logical != 4096) {
        fprintf(stderr, "tern-mkdisk: --logical-block must be 512 or 4096\n");
        return 2;
    }
    int fd = open(path, do_show ? O_RDONLY : have_size ? O_RDWR | O_CREAT | O_TRUNC : O_RDWR, 0644);
    if (fd < 0) {
        fprintf(stderr, "%s: %s\n", path, strerror(errno));
        return 1;
    }
    if (have_size && ftruncate(fd, (off_t)size)) {
        fprintf(stderr, "%s: cannot set the size to %llu bytes: %s\n", path, (unsigned long long)size,
                strerror(errno));
        return 1;
    }
    struct stat st;
    if (fstat(fd, &st)) {
        fprintf(stderr, "%s: %s\n", path, strerror(errno));
        return 1;
    }
    if (st.st_size <= 0 || (uint64_t)st.st_size % logical) {
        fprintf(stderr, "%s: its size (%lld bytes) is not a positive multiple of %llu-byte blocks\n",
                path, (long long)st.st_size, (unsigned long long)logical);
        return 1;
    }
    static struct file_disk f;
    uint8_t *io = aligned_alloc(512, KDISK_IO_BYTES);
    if (!io) {
        fprintf(stderr, "tern-mkdisk: out of memory\n");
        return 1;
    }
    f.img = (struct image){.fd = fd, .path = path};
    f.disk = (struct kdisk){
        .read = fd_read,
        .write = do_show ? NULL : fd_write,
        .flush = do_show ? NULL : fd_flush,
        .status_text = fd_status,
        .ctx = &f,
        .logical_block = (uint32_t)logical,
        .physical_block = (uint32_t)(physical ? physical : logical),
        .capacity = (uint64_t)st.st_size / logical,
        .io = io,
    };
    struct kdisk_report rep;
    kdisk_report_clear(&rep);
    if (kdisk_check(&f.disk, &rep)) {
        fprintf(stderr, "%s: %s\n", path, rep.error);
        return 1;
    }
    int rc = do_show ? show(&f) : make(&f, bios, esp, have_seed ? seed : NULL);
    free(io);
    if (close(fd) && !rc) {
        fprintf(stderr, "%s: %s\n", path, strerror(errno));
        return 1;
    }
    return rc;
}
