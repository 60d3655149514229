/*
 * kvfs_io.c - the disk side of the store's VFS: byte ranges of a region's
 * file onto whole blocks of the device, and the region header.
 *
 * Reads go at logical-block granularity through a read buffer. Writes are
 * collected in a write run: consecutive whole physical blocks of one
 * region, completed in memory first (a block that is only partly written
 * and holds file bytes outside the write is read before it is patched), and
 * written as few large requests when the run must end: a write elsewhere,
 * a read of the same region, a sync, a truncate, a close. So only whole
 * physical blocks are ever written, and a commit of many WAL frames costs a
 * few requests instead of two read-modify-writes per frame.
 *
 * Sync (docs/DISK.md, "Inside the regions"): end the run, flush the
 * device; when the logical size or owner changed, write the header copy
 * not used last and flush again. The header therefore never names data
 * that is not already durable, whatever subset of unflushed writes a power
 * cut keeps, and a torn header write damages only the copy being written.
 *
 * Each request is submitted with blk_submit() and waited for through the
 * platform's wait hook (kvfs.h); completions never arrive inside
 * blk_submit, so the request and its buffer stay on this stack frame until
 * done() ran.
 */
#include "kvfs_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

struct waiter {
    bool done;
};

static void req_done(struct blk_req *req)
{
    ((struct waiter *)req->ctx)->done = true;
}

static bool waiter_done(void *arg)
{
    return ((struct waiter *)arg)->done;
}

/* A queue-full retry waits for nothing in particular: one poll. */
static bool any_progress(void *arg)
{
    return ++*(unsigned *)arg > 1;
}

static void wait_for(struct kvfs *fs, bool (*done)(void *arg), void *arg)
{
    if (fs->env.wait != NULL)
        fs->env.wait(fs->env.ctx, done, arg);
    else
        while (!done(arg))
            (void)blk_poll_all();
}

void kvfs_logf(const struct kvfs *fs, const char *fmt, ...)
{
    char line[200];
    va_list ap;

    if (fs->env.log == NULL)
        return;
    va_start(ap, fmt);
    (void)vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fs->env.log(fs->env.ctx, line);
}

/* One request, waited for; a blk status. */
static int blk_do(struct kvfs *fs, enum blk_op op, uint64_t lba, uint32_t bytes, void *buf)
{
    struct waiter w = {false};
    struct blk_req req;
    int rc;

    memset(&req, 0, sizeof req);
    req.op = op;
    req.lba = lba;
    req.count = bytes / fs->lb;
    req.buf = buf;
    req.done = req_done;
    req.ctx = &w;
    while ((rc = blk_submit(fs->dev, &req)) == BLK_EAGAIN) {
        unsigned tries = 0;
        wait_for(fs, any_progress, &tries);
    }
    if (rc == BLK_OK) {
        wait_for(fs, waiter_done, &w);
        rc = req.status;
    }
    if (rc != BLK_OK) {
        fs->st.io_errors++;
        kvfs_logf(fs, "store disk: %s of %u bytes at block %llu failed: %s",
                  op == BLK_READ ? "read" : op == BLK_WRITE ? "write"
                  : op == BLK_DISCARD ? "discard" : "flush", bytes,
                  (unsigned long long)lba, blk_status_text(rc));
        return rc;
    }
    if (op == BLK_READ) {
        fs->st.reads++;
    } else if (op == BLK_WRITE) {
        fs->st.writes++;
        fs->unflushed = true;
    } else if (op == BLK_DISCARD) {
        fs->st.discards++;
    } else {
        fs->st.flushes++;
    }
    return BLK_OK;
}

static int flush_device(struct kvfs *fs)
{
    if (!fs->unflushed)
        return SQLITE_OK;
    if (!fs->dev->topo.flush)
        /* A device without a volatile cache makes writes durable when they
         * complete; one with a cache and no flush is refused at kvfs_open. */
        fs->unflushed = false;
    else if (blk_do(fs, BLK_FLUSH, 0, 0, NULL) != BLK_OK)
        return SQLITE_IOERR_FSYNC;
    fs->unflushed = false;
    return SQLITE_OK;
}

/* ---- the header ---------------------------------------------------------- */

static uint64_t hdr_lba(const struct kvfs *fs, const struct kvfs_rgn *g, unsigned slot)
{
    return g->lba + (uint64_t)slot * (fs->pb / fs->lb);
}

int kvfs_io_load(struct kvfs *fs, int r, char *err, size_t err_size)
{
    struct kvfs_rgn *g = &fs->rgn[r];
    struct rgn_hdr h[RGN_HDR_COPIES];
    int rc[RGN_HDR_COPIES], out;

    for (unsigned i = 0; i < RGN_HDR_COPIES; i++) {
        if (blk_do(fs, BLK_READ, hdr_lba(fs, g, i), fs->pb, fs->rbuf) != BLK_OK) {
            (void)snprintf(err, err_size, "reading region header %u of region %d failed", i, r);
            return SQLITE_IOERR_READ;
        }
        rc[i] = rgn_hdr_parse(fs->rbuf, fs->pb, g->role, g->lba, g->blocks, g->capacity, &h[i]);
    }
    out = rgn_hdr_pick(h, rc, g->role, g->lba, g->blocks, &g->hdr, &g->slot);
    if (out != RGN_OK) {
        (void)snprintf(err, err_size, "region at block %llu: %s",
                       (unsigned long long)g->lba, rgn_parse_text(out));
        return out == RGN_NEWER ? SQLITE_CANTOPEN : SQLITE_CORRUPT;
    }
    /* A blank copy is normal (a region written once); say the rest. */
    if (rc[0] != rc[1] && rc[0] != RGN_BLANK && rc[1] != RGN_BLANK)
        kvfs_logf(fs, "store disk: region at block %llu: header copy %u: %s (the other is used)",
                  (unsigned long long)g->lba, rc[0] != RGN_OK ? 0u : 1u,
                  rgn_parse_text(rc[0] != RGN_OK ? rc[0] : rc[1]));
    g->size = g->hdr.size;
    g->owner = g->hdr.owner;
    return SQLITE_OK;
}

/* The owner a header records: an empty log region belongs to nobody. */
static uint32_t hdr_owner(const struct kvfs_rgn *g)
{
    return g->size == 0 && g->owner != RGN_OWNER_MAIN ? RGN_OWNER_NONE : g->owner;
}

static bool hdr_stale(const struct kvfs_rgn *g)
{
    return g->size != g->hdr.size || hdr_owner(g) != g->hdr.owner;
}

/* Write the copy not used last, describing the region as it is now. */
static int write_header(struct kvfs *fs, int r)
{
    struct kvfs_rgn *g = &fs->rgn[r];
    struct rgn_hdr h = g->hdr;
    unsigned slot = g->slot ^ 1u;

    h.owner = hdr_owner(g);
    h.size = g->size;
    h.seq = g->hdr.seq + 1;
    h.flags = 0;
    memset(fs->rbuf, 0, fs->pb);
    rgn_hdr_encode(&h, fs->rbuf);
    if (blk_do(fs, BLK_WRITE, hdr_lba(fs, g, slot), fs->pb, fs->rbuf) != BLK_OK)
        return SQLITE_IOERR_WRITE;
    fs->st.header_writes++;
    g->hdr = h;
    g->slot = slot;
    return SQLITE_OK;
}

/* ---- the write run -------------------------------------------------------- */

int kvfs_io_flush_run(struct kvfs *fs)
{
    const struct kvfs_rgn *g;
    uint64_t bytes, done = 0;

    if (fs->run_rgn < 0)
        return SQLITE_OK;
    g = &fs->rgn[fs->run_rgn];
    bytes = (uint64_t)fs->run_n * fs->pb;
    while (done < bytes) {
        uint32_t n = bytes - done < fs->xfer ? (uint32_t)(bytes - done) : fs->xfer;
        uint64_t lba = g->data_lba + (fs->run_first * fs->pb + done) / fs->lb;

        /* A failed write leaves its blocks unknown (blk.h), and the run
         * also holds bytes of earlier xWrite calls that SQLite was told
         * are written (the tail of a WAL commit's last frame, written
         * after its sync, sits in the block the next commit starts in).
         * So the run is kept whole, to be written again by the next
         * attempt (a write elsewhere, a read, a sync, a close); until one
         * succeeds, those fail too. */
        if (blk_do(fs, BLK_WRITE, lba, n, fs->run + done) != BLK_OK)
            return SQLITE_IOERR_WRITE;
        done += n;
    }
    fs->run_rgn = -1;
    fs->run_n = 0;
    return SQLITE_OK;
}

/* Make physical block b of region r the next block of the run (starting a
 * new run when it cannot be), its content complete: read from the disk
 * when the file has bytes in it that this write does not cover. */
static int run_take(struct kvfs *fs, int r, uint64_t b, bool whole, uint8_t **blk)
{
    struct kvfs_rgn *g = &fs->rgn[r];
    uint64_t in_run;
    int rc;

    if (fs->run_rgn == r && b >= fs->run_first && b < fs->run_first + fs->run_n) {
        *blk = fs->run + (b - fs->run_first) * fs->pb;
        return SQLITE_OK;
    }
    in_run = (uint64_t)fs->run_n * fs->pb;
    if (fs->run_rgn != r || b != fs->run_first + fs->run_n || in_run + fs->pb > KVFS_BUF_BYTES) {
        rc = kvfs_io_flush_run(fs);
        if (rc != SQLITE_OK)
            return rc;
        fs->run_rgn = r;
        fs->run_first = b;
        in_run = 0;
    }
    *blk = fs->run + in_run;
    if (!whole && b * fs->pb < g->size) {
        fs->st.rmw_reads++;
        if (blk_do(fs, BLK_READ, g->data_lba + b * (fs->pb / fs->lb), fs->pb, *blk) != BLK_OK) {
            if (fs->run_n == 0)
                fs->run_rgn = -1;
            return SQLITE_IOERR_WRITE;
        }
    } else if (!whole) {
        memset(*blk, 0, fs->pb);
    }
    fs->run_n++;
    return SQLITE_OK;
}

/* Bytes [off, off + n) from src (zeroes when src is NULL) into the file;
 * within the capacity (checked by the caller). */
static int put_bytes(struct kvfs *fs, int r, uint64_t off, uint64_t n, const uint8_t *src)
{
    struct kvfs_rgn *g = &fs->rgn[r];

    while (n > 0) {
        uint64_t b = off / fs->pb, in = off % fs->pb;
        uint64_t chunk = fs->pb - in < n ? fs->pb - in : n;
        uint8_t *blk;
        int rc = run_take(fs, r, b, chunk == fs->pb, &blk);

        if (rc != SQLITE_OK)
            return rc;
        if (src != NULL)
            memcpy(blk + in, src, chunk);
        else
            memset(blk + in, 0, chunk);
        off += chunk;
        n -= chunk;
        if (src != NULL)
            src += chunk;
        if (off > g->size)
            g->size = off;
    }
    return SQLITE_OK;
}

int kvfs_io_write(struct kvfs *fs, int r, uint64_t off, size_t n, const void *src)
{
    struct kvfs_rgn *g = &fs->rgn[r];
    int rc = SQLITE_OK;

    if (off > g->capacity || n > g->capacity - off)
        return SQLITE_FULL;
    /* A file read between its end and a write beyond it reads zeroes. */
    if (off > g->size)
        rc = put_bytes(fs, r, g->size, off - g->size, NULL);
    if (rc == SQLITE_OK)
        rc = put_bytes(fs, r, off, n, src);
    return rc;
}

int kvfs_io_truncate(struct kvfs *fs, int r, uint64_t size)
{
    struct kvfs_rgn *g = &fs->rgn[r];

    if (size > g->capacity)
        return SQLITE_FULL;
    if (size > g->size)
        return put_bytes(fs, r, g->size, size - g->size, NULL);
    g->size = size;
    /* Blocks of the run past the new end would only write bytes the file
     * no longer has; writing them is harmless and keeps this simple. */
    return SQLITE_OK;
}

int kvfs_io_read(struct kvfs *fs, int r, uint64_t off, size_t n, void *dst)
{
    struct kvfs_rgn *g = &fs->rgn[r];
    uint8_t *out = dst;
    int rc;

    if (fs->run_rgn == r) {
        rc = kvfs_io_flush_run(fs);
        if (rc != SQLITE_OK)
            return rc;
    }
    while (n > 0) {
        uint64_t first = off / fs->lb, skip = off % fs->lb;
        uint64_t span = (skip + n + fs->lb - 1) / fs->lb * fs->lb;
        uint32_t bytes = span < fs->xfer ? (uint32_t)span : fs->xfer;
        uint64_t chunk = bytes - skip < n ? bytes - skip : n;

        if (blk_do(fs, BLK_READ, g->data_lba + first, bytes, fs->rbuf) != BLK_OK)
            return SQLITE_IOERR_READ;
        memcpy(out, fs->rbuf + skip, chunk);
        out += chunk;
        off += chunk;
        n -= chunk;
    }
    return SQLITE_OK;
}

/*
 * Give the device back the data blocks of region r that the header just
 * made durable no longer covers (was: the size the previous header
 * said): a WAL trimmed or restarted shorter, a backup slot emptied before
 * a copy. Called only after that header was flushed, so no header a
 * recovery can pick describes a discarded block as part of the file
 * (the older copy's larger size loses to the newer copy's sequence
 * number). BLK_DISCARD only, when the device offers it; a failed discard
 * is counted and otherwise ignored: the blocks' contents no longer matter.
 */
static void discard_beyond(struct kvfs *fs, int r, uint64_t was)
{
    const struct kvfs_rgn *g = &fs->rgn[r];
    const uint64_t per = fs->pb / fs->lb;
    uint64_t b = (g->size + fs->pb - 1) / fs->pb, end = (was + fs->pb - 1) / fs->pb;
    uint64_t max = fs->dev->topo.max_discard / per; /* physical blocks per request */

    if (!fs->dev->topo.discard || b >= end || max == 0)
        return;
    if (max > UINT32_MAX / fs->pb)
        max = UINT32_MAX / fs->pb;
    while (b < end) {
        uint64_t n = end - b < max ? end - b : max;
        if (blk_do(fs, BLK_DISCARD, g->data_lba + b * per, (uint32_t)(n * fs->pb), NULL) != BLK_OK)
            return;
        b += n;
    }
}

int kvfs_io_sync(struct kvfs *fs, int r)
{
    int rc = kvfs_io_flush_run(fs);

    if (rc == SQLITE_OK)
        rc = flush_device(fs);
    if (rc == SQLITE_OK && hdr_stale(&fs->rgn[r])) {
        uint64_t was = fs->rgn[r].hdr.size;
        rc = write_header(fs, r);
        if (rc == SQLITE_OK)
            rc = flush_device(fs);
        if (rc == SQLITE_OK)
            discard_beyond(fs, r, was);
    }
    return rc;
}

int kvfs_io_delete(struct kvfs *fs, int r)
{
    struct kvfs_rgn *g = &fs->rgn[r];
    int rc = SQLITE_OK;

    if (fs->run_rgn == r) {
        /* Blocks of a file being deleted need not reach the disk. */
        fs->run_rgn = -1;
        fs->run_n = 0;
    }
    g->size = 0;
    if (g->owner != RGN_OWNER_MAIN)
        g->owner = RGN_OWNER_NONE;
    /* Durable at once: SQLite deletes a rollback journal to commit. */
    if (hdr_stale(g)) {
        uint64_t was = g->hdr.size;
        rc = write_header(fs, r);
        if (rc == SQLITE_OK)
            rc = flush_device(fs);
        if (rc == SQLITE_OK)
            discard_beyond(fs, r, was);
    }
    return rc;
}
