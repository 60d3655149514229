/*
 * kcksum.c - tern's WAL write splitter over SQLite's cksumvfs over tern's
 * WAL frame repair over a VFS (kcksum.h).
 *
 * Why the repair: SQLite's WAL writer computes a frame's checksum over the
 * page and writes the 24-byte frame header before the page; cksumvfs then
 * stores the page's own checksum into the page's last 8 bytes as the page
 * goes down. The frame checksum on disk thus covers the page's old reserve
 * bytes, and WAL recovery (every open: the store's WAL index lives in heap
 * memory) stops at the first such frame, so every commit since the last
 * checkpoint would be lost. Measured with the pinned SQLite 3.46.1: the
 * unit test kvfs_cksum_wal_frames_survive_a_power_cut_before_a_checkpoint
 * fails without this shim.
 *
 * The repair sits under cksumvfs and sees the page as written: it holds a
 * frame header back until the frame's page arrives, recomputes the frame
 * checksum over header and page, chained from the previous frame's
 * checksum as it is on disk (or the WAL header's for the first frame), and
 * writes both. A header written alone (SQLite rewriting the chain after
 * overwriting a frame, walRewriteChecksums, which reads the data back from
 * disk and so is already right) is written as it is before any other
 * operation. Only WAL files are wrapped; every other file is the lower
 * VFS's own.
 *
 * And why a second shim above cksumvfs: cksumvfs computes a checksum into
 * the last 8 bytes of every write of 512 bytes or more. With synchronous =
 * FULL SQLite pads a commit to the log's sector with copies of the commit
 * frame and syncs at the sector boundary, splitting the padding frame's
 * page into two writes; cksumvfs then overwrote 8 bytes of each piece, and
 * the checkpoint copied the damaged copy into the database (measured: the
 * unit test kvfs_cksum_database_pages_all_verify_after_a_checkpoint). The
 * top shim passes a WAL write that is not one whole frame page to
 * cksumvfs in pieces under 512 bytes, which it leaves alone; the bytes are
 * a copy of a page already checksummed in place.
 */
#include "kcksum.h"

#include "pagesum.h"

#include <sqlite3.h>
#include <stdbool.h>
#include <string.h>

/* cksumvfs.c (third-party, compiled as it is) has no header. */
int sqlite3_register_cksumvfs(const char *unused);
int sqlite3_unregister_cksumvfs(void);

typedef struct wf_file {
    sqlite3_file base;      /* must be first: SQLite sees this */
    sqlite3_file *real;     /* the lower VFS's file, after this struct */
    int64_t pend_off;       /* the frame being written, -1: none */
    int64_t last_off;       /* the last frame header written, -1: none */
    uint8_t *page;          /* the pending frame's page as written (page_size) */
    uint32_t last_ck[2];    /*   and its checksum */
    uint32_t page_size;     /* from the WAL header, 0: not known yet */
    uint32_t hfill, pfill;  /* header bytes held back, page bytes seen */
    bool big_endian;        /* the WAL header's checksum byte order */
    uint8_t pend[PAGESUM_WAL_FRAME_HEADER];
} wf_file;

_Static_assert(sizeof(wf_file) % 8 == 0, "the lower file must stay 8-byte aligned");

static sqlite3_vfs *lower_of(sqlite3_vfs *vfs)
{
    return vfs->pAppData;
}

static uint32_t wf_be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static void wf_put_be32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (24 - 8 * i));
}

/* Learn page size and byte order from a WAL header (written or on disk). */
static void learn_header(wf_file *f, const uint8_t *h)
{
    struct pagesum_wal_hdr w;
    char why[64];

    if (pagesum_wal_parse(h, PAGESUM_WAL_HEADER, &w, why, sizeof why) != 0)
        return;
    if (f->page != NULL && f->page_size != w.page_size) {
        sqlite3_free(f->page);
        f->page = NULL;
    }
    f->page_size = w.page_size;
    f->big_endian = w.big_endian;
    if (f->page == NULL)
        f->page = sqlite3_malloc((int)w.page_size); /* NULL: frames pass unrepaired */
}

static int read_real(wf_file *f, void *buf, int n, int64_t off)
{
    return f->real->pMethods->xRead(f->real, buf, n, off);
}

static int write_real(wf_file *f, const void *buf, int n, int64_t off)
{
    return f->real->pMethods->xWrite(f->real, buf, n, off);
}

/* The header bytes held back, written as they are (the frame did not
 * complete in order: not a frame this shim can repair). */
static int flush_pending(wf_file *f)
{
    if (f->pend_off < 0)
        return SQLITE_OK;
    int64_t off = f->pend_off;
    uint32_t n = f->hfill;
    f->pend_off = -1;
    f->last_off = -1;
    if (n == 0)
        return SQLITE_OK;
    int rc = write_real(f, f->pend, (int)n, off);
    if (rc == SQLITE_OK && n == PAGESUM_WAL_FRAME_HEADER) {
        f->last_off = off;
        f->last_ck[0] = wf_be32(f->pend + 16);
        f->last_ck[1] = wf_be32(f->pend + 20);
    }
    return rc;
}

/* The checksum chain's value before the frame at off, as on disk. */
static int chain_before(wf_file *f, int64_t off, uint32_t s[2])
{
    uint8_t b[8];
    int64_t prev = off == PAGESUM_WAL_HEADER
                       ? 24 - 16 /* the WAL header's checksum is at 24 */
                       : off - (int64_t)(f->page_size + PAGESUM_WAL_FRAME_HEADER);
    if (off != PAGESUM_WAL_HEADER && prev == f->last_off) {
        s[0] = f->last_ck[0];
        s[1] = f->last_ck[1];
        return SQLITE_OK;
    }
    int rc = read_real(f, b, sizeof b, prev + 16);
    if (rc == SQLITE_OK) {
        s[0] = wf_be32(b);
        s[1] = wf_be32(b + 4);
    }
    return rc;
}

/* The pending frame's page is complete: its header with the checksum of
 * what was written. */
static int complete_frame(wf_file *f)
{
    uint32_t s[2];
    int64_t hoff = f->pend_off;

    f->pend_off = -1;
    f->last_off = -1;
    int rc = chain_before(f, hoff, s);
    if (rc != SQLITE_OK)
        return rc;
    pagesum_wal(f->big_endian, f->pend, 8, s);
    pagesum_wal(f->big_endian, f->page, f->page_size, s);
    wf_put_be32(f->pend + 16, s[0]);
    wf_put_be32(f->pend + 20, s[1]);
    rc = write_real(f, f->pend, PAGESUM_WAL_FRAME_HEADER, hoff);
    if (rc == SQLITE_OK) {
        f->last_off = hoff;
        f->last_ck[0] = s[0];
        f->last_ck[1] = s[1];
    }
    return rc;
}

/* A write continuing the pending frame in order: 1 when taken (*rc set). */
static int continue_frame(wf_file *f, const uint8_t *buf, int n, int64_t off, int *rc)
{
    if (f->hfill < PAGESUM_WAL_FRAME_HEADER) {
        if (off != f->pend_off + f->hfill || (uint32_t)n > PAGESUM_WAL_FRAME_HEADER - f->hfill)
            return 0;
        memcpy(f->pend + f->hfill, buf, (size_t)n);
        f->hfill += (uint32_t)n;
        *rc = SQLITE_OK;
        return 1;
    }
    if (off != f->pend_off + PAGESUM_WAL_FRAME_HEADER + f->pfill ||
        (uint32_t)n > f->page_size - f->pfill)
        return 0;
    *rc = write_real(f, buf, n, off);
    if (*rc != SQLITE_OK) {
        f->pend_off = -1;
        f->last_off = -1;
        return 1;
    }
    memcpy(f->page + f->pfill, buf, (size_t)n);
    f->pfill += (uint32_t)n;
    if (f->pfill == f->page_size)
        *rc = complete_frame(f);
    return 1;
}

static int wf_write(sqlite3_file *file, const void *buf, int n, sqlite3_int64 off)
{
    wf_file *f = (wf_file *)file;
    int rc;

    if (f->pend_off >= 0 && continue_frame(f, buf, n, off, &rc))
        return rc;
    rc = flush_pending(f);
    if (rc != SQLITE_OK)
        return rc;
    if (off == 0 && n >= PAGESUM_WAL_HEADER) {
        learn_header(f, buf);
        return write_real(f, buf, n, off);
    }
    if (n <= PAGESUM_WAL_FRAME_HEADER && off >= PAGESUM_WAL_HEADER) {
        if (f->page_size == 0) {
            uint8_t h[PAGESUM_WAL_HEADER];
            if (read_real(f, h, sizeof h, 0) == SQLITE_OK)
                learn_header(f, h);
        }
        if (f->page != NULL && f->page_size != 0) {
            uint64_t frame = f->page_size + PAGESUM_WAL_FRAME_HEADER;
            if ((uint64_t)(off - PAGESUM_WAL_HEADER) % frame == 0) {
                memcpy(f->pend, buf, (size_t)n);
                f->pend_off = off;
                f->hfill = (uint32_t)n;
                f->pfill = 0;
                return SQLITE_OK;
            }
        }
    }
    return write_real(f, buf, n, off);
}

static int wf_close(sqlite3_file *file)
{
    wf_file *f = (wf_file *)file;
    int rc = flush_pending(f);
    sqlite3_free(f->page);
    f->page = NULL;
    int rc2 = f->real->pMethods->xClose(f->real);
    return rc != SQLITE_OK ? rc : rc2;
}

static int wf_read(sqlite3_file *file, void *buf, int n, sqlite3_int64 off)
{
    wf_file *f = (wf_file *)file;
    int rc = flush_pending(f);
    if (rc == SQLITE_OK)
        rc = read_real(f, buf, n, off);
    if (rc == SQLITE_OK && off == 0 && n >= PAGESUM_WAL_HEADER)
        learn_header(f, buf);
    return rc;
}

static int wf_truncate(sqlite3_file *file, sqlite3_int64 size)
{
    wf_file *f = (wf_file *)file;
    int rc = flush_pending(f);
    f->last_off = -1;
    return rc != SQLITE_OK ? rc : f->real->pMethods->xTruncate(f->real, size);
}

/* A frame still pending at a sync is a padding frame split at the sync
 * point (the commit frame before it is complete): it stays pending, as it
 * needs no durability of its own. */
static int wf_sync(sqlite3_file *file, int flags)
{
    wf_file *f = (wf_file *)file;
    return f->real->pMethods->xSync(f->real, flags);
}

static int wf_file_size(sqlite3_file *file, sqlite3_int64 *size)
{
    wf_file *f = (wf_file *)file;
    int rc = flush_pending(f);
    return rc != SQLITE_OK ? rc : f->real->pMethods->xFileSize(f->real, size);
}

static int wf_lock(sqlite3_file *file, int lock)
{
    sqlite3_file *r = ((wf_file *)file)->real;
    return r->pMethods->xLock(r, lock);
}

static int wf_unlock(sqlite3_file *file, int lock)
{
    sqlite3_file *r = ((wf_file *)file)->real;
    return r->pMethods->xUnlock(r, lock);
}

static int wf_check_reserved(sqlite3_file *file, int *out)
{
    sqlite3_file *r = ((wf_file *)file)->real;
    return r->pMethods->xCheckReservedLock(r, out);
}

static int wf_file_control(sqlite3_file *file, int op, void *arg)
{
    wf_file *f = (wf_file *)file;
    int rc = flush_pending(f);
    return rc != SQLITE_OK ? rc : f->real->pMethods->xFileControl(f->real, op, arg);
}

static int wf_sector_size(sqlite3_file *file)
{
    sqlite3_file *r = ((wf_file *)file)->real;
    return r->pMethods->xSectorSize(r);
}

static int wf_device_characteristics(sqlite3_file *file)
{
    sqlite3_file *r = ((wf_file *)file)->real;
    return r->pMethods->xDeviceCharacteristics(r);
}

/* Version 1: a WAL file has no shared memory or memory map of its own. */
static const sqlite3_io_methods wf_methods = {
    .iVersion = 1,
    .xClose = wf_close,
    .xRead = wf_read,
    .xWrite = wf_write,
    .xTruncate = wf_truncate,
    .xSync = wf_sync,
    .xFileSize = wf_file_size,
    .xLock = wf_lock,
    .xUnlock = wf_unlock,
    .xCheckReservedLock = wf_check_reserved,
    .xFileControl = wf_file_control,
    .xSectorSize = wf_sector_size,
    .xDeviceCharacteristics = wf_device_characteristics,
};

static int wf_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *file, int flags, int *out)
{
    sqlite3_vfs *lower = lower_of(vfs);
    if (!(flags & SQLITE_OPEN_WAL))
        return lower->xOpen(lower, name, file, flags, out);
    wf_file *f = (wf_file *)file;
    memset(f, 0, sizeof *f);
    f->real = (sqlite3_file *)(f + 1);
    f->pend_off = -1;
    f->last_off = -1;
    int rc = lower->xOpen(lower, name, f->real, flags, out);
    f->base.pMethods = rc == SQLITE_OK ? &wf_methods : NULL;
    return rc;
}

/* ---- the top shim: whole frame pages only reach cksumvfs whole ---------- */

typedef struct tc_file {
    sqlite3_file base;      /* must be first */
    sqlite3_file *real;     /* cksumvfs's file, after this struct */
    uint32_t page_size;     /* from the WAL header, 0: not known yet */
    uint32_t pad;
} tc_file;

_Static_assert(sizeof(tc_file) % 8 == 0, "the lower file must stay 8-byte aligned");

enum { TC_PIECE = 256 };    /* under cksumvfs's 512-byte threshold */

static sqlite3_file *tc_real(sqlite3_file *file)
{
    return ((tc_file *)file)->real;
}

static void tc_learn(tc_file *f, const uint8_t *h)
{
    struct pagesum_wal_hdr w;
    char why[64];

    if (pagesum_wal_parse(h, PAGESUM_WAL_HEADER, &w, why, sizeof why) == 0)
        f->page_size = w.page_size;
}

static int tc_write(sqlite3_file *file, const void *buf, int n, sqlite3_int64 off)
{
    tc_file *f = (tc_file *)file;
    sqlite3_file *r = f->real;

    if (off == 0 && n >= PAGESUM_WAL_HEADER)
        tc_learn(f, buf);
    if (n < 512)
        return r->pMethods->xWrite(r, buf, n, off);
    if (f->page_size == 0) {
        uint8_t h[PAGESUM_WAL_HEADER];
        if (r->pMethods->xRead(r, h, sizeof h, 0) == SQLITE_OK)
            tc_learn(f, h);
    }
    uint64_t frame = (uint64_t)f->page_size + PAGESUM_WAL_FRAME_HEADER;
    if (f->page_size != 0 && n == (int)f->page_size && off >= PAGESUM_WAL_HEADER &&
        (uint64_t)(off - PAGESUM_WAL_HEADER) % frame == PAGESUM_WAL_FRAME_HEADER)
        return r->pMethods->xWrite(r, buf, n, off);
    const uint8_t *p = buf;
    for (int done = 0; done < n;) {
        int k = n - done < TC_PIECE ? n - done : TC_PIECE;
        int rc = r->pMethods->xWrite(r, p + done, k, off + done);
        if (rc != SQLITE_OK)
            return rc;
        done += k;
    }
    return SQLITE_OK;
}

static int tc_read(sqlite3_file *file, void *buf, int n, sqlite3_int64 off)
{
    tc_file *f = (tc_file *)file;
    int rc = f->real->pMethods->xRead(f->real, buf, n, off);
    if (rc == SQLITE_OK && off == 0 && n >= PAGESUM_WAL_HEADER)
        tc_learn(f, buf);
    return rc;
}

static int tc_close(sqlite3_file *file)
{
    return tc_real(file)->pMethods->xClose(tc_real(file));
}

static int tc_truncate(sqlite3_file *file, sqlite3_int64 size)
{
    return tc_real(file)->pMethods->xTruncate(tc_real(file), size);
}

static int tc_sync(sqlite3_file *file, int flags)
{
    return tc_real(file)->pMethods->xSync(tc_real(file), flags);
}

static int tc_file_size(sqlite3_file *file, sqlite3_int64 *size)
{
    return tc_real(file)->pMethods->xFileSize(tc_real(file), size);
}

static int tc_lock(sqlite3_file *file, int lock)
{
    return tc_real(file)->pMethods->xLock(tc_real(file), lock);
}

static int tc_unlock(sqlite3_file *file, int lock)
{
    return tc_real(file)->pMethods->xUnlock(tc_real(file), lock);
}

static int tc_check_reserved(sqlite3_file *file, int *out)
{
    return tc_real(file)->pMethods->xCheckReservedLock(tc_real(file), out);
}

static int tc_file_control(sqlite3_file *file, int op, void *arg)
{
    return tc_real(file)->pMethods->xFileControl(tc_real(file), op, arg);
}

static int tc_sector_size(sqlite3_file *file)
{
    return tc_real(file)->pMethods->xSectorSize(tc_real(file));
}

static int tc_device_characteristics(sqlite3_file *file)
{
    return tc_real(file)->pMethods->xDeviceCharacteristics(tc_real(file));
}

static const sqlite3_io_methods tc_methods = {
    .iVersion = 1,
    .xClose = tc_close,
    .xRead = tc_read,
    .xWrite = tc_write,
    .xTruncate = tc_truncate,
    .xSync = tc_sync,
    .xFileSize = tc_file_size,
    .xLock = tc_lock,
    .xUnlock = tc_unlock,
    .xCheckReservedLock = tc_check_reserved,
    .xFileControl = tc_file_control,
    .xSectorSize = tc_sector_size,
    .xDeviceCharacteristics = tc_device_characteristics,
};

static int tc_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *file, int flags, int *out)
{
    sqlite3_vfs *lower = lower_of(vfs);
    if (!(flags & SQLITE_OPEN_WAL))
        return lower->xOpen(lower, name, file, flags, out);
    tc_file *f = (tc_file *)file;
    memset(f, 0, sizeof *f);
    f->real = (sqlite3_file *)(f + 1);
    int rc = lower->xOpen(lower, name, f->real, flags, out);
    f->base.pMethods = rc == SQLITE_OK ? &tc_methods : NULL;
    return rc;
}

/* ---- the VFS methods both shims forward ---------------------------------- */

static int wf_delete(sqlite3_vfs *vfs, const char *name, int sync_dir)
{
    return lower_of(vfs)->xDelete(lower_of(vfs), name, sync_dir);
}

static int wf_access(sqlite3_vfs *vfs, const char *name, int flags, int *out)
{
    return lower_of(vfs)->xAccess(lower_of(vfs), name, flags, out);
}

static int wf_full_pathname(sqlite3_vfs *vfs, const char *name, int n, char *out)
{
    return lower_of(vfs)->xFullPathname(lower_of(vfs), name, n, out);
}

static int wf_randomness(sqlite3_vfs *vfs, int n, char *out)
{
    return lower_of(vfs)->xRandomness(lower_of(vfs), n, out);
}

static int wf_sleep(sqlite3_vfs *vfs, int us)
{
    return lower_of(vfs)->xSleep(lower_of(vfs), us);
}

static int wf_last_error(sqlite3_vfs *vfs, int n, char *out)
{
    sqlite3_vfs *l = lower_of(vfs);
    return l->xGetLastError != NULL ? l->xGetLastError(l, n, out) : 0;
}

static int wf_current_time64(sqlite3_vfs *vfs, sqlite3_int64 *out)
{
    return lower_of(vfs)->xCurrentTimeInt64(lower_of(vfs), out);
}

/* A shim VFS named name over lower, opening with open_fn, file header of
 * head bytes; registered (not as the default) or NULL. */
static sqlite3_vfs *shim(const char *name, sqlite3_vfs *lower, int head,
                         int (*open_fn)(sqlite3_vfs *, const char *, sqlite3_file *, int, int *))
{
    sqlite3_vfs *v = sqlite3_malloc((int)sizeof *v);
    if (v == NULL)
        return NULL;
    *v = (sqlite3_vfs){
        .iVersion = 2,
        .szOsFile = head + lower->szOsFile,
        .mxPathname = lower->mxPathname,
        .zName = name,
        .pAppData = lower,
        .xOpen = open_fn,
        .xDelete = wf_delete,
        .xAccess = wf_access,
        .xFullPathname = wf_full_pathname,
        .xRandomness = wf_randomness,
        .xSleep = wf_sleep,
        .xGetLastError = wf_last_error,
        .xCurrentTimeInt64 = wf_current_time64,
    };
    if (sqlite3_vfs_register(v, 0) != SQLITE_OK) {
        sqlite3_free(v);
        return NULL;
    }
    return v;
}

int kcksum_stack(const char *lower_name)
{
    sqlite3_vfs *lower = sqlite3_vfs_find(lower_name);
    sqlite3_vfs *dflt = sqlite3_vfs_find(NULL);

    if (lower == NULL || lower->iVersion < 2 || lower->xCurrentTimeInt64 == NULL)
        return SQLITE_ERROR;
    if (sqlite3_vfs_find(KCKSUM_WALFIX_VFS) != NULL || sqlite3_vfs_find(KCKSUM_CKSM_VFS) != NULL ||
        sqlite3_vfs_find(KCKSUM_VFS) != NULL)
        return SQLITE_MISUSE;
    sqlite3_vfs *wf = shim(KCKSUM_WALFIX_VFS, lower, (int)sizeof(wf_file), wf_open);
    if (wf == NULL)
        return SQLITE_NOMEM;
    /* cksumvfs wraps the default VFS and becomes the default: make the
     * repair the default for that moment, then restore the old one. */
    int rc = sqlite3_vfs_register(wf, 1);
    if (rc == SQLITE_OK)
        rc = sqlite3_register_cksumvfs(NULL);
    if (dflt != NULL)
        (void)sqlite3_vfs_register(dflt, 1);
    sqlite3_vfs *ck = sqlite3_vfs_find(KCKSUM_CKSM_VFS);
    if (rc == SQLITE_OK && (ck == NULL || shim(KCKSUM_VFS, ck, (int)sizeof(tc_file), tc_open) == NULL))
        rc = SQLITE_NOMEM;
    if (rc != SQLITE_OK)
        kcksum_unstack();
    return rc;
}

void kcksum_unstack(void)
{
    sqlite3_vfs *top = sqlite3_vfs_find(KCKSUM_VFS);
    sqlite3_vfs *wf = sqlite3_vfs_find(KCKSUM_WALFIX_VFS);

    if (top != NULL) {
        (void)sqlite3_vfs_unregister(top);
        sqlite3_free(top);
    }
    (void)sqlite3_unregister_cksumvfs();
    if (wf != NULL) {
        (void)sqlite3_vfs_unregister(wf);
        sqlite3_free(wf);
    }
}
