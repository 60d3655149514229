/*
 * kvfs.c - the SQLite side of the store's VFS (kvfs.h): file names onto
 * regions, SQLite's file methods onto kvfs_io.c, and the VFS's own methods
 * (randomness, time, sleep) onto the platform's kvfs_env.
 *
 * Locks are no-ops: one thread of one program uses the disk, and the store
 * runs with locking_mode = EXCLUSIVE, so WAL keeps its index in heap memory
 * and SQLite never calls the xShm* methods (the io methods are version 1,
 * which SQLite accepts for WAL only in exclusive mode: a store opened
 * otherwise fails to enter WAL instead of running without an index).
 *
 * Sector size is the physical block and no power-safe overwrite is claimed:
 * a write of part of a physical block rewrites all of it, so SQLite pads
 * each WAL commit to a block boundary and never rewrites a block holding an
 * earlier commit's frame.
 */
#include "kvfs_int.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* I/O buffers start on a page: blk.h asks for 512-byte alignment, and a
 * page also keeps a physical block of up to 4 KiB within one page. */
enum { BUF_ALIGN = 4096 };

static uint8_t *align_up(void *p)
{
    return (uint8_t *)(((uintptr_t)p + BUF_ALIGN - 1) & ~(uintptr_t)(BUF_ALIGN - 1));
}

/* What a name opens. */
enum kind {
    K_DB,          /* <path>: region KVFS_DB */
    K_WAL,         /* <path>-wal: region KVFS_LOG */
    K_JOURNAL,     /* <path>-journal: region KVFS_LOG */
    K_BAK,         /* <path>.bak-X: region KVFS_BACKUP_X */
    K_BAK_JOURNAL, /* <path>.bak-X-journal: in memory */
    K_BAK_WAL,     /* <path>.bak-X-wal: always empty */
    K_NONE,
};

struct kfile {
    sqlite3_file base;      /* must be first: SQLite sees this */
    struct kvfs *fs;
    enum kind kind;
    int rgn;                /* KVFS_*, or the backup index for the memory kinds */
};

static struct kvfs *fs_of(sqlite3_vfs *vfs)
{
    return vfs->pAppData;
}

/* Map a name to what it opens; K_NONE for names kvfs does not know. */
static enum kind classify(const struct kvfs *fs, const char *name, int *rgn)
{
    static const struct {
        const char *suffix;
        enum kind kind;
        int rgn;
    } names[] = {
        {"", K_DB, KVFS_DB},
        {"-wal", K_WAL, KVFS_LOG},
        {"-journal", K_JOURNAL, KVFS_LOG},
        {".bak-a", K_BAK, KVFS_BACKUP_A},
        {".bak-b", K_BAK, KVFS_BACKUP_B},
        {".bak-a-journal", K_BAK_JOURNAL, 0},
        {".bak-b-journal", K_BAK_JOURNAL, 1},
        {".bak-a-wal", K_BAK_WAL, 0},
        {".bak-b-wal", K_BAK_WAL, 1},
    };

    if (name == NULL || strncmp(name, fs->path, fs->path_len) != 0)
        return K_NONE;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(name + fs->path_len, names[i].suffix) == 0) {
            *rgn = names[i].rgn;
            return names[i].kind;
        }
    return K_NONE;
}

static uint32_t owner_of(enum kind k)
{
    return k == K_WAL ? RGN_OWNER_WAL : k == K_JOURNAL ? RGN_OWNER_JOURNAL : RGN_OWNER_MAIN;
}

/* Whether the file exists: has content, and for the log region, is the
 * one of its two names that holds it. */
static bool exists(const struct kvfs *fs, enum kind k, int rgn)
{
    switch (k) {
    case K_DB:
    case K_BAK:
        return fs->rgn[rgn].size > 0;
    case K_WAL:
    case K_JOURNAL:
        return fs->rgn[rgn].size > 0 && fs->rgn[rgn].owner == owner_of(k);
    case K_BAK_JOURNAL:
        return fs->bak_journal[rgn].size > 0;
    case K_BAK_WAL:
    case K_NONE:
        break;
    }
    return false;
}

/* ---- the in-memory files ------------------------------------------------- */

static int ram_write(struct kvfs *fs, struct kvfs_ram *m, uint64_t off, size_t n, const void *src)
{
    if (off > KVFS_RAM_MAX || n > KVFS_RAM_MAX - off) {
        kvfs_logf(fs, "store disk: a backup's rollback journal outgrew %u bytes of memory",
                  (unsigned)KVFS_RAM_MAX);
        return SQLITE_FULL;
    }
    if (off + n > m->cap) {
        size_t cap = m->cap == 0 ? 4096 : m->cap;
        uint8_t *p;

        while (cap < off + n)
            cap *= 2;
        p = realloc(m->data, cap);
        if (p == NULL)
            return SQLITE_IOERR_NOMEM;
        m->data = p;
        m->cap = cap;
    }
    if (off > m->size)
        memset(m->data + m->size, 0, off - m->size);
    memcpy(m->data + off, src, n);
    if (off + n > m->size)
        m->size = off + n;
    return SQLITE_OK;
}

static void ram_free(struct kvfs_ram *m)
{
    free(m->data);
    memset(m, 0, sizeof *m);
}

/* ---- file methods -------------------------------------------------------- */

static int f_close(sqlite3_file *file)
{
    struct kfile *f = (struct kfile *)file;
    int rc = SQLITE_OK;

    if (f->kind <= K_BAK && f->fs->run_rgn == f->rgn)
        rc = kvfs_io_flush_run(f->fs);
    if (f->kind <= K_BAK && f->fs->opened[f->rgn] > 0)
        f->fs->opened[f->rgn]--;
    return rc;
}

static int f_read(sqlite3_file *file, void *buf, int amt, sqlite3_int64 off)
{
    struct kfile *f = (struct kfile *)file;
    uint64_t size, have;
    int rc = SQLITE_OK;

    if (amt < 0 || off < 0)
        return SQLITE_IOERR_READ;
    switch (f->kind) {
    case K_BAK_JOURNAL:
        size = f->fs->bak_journal[f->rgn].size;
        break;
    case K_BAK_WAL:
        size = 0;
        break;
    default:
        size = f->fs->rgn[f->rgn].size;
        break;
    }
    have = (uint64_t)off >= size ? 0 : size - (uint64_t)off;
    if (have > (uint64_t)amt)
        have = (uint64_t)amt;
    if (have > 0 && f->kind == K_BAK_JOURNAL)
        memcpy(buf, f->fs->bak_journal[f->rgn].data + off, have);
    else if (have > 0)
        rc = kvfs_io_read(f->fs, f->rgn, (uint64_t)off, have, buf);
    if (rc != SQLITE_OK)
        return rc;
    if (have < (uint64_t)amt) {
        /* SQLite requires the unread part zeroed on a short read. */
        memset((uint8_t *)buf + have, 0, (size_t)amt - have);
        return SQLITE_IOERR_SHORT_READ;
    }
    return SQLITE_OK;
}

static int f_write(sqlite3_file *file, const void *buf, int amt, sqlite3_int64 off)
{
    struct kfile *f = (struct kfile *)file;

    if (amt < 0 || off < 0)
        return SQLITE_IOERR_WRITE;
    switch (f->kind) {
    case K_BAK_JOURNAL:
        return ram_write(f->fs, &f->fs->bak_journal[f->rgn], (uint64_t)off, (size_t)amt, buf);
    case K_BAK_WAL:
        kvfs_logf(f->fs, "store disk: %s.bak-%c-wal written: a backup copy must be written "
                  "in rollback-journal mode", f->fs->path, 'a' + f->rgn);
        return SQLITE_IOERR_WRITE;
    default:
        return kvfs_io_write(f->fs, f->rgn, (uint64_t)off, (size_t)amt, buf);
    }
}

static int f_truncate(sqlite3_file *file, sqlite3_int64 size)
{
    struct kfile *f = (struct kfile *)file;

    if (size < 0)
        return SQLITE_IOERR_TRUNCATE;
    switch (f->kind) {
    case K_BAK_JOURNAL:
        if ((uint64_t)size < f->fs->bak_journal[f->rgn].size)
            f->fs->bak_journal[f->rgn].size = (size_t)size;
        return SQLITE_OK;
    case K_BAK_WAL:
        return SQLITE_OK;
    default:
        return kvfs_io_truncate(f->fs, f->rgn, (uint64_t)size);
    }
}

static int f_sync(sqlite3_file *file, int flags)
{
    struct kfile *f = (struct kfile *)file;

    (void)flags; /* every sync is a full one: the device has one kind */
    if (f->kind == K_BAK_JOURNAL || f->kind == K_BAK_WAL)
        return SQLITE_OK; /* nothing of them is on the disk (kvfs.h) */
    return kvfs_io_sync(f->fs, f->rgn);
}

static int f_file_size(sqlite3_file *file, sqlite3_int64 *out)
{
    struct kfile *f = (struct kfile *)file;

    switch (f->kind) {
    case K_BAK_JOURNAL:
        *out = (sqlite3_int64)f->fs->bak_journal[f->rgn].size;
        break;
    case K_BAK_WAL:
        *out = 0;
        break;
    default:
        *out = (sqlite3_int64)f->fs->rgn[f->rgn].size;
        break;
    }
    return SQLITE_OK;
}

static int f_lock(sqlite3_file *file, int level)
{
    (void)file;
    (void)level;
    return SQLITE_OK;
}

static int f_check_reserved(sqlite3_file *file, int *out)
{
    (void)file;
    *out = 0;
    return SQLITE_OK;
}

static int f_file_control(sqlite3_file *file, int op, void *arg)
{
    struct kfile *f = (struct kfile *)file;

    /* The store keeps its WAL (docs/STORE.md); SQLite asks the database
     * file whether to, when it closes the WAL. */
    if (op == SQLITE_FCNTL_PERSIST_WAL && f->kind == K_DB) {
        int *v = arg;

        if (*v < 0)
            *v = f->fs->persist_wal;
        else
            f->fs->persist_wal = *v != 0;
        return SQLITE_OK;
    }
    return SQLITE_NOTFOUND;
}

static int f_sector_size(sqlite3_file *file)
{
    return (int)((struct kfile *)file)->fs->pb;
}

static int f_device_characteristics(sqlite3_file *file)
{
    (void)file;
    return 0; /* see the top of this file */
}

static const sqlite3_io_methods methods = {
    .iVersion = 1,
    .xClose = f_close,
    .xRead = f_read,
    .xWrite = f_write,
    .xTruncate = f_truncate,
    .xSync = f_sync,
    .xFileSize = f_file_size,
    .xLock = f_lock,
    .xUnlock = f_lock,
    .xCheckReservedLock = f_check_reserved,
    .xFileControl = f_file_control,
    .xSectorSize = f_sector_size,
    .xDeviceCharacteristics = f_device_characteristics,
};

/* ---- VFS methods --------------------------------------------------------- */

static int v_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *file, int flags, int *out_flags)
{
    struct kvfs *fs = fs_of(vfs);
    struct kfile *f = (struct kfile *)file;
    int rgn = 0;
    enum kind k = classify(fs, name, &rgn);

    memset(f, 0, sizeof *f); /* pMethods NULL: SQLite does not close a failed open */
    if (k == K_NONE) {
        kvfs_logf(fs, "store disk: no region for file %s", name != NULL ? name : "(temporary)");
        return SQLITE_CANTOPEN;
    }
    if (!(flags & SQLITE_OPEN_CREATE) && !exists(fs, k, rgn) && (k == K_DB || k == K_BAK))
        return SQLITE_CANTOPEN; /* as a missing file */
    if (k == K_WAL || k == K_JOURNAL) {
        struct kvfs_rgn *g = &fs->rgn[KVFS_LOG];

        if (g->size > 0 && g->owner != owner_of(k)) {
            kvfs_logf(fs, "store disk: %s%s cannot open: the log region holds the %s",
                      fs->path, k == K_WAL ? "-wal" : "-journal",
                      g->owner == RGN_OWNER_WAL ? "WAL" : "rollback journal");
            return SQLITE_CANTOPEN;
        }
        g->owner = owner_of(k);
    } else if (k == K_DB || k == K_BAK) {
        fs->rgn[rgn].owner = RGN_OWNER_MAIN;
    }
    f->fs = fs;
    f->kind = k;
    f->rgn = rgn;
    f->base.pMethods = &methods;
    if (k <= K_BAK)
        fs->opened[rgn]++;
    if (out_flags != NULL)
        *out_flags = flags;
    return SQLITE_OK;
}

static int v_delete(sqlite3_vfs *vfs, const char *name, int sync_dir)
{
    struct kvfs *fs = fs_of(vfs);
    int rgn = 0;
    enum kind k = classify(fs, name, &rgn);

    (void)sync_dir; /* deletes are always durable (kvfs_io_delete) */
    switch (k) {
    case K_BAK_JOURNAL:
        ram_free(&fs->bak_journal[rgn]);
        return SQLITE_OK;
    case K_BAK_WAL:
    case K_NONE:
        return SQLITE_OK; /* nothing there: as deleting a missing file */
    case K_WAL:
    case K_JOURNAL:
        if (fs->rgn[KVFS_LOG].owner != owner_of(k) && fs->rgn[KVFS_LOG].size > 0)
            return SQLITE_OK; /* the region holds the other name's file */
        break;
    case K_DB:
    case K_BAK:
        break;
    }
    return kvfs_io_delete(fs, rgn);
}

static int v_access(sqlite3_vfs *vfs, const char *name, int flags, int *out)
{
    struct kvfs *fs = fs_of(vfs);
    int rgn = 0;
    enum kind k = classify(fs, name, &rgn);

    (void)flags; /* whatever exists may be read and written */
    *out = k != K_NONE && exists(fs, k, rgn);
    return SQLITE_OK;
}

static int v_full_pathname(sqlite3_vfs *vfs, const char *name, int n, char *out)
{
    size_t len = strlen(name);

    (void)vfs;
    if (n <= 0 || len >= (size_t)n)
        return SQLITE_CANTOPEN;
    memcpy(out, name, len + 1);
    return SQLITE_OK;
}

static int v_randomness(sqlite3_vfs *vfs, int n, char *out)
{
    struct kvfs *fs = fs_of(vfs);

    if (n <= 0)
        return 0;
    fs->env.random(fs->env.ctx, out, (size_t)n);
    return n;
}

static int v_sleep(sqlite3_vfs *vfs, int us)
{
    struct kvfs *fs = fs_of(vfs);

    if (us > 0 && fs->env.sleep_us != NULL)
        fs->env.sleep_us(fs->env.ctx, (uint64_t)us);
    return us;
}

static int v_current_time64(sqlite3_vfs *vfs, sqlite3_int64 *out)
{
    struct kvfs *fs = fs_of(vfs);
    /* Julian day number of the Unix epoch, in milliseconds. */
    const sqlite3_int64 epoch = 210866760000000LL;

    *out = epoch + (fs->env.now_ms != NULL ? fs->env.now_ms(fs->env.ctx) : 0);
    return SQLITE_OK;
}

static int v_last_error(sqlite3_vfs *vfs, int n, char *out)
{
    (void)vfs;
    if (n > 0)
        out[0] = '\0';
    return 0;
}

/* ---- public -------------------------------------------------------------- */

static bool region_fits(const struct kvfs *fs, const struct kvfs_region *r, char *err,
                        size_t err_size, int i)
{
    uint64_t per_pb = fs->pb / fs->lb;
    uint64_t cap = fs->dev->topo.capacity;

    if (r->lba % per_pb != 0 || r->blocks % per_pb != 0 || r->blocks < 3 * per_pb ||
        r->lba > cap || r->blocks > cap - r->lba) {
        (void)snprintf(err, err_size,
                       "region %d (blocks %llu+%llu) is not whole physical blocks inside the "
                       "disk (%llu blocks)", i, (unsigned long long)r->lba,
                       (unsigned long long)r->blocks, (unsigned long long)cap);
        return false;
    }
    for (int j = 0; j < i; j++) {
        const struct kvfs_rgn *o = &fs->rgn[j];

        if (r->lba < o->lba + o->blocks && o->lba < r->lba + r->blocks) {
            (void)snprintf(err, err_size, "regions %d and %d overlap", j, i);
            return false;
        }
    }
    return true;
}

static bool check_device(struct kvfs *fs, const struct kvfs_config *cfg, char *err,
                         size_t err_size)
{
    const struct blk_topology *t = &cfg->dev->topo;

    if (t->logical_block < 512 || t->physical_block < t->logical_block ||
        t->physical_block % t->logical_block != 0 || t->physical_block > KVFS_BUF_BYTES / 4 ||
        (t->physical_block & (t->physical_block - 1)) != 0) {
        (void)snprintf(err, err_size, "%s: unusable block sizes %u/%u", cfg->dev->name,
                       t->logical_block, t->physical_block);
        return false;
    }
    if (t->read_only || (t->write_cache && !t->flush)) {
        (void)snprintf(err, err_size, "%s: %s", cfg->dev->name,
                       t->read_only ? "read-only" : "volatile write cache without flush");
        return false;
    }
    fs->lb = t->logical_block;
    fs->pb = t->physical_block;
    fs->xfer = KVFS_BUF_BYTES;
    if (t->max_transfer != 0 && t->max_transfer < fs->xfer)
        fs->xfer = t->max_transfer / fs->pb * fs->pb;
    if (fs->xfer < fs->pb) {
        (void)snprintf(err, err_size, "%s: largest transfer %u is below a physical block",
                       cfg->dev->name, t->max_transfer);
        return false;
    }
    return true;
}

static const uint32_t role_of[KVFS_ROLES] = {RGN_ROLE_DB, RGN_ROLE_LOG, RGN_ROLE_BACKUP,
                                             RGN_ROLE_BACKUP};

struct kvfs *kvfs_open(const struct kvfs_config *cfg, char *err, size_t err_size)
{
    struct kvfs *fs;
    size_t name_len = strlen(cfg->vfs_name), path_len = strlen(cfg->path);

    if (name_len > KVFS_NAME_MAX || path_len > KVFS_PATH_MAX - sizeof ".bak-a-journal" ||
        path_len == 0 || cfg->env.random == NULL) {
        (void)snprintf(err, err_size, "store VFS: bad name, path or environment");
        return NULL;
    }
    fs = calloc(1, sizeof *fs);
    if (fs == NULL)
        goto nomem;
    memcpy(fs->name, cfg->vfs_name, name_len + 1);
    memcpy(fs->path, cfg->path, path_len + 1);
    fs->path_len = path_len;
    fs->dev = cfg->dev;
    fs->env = cfg->env;
    fs->run_rgn = -1;
    if (!check_device(fs, cfg, err, err_size))
        goto fail;
    fs->run_mem = malloc(KVFS_BUF_BYTES + BUF_ALIGN);
    fs->rbuf_mem = malloc(KVFS_BUF_BYTES + BUF_ALIGN);
    if (fs->run_mem == NULL || fs->rbuf_mem == NULL)
        goto nomem;
    fs->run = align_up(fs->run_mem);
    fs->rbuf = align_up(fs->rbuf_mem);
    for (int i = 0; i < KVFS_ROLES; i++) {
        struct kvfs_rgn *g = &fs->rgn[i];
        const struct kvfs_region *r = &cfg->region[i];

        if (!region_fits(fs, r, err, err_size, i))
            goto fail;
        g->role = role_of[i];
        g->lba = r->lba;
        g->blocks = r->blocks;
        g->data_lba = r->lba + RGN_HDR_COPIES * (fs->pb / fs->lb);
        g->capacity = (r->blocks - RGN_HDR_COPIES * (fs->pb / fs->lb)) * fs->lb;
        if (kvfs_io_load(fs, i, err, err_size) != SQLITE_OK)
            goto fail;
    }
    fs->vfs.iVersion = 2;
    fs->vfs.szOsFile = (int)sizeof(struct kfile);
    fs->vfs.mxPathname = KVFS_PATH_MAX;
    fs->vfs.zName = fs->name;
    fs->vfs.pAppData = fs;
    fs->vfs.xOpen = v_open;
    fs->vfs.xDelete = v_delete;
    fs->vfs.xAccess = v_access;
    fs->vfs.xFullPathname = v_full_pathname;
    fs->vfs.xRandomness = v_randomness;
    fs->vfs.xSleep = v_sleep;
    fs->vfs.xGetLastError = v_last_error;
    fs->vfs.xCurrentTimeInt64 = v_current_time64;
    /* xCurrentTime (a double) stays NULL: SQLite calls xCurrentTimeInt64
     * when iVersion >= 2, and the kernel's own code has no floating point. */
    return fs;

nomem:
    (void)snprintf(err, err_size, "store VFS: out of memory");
fail:
    kvfs_close(fs);
    return NULL;
}

int kvfs_register(struct kvfs *fs, int make_default)
{
    int rc = sqlite3_vfs_register(&fs->vfs, make_default);

    fs->registered = rc == SQLITE_OK;
    return rc;
}

void kvfs_close(struct kvfs *fs)
{
    if (fs == NULL)
        return;
    if (fs->registered)
        (void)sqlite3_vfs_unregister(&fs->vfs); /* fails only if never registered */
    for (int i = 0; i < 2; i++)
        ram_free(&fs->bak_journal[i]);
    free(fs->run_mem);
    free(fs->rbuf_mem);
    free(fs);
}

int kvfs_set_regions(struct kvfs *fs, const struct kvfs_region region[KVFS_ROLES], char *err,
                     size_t err_size)
{
    for (int i = 0; i < KVFS_ROLES; i++) {
        const struct kvfs_rgn *g = &fs->rgn[i];
        const struct kvfs_region *r = &region[i];

        if (!region_fits(fs, r, err, err_size, 0))
            return -1;
        for (int j = 0; j < i; j++)
            if (r->lba < region[j].lba + region[j].blocks && region[j].lba < r->lba + r->blocks) {
                (void)snprintf(err, err_size, "regions %d and %d overlap", j, i);
                return -1;
            }
        if (r->lba == g->lba ? r->blocks < g->blocks : fs->opened[i] > 0 || fs->run_rgn == i) {
            (void)snprintf(err, err_size, "region %d cannot %s now", i,
                           r->lba == g->lba ? "shrink" : "move while its file is open");
            return -1;
        }
    }
    for (int i = 0; i < KVFS_ROLES; i++) {
        struct kvfs_rgn *g = &fs->rgn[i];
        const struct kvfs_region *r = &region[i];
        bool moved = r->lba != g->lba;

        if (!moved && r->blocks == g->blocks)
            continue;
        g->lba = r->lba;
        g->blocks = r->blocks;
        g->data_lba = r->lba + RGN_HDR_COPIES * (fs->pb / fs->lb);
        g->capacity = (r->blocks - RGN_HDR_COPIES * (fs->pb / fs->lb)) * fs->lb;
        /* A grown region keeps its file; a moved one is read afresh. */
        if (moved && kvfs_io_load(fs, i, err, err_size) != SQLITE_OK)
            return -1;
    }
    return 0;
}

void kvfs_get_stats(const struct kvfs *fs, struct kvfs_stats *out)
{
    *out = fs->st;
    for (int i = 0; i < KVFS_ROLES; i++) {
        out->logical_size[i] = fs->rgn[i].size;
        out->capacity[i] = fs->rgn[i].capacity;
    }
}
