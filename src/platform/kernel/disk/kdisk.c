/*
 * kdisk.c - what every layout call shares: the geometry check, the report
 * (an error line and a few notes), and I/O wrappers that turn a failed
 * device call into a report line naming what failed and where.
 */
#include "kdisk.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int pow2(uint32_t v) { return v && !(v & (v - 1)); }

int kdisk_check(const struct kdisk *d, struct kdisk_report *rep)
{
    if (!d->read || !d->io)
        return kdisk_fail(rep, KDISK_EINVAL, "disk has no read call or I/O buffer");
    if (!pow2(d->logical_block) || d->logical_block < 512 || d->logical_block > 4096)
        return kdisk_fail(rep, KDISK_EINVAL, "logical block size %u is not 512, 1024, 2048 or 4096",
                          (unsigned)d->logical_block);
    if (!pow2(d->physical_block) || d->physical_block < d->logical_block ||
        d->physical_block > KDISK_IO_BYTES)
        return kdisk_fail(rep, KDISK_EINVAL,
                          "physical block size %u is not a power of two between the logical "
                          "block size %u and %u",
                          (unsigned)d->physical_block, (unsigned)d->logical_block,
                          (unsigned)KDISK_IO_BYTES);
    /* Sizes are computed in bytes; 2^52 blocks of 4 KiB would overflow. */
    if (d->capacity == 0 || d->capacity > (UINT64_C(1) << 48))
        return kdisk_fail(rep, KDISK_EINVAL, "capacity of %llu blocks is out of range",
                          (unsigned long long)d->capacity);
    return KDISK_OK;
}

void kdisk_report_clear(struct kdisk_report *rep) { memset(rep, 0, sizeof *rep); }

int kdisk_fail(struct kdisk_report *rep, int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(rep->error, sizeof rep->error, fmt, ap);
    va_end(ap);
    return rc;
}

void kdisk_note(struct kdisk_report *rep, const char *fmt, ...)
{
    if (rep->note_count >= KDISK_NOTES_MAX)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(rep->notes[rep->note_count++], KDISK_MSG_MAX, fmt, ap);
    va_end(ap);
}

static int io_fail(const struct kdisk *d, struct kdisk_report *rep, int status, const char *op,
                   const char *what, uint64_t lba)
{
    const char *text = d->status_text ? d->status_text(status) : NULL;
    if (text)
        return kdisk_fail(rep, KDISK_EIO, "%s %s at LBA %llu failed: %s", op, what,
                          (unsigned long long)lba, text);
    return kdisk_fail(rep, KDISK_EIO, "%s %s at LBA %llu failed: status %d", op, what,
                      (unsigned long long)lba, status);
}

int kdisk_read(const struct kdisk *d, uint64_t lba, uint32_t count, void *buf, const char *what,
               struct kdisk_report *rep)
{
    if (lba >= d->capacity || count > d->capacity - lba)
        return kdisk_fail(rep, KDISK_EIO, "reading %s at LBA %llu: beyond the disk's %llu blocks",
                          what, (unsigned long long)lba, (unsigned long long)d->capacity);
    int st = d->read(d->ctx, lba, count, buf);
    return st ? io_fail(d, rep, st, "reading", what, lba) : KDISK_OK;
}

int kdisk_write(const struct kdisk *d, uint64_t lba, uint32_t count, const void *buf,
                const char *what, struct kdisk_report *rep)
{
    if (!d->write)
        return kdisk_fail(rep, KDISK_EIO, "writing %s: the disk is read-only", what);
    if (lba >= d->capacity || count > d->capacity - lba)
        return kdisk_fail(rep, KDISK_EIO, "writing %s at LBA %llu: beyond the disk's %llu blocks",
                          what, (unsigned long long)lba, (unsigned long long)d->capacity);
    int st = d->write(d->ctx, lba, count, buf);
    return st ? io_fail(d, rep, st, "writing", what, lba) : KDISK_OK;
}

int kdisk_flush(const struct kdisk *d, const char *what, struct kdisk_report *rep)
{
    if (!d->flush)
        return kdisk_fail(rep, KDISK_EIO, "flushing %s: the disk cannot flush", what);
    int st = d->flush(d->ctx);
    if (!st)
        return KDISK_OK;
    const char *text = d->status_text ? d->status_text(st) : NULL;
    if (text)
        return kdisk_fail(rep, KDISK_EIO, "flushing %s failed: %s", what, text);
    return kdisk_fail(rep, KDISK_EIO, "flushing %s failed: status %d", what, st);
}

int kdisk_is_zero(const uint8_t *p, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (p[i])
            return 0;
    return 1;
}
