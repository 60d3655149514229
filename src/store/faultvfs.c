/*
 * faultvfs.c - the fault-injecting VFS shim (TEST-ONLY; see faultvfs.h).
 *
 * Every file opened through the shim is the wrapped VFS's file with a small
 * header in front (the shim's sqlite3_file, then the real one), and every
 * method forwards to the real file; xWrite/xTruncate and xSync first ask
 * should_fail(), and a WAL's writes are held below its size limit when one
 * is set (store_fault_limit_wal). Everything else (reads, locks, WAL index, mmap) passes
 * through unchanged, so the database behaves exactly as without the shim
 * until a fault is armed.
 */
#include "store/faultvfs.h"

#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

enum { NAME_MAX_LEN = 63 };

_Static_assert(STORE_FAULT_CODE_FULL == SQLITE_FULL, "SQLITE_FULL");
_Static_assert(STORE_FAULT_CODE_IO == SQLITE_IOERR_WRITE, "SQLITE_IOERR_WRITE");

struct store_fault {
    sqlite3_vfs vfs;            /* registered; pAppData points back here */
    sqlite3_vfs *base;          /* the wrapped VFS, not owned */
    char name[NAME_MAX_LEN + 1];
    uint64_t count[STORE_FAULT_OP_COUNT];
    uint64_t countdown[STORE_FAULT_OP_COUNT]; /* 0 = not armed */
    int nth_code[STORE_FAULT_OP_COUNT];
    bool fail_all;
    int all_code;
    uint64_t injected;
    uint64_t wal_limit;         /* 0 = none; see store_fault_limit_wal */
};

typedef struct fault_file {
    sqlite3_file base; /* must be first: SQLite sees this */
    store_fault *f;
    sqlite3_file *real; /* follows this struct in the same allocation */
    bool wal;           /* opened as a write-ahead log */
} fault_file;

static sqlite3_file *real_of(sqlite3_file *file)
{
    return ((fault_file *)file)->real;
}

/* Count an operation; SQLITE_OK or the code it must fail with. */
static int should_fail(store_fault *f, store_fault_op op)
{
    f->count[op]++;
    if (f->fail_all) {
        f->injected++;
        return f->all_code;
    }
    if (f->countdown[op] > 0 && --f->countdown[op] == 0) {
        f->injected++;
        return f->nth_code[op];
    }
    return SQLITE_OK;
}

/* ---- file methods ------------------------------------------------------- */

static int ff_close(sqlite3_file *file)
{
    sqlite3_file *real = real_of(file);

    return real->pMethods != NULL ? real->pMethods->xClose(real) : SQLITE_OK;
}

static int ff_read(sqlite3_file *file, void *buf, int amt, sqlite3_int64 off)
{
    sqlite3_file *real = real_of(file);

    return real->pMethods->xRead(real, buf, amt, off);
}

/* A WAL that may not grow past the limit: as on a full disk, blocks the
 * file already has can be rewritten, new ones cannot be had. */
static bool beyond_wal_limit(const fault_file *ff, sqlite3_int64 end)
{
    return ff->wal && ff->f->wal_limit > 0 && end > 0 && (uint64_t)end > ff->f->wal_limit;
}

static int ff_write(sqlite3_file *file, const void *buf, int amt, sqlite3_int64 off)
{
    sqlite3_file *real = real_of(file);
    fault_file *ff = (fault_file *)file;
    int rc = should_fail(ff->f, STORE_FAULT_WRITE);

    if (rc == SQLITE_OK && beyond_wal_limit(ff, off + amt)) {
        ff->f->injected++;
        rc = SQLITE_FULL;
    }

    return rc != SQLITE_OK ? rc : real->pMethods->xWrite(real, buf, amt, off);
}

static int ff_truncate(sqlite3_file *file, sqlite3_int64 size)
{
    sqlite3_file *real = real_of(file);
    fault_file *ff = (fault_file *)file;
    int rc = should_fail(ff->f, STORE_FAULT_WRITE);

    if (rc == SQLITE_OK && beyond_wal_limit(ff, size)) {
        ff->f->injected++;
        rc = SQLITE_FULL;
    }

    return rc != SQLITE_OK ? rc : real->pMethods->xTruncate(real, size);
}

static int ff_sync(sqlite3_file *file, int flags)
{
    sqlite3_file *real = real_of(file);
    int rc = should_fail(((fault_file *)file)->f, STORE_FAULT_SYNC);

    return rc != SQLITE_OK ? rc : real->pMethods->xSync(real, flags);
}

static int ff_file_size(sqlite3_file *file, sqlite3_int64 *size)
{
    sqlite3_file *real = real_of(file);

    return real->pMethods->xFileSize(real, size);
}

static int ff_lock(sqlite3_file *file, int lock)
{
    sqlite3_file *real = real_of(file);

    return real->pMethods->xLock(real, lock);
}

static int ff_unlock(sqlite3_file *file, int lock)
{
    sqlite3_file *real = real_of(file);

    return real->pMethods->xUnlock(real, lock);
}

static int ff_check_reserved(sqlite3_file *file, int *out)
{
    sqlite3_file *real = real_of(file);

    return real->pMethods->xCheckReservedLock(real, out);
}

static int ff_file_control(sqlite3_file *file, int op, void *arg)
{
    sqlite3_file *real = real_of(file);

    return real->pMethods->xFileControl(real, op, arg);
}

static int ff_sector_size(sqlite3_file *file)
{
    sqlite3_file *real = real_of(file);

    return real->pMethods->xSectorSize(real);
}

static int ff_device_chars(sqlite3_file *file)
{
    sqlite3_file *real = real_of(file);

    return real->pMethods->xDeviceCharacteristics(real);
}

static int ff_shm_map(sqlite3_file *file, int pg, int pgsz, int extend, void volatile **pp)
{
    sqlite3_file *real = real_of(file);

    if (real->pMethods->iVersion < 2 || real->pMethods->xShmMap == NULL)
        return SQLITE_IOERR_SHMMAP;
    return real->pMethods->xShmMap(real, pg, pgsz, extend, pp);
}

static int ff_shm_lock(sqlite3_file *file, int offset, int n, int flags)
{
    sqlite3_file *real = real_of(file);

    if (real->pMethods->iVersion < 2 || real->pMethods->xShmLock == NULL)
        return SQLITE_IOERR_SHMLOCK;
    return real->pMethods->xShmLock(real, offset, n, flags);
}

static void ff_shm_barrier(sqlite3_file *file)
{
    sqlite3_file *real = real_of(file);

    if (real->pMethods->iVersion >= 2 && real->pMethods->xShmBarrier != NULL)
        real->pMethods->xShmBarrier(real);
}

static int ff_shm_unmap(sqlite3_file *file, int delete_flag)
{
    sqlite3_file *real = real_of(file);

    if (real->pMethods->iVersion < 2 || real->pMethods->xShmUnmap == NULL)
        return SQLITE_OK;
    return real->pMethods->xShmUnmap(real, delete_flag);
}

static int ff_fetch(sqlite3_file *file, sqlite3_int64 off, int amt, void **pp)
{
    sqlite3_file *real = real_of(file);

    if (real->pMethods->iVersion < 3 || real->pMethods->xFetch == NULL) {
        *pp = NULL; /* "no mapping": SQLite then reads */
        return SQLITE_OK;
    }
    return real->pMethods->xFetch(real, off, amt, pp);
}

static int ff_unfetch(sqlite3_file *file, sqlite3_int64 off, void *p)
{
    sqlite3_file *real = real_of(file);

    if (real->pMethods->iVersion < 3 || real->pMethods->xUnfetch == NULL)
        return SQLITE_OK;
    return real->pMethods->xUnfetch(real, off, p);
}

static const sqlite3_io_methods fault_io = {
    3,
    ff_close,
    ff_read,
    ff_write,
    ff_truncate,
    ff_sync,
    ff_file_size,
    ff_lock,
    ff_unlock,
    ff_check_reserved,
    ff_file_control,
    ff_sector_size,
    ff_device_chars,
    ff_shm_map,
    ff_shm_lock,
    ff_shm_barrier,
    ff_shm_unmap,
    ff_fetch,
    ff_unfetch,
};

/* ---- VFS methods -------------------------------------------------------- */

static store_fault *fault_of(sqlite3_vfs *vfs)
{
    return vfs->pAppData;
}

static int fv_open(sqlite3_vfs *vfs, sqlite3_filename name, sqlite3_file *file, int flags,
                   int *out_flags)
{
    store_fault *f = fault_of(vfs);
    fault_file *ff = (fault_file *)file;
    int rc;

    ff->f = f;
    ff->wal = (flags & SQLITE_OPEN_WAL) != 0;
    ff->real = (sqlite3_file *)(ff + 1);
    memset(ff->real, 0, (size_t)f->base->szOsFile);
    rc = f->base->xOpen(f->base, name, ff->real, flags, out_flags);
    /* SQLite calls xClose whenever pMethods is set, even after a failed
     * open; mirror the real file's choice. */
    ff->base.pMethods = ff->real->pMethods != NULL ? &fault_io : NULL;
    return rc;
}

static int fv_delete(sqlite3_vfs *vfs, const char *name, int sync_dir)
{
    store_fault *f = fault_of(vfs);
    int rc = should_fail(f, STORE_FAULT_WRITE);

    return rc != SQLITE_OK ? rc : f->base->xDelete(f->base, name, sync_dir);
}

static int fv_access(sqlite3_vfs *vfs, const char *name, int flags, int *out)
{
    store_fault *f = fault_of(vfs);

    return f->base->xAccess(f->base, name, flags, out);
}

static int fv_full_pathname(sqlite3_vfs *vfs, const char *name, int n, char *out)
{
    store_fault *f = fault_of(vfs);

    return f->base->xFullPathname(f->base, name, n, out);
}

static void *fv_dlopen(sqlite3_vfs *vfs, const char *name)
{
    store_fault *f = fault_of(vfs);

    return f->base->xDlOpen(f->base, name);
}

static void fv_dlerror(sqlite3_vfs *vfs, int n, char *msg)
{
    store_fault *f = fault_of(vfs);

    f->base->xDlError(f->base, n, msg);
}

static void (*fv_dlsym(sqlite3_vfs *vfs, void *h, const char *sym))(void)
{
    store_fault *f = fault_of(vfs);

    return f->base->xDlSym(f->base, h, sym);
}

static void fv_dlclose(sqlite3_vfs *vfs, void *h)
{
    store_fault *f = fault_of(vfs);

    f->base->xDlClose(f->base, h);
}

static int fv_randomness(sqlite3_vfs *vfs, int n, char *out)
{
    store_fault *f = fault_of(vfs);

    return f->base->xRandomness(f->base, n, out);
}

static int fv_sleep(sqlite3_vfs *vfs, int us)
{
    store_fault *f = fault_of(vfs);

    return f->base->xSleep(f->base, us);
}

static int fv_current_time(sqlite3_vfs *vfs, double *out)
{
    store_fault *f = fault_of(vfs);

    return f->base->xCurrentTime(f->base, out);
}

static int fv_last_error(sqlite3_vfs *vfs, int n, char *out)
{
    store_fault *f = fault_of(vfs);

    return f->base->xGetLastError != NULL ? f->base->xGetLastError(f->base, n, out) : 0;
}

static int fv_current_time64(sqlite3_vfs *vfs, sqlite3_int64 *out)
{
    store_fault *f = fault_of(vfs);
    double days = 0;
    int rc;

    if (f->base->iVersion >= 2 && f->base->xCurrentTimeInt64 != NULL)
        return f->base->xCurrentTimeInt64(f->base, out);
    rc = f->base->xCurrentTime(f->base, &days);
    *out = (sqlite3_int64)(days * 86400000.0);
    return rc;
}

/* ---- public ------------------------------------------------------------- */

store_fault *store_fault_create(const char *name, const char *base)
{
    store_fault *f;
    sqlite3_vfs *real;

    if (sqlite3_initialize() != SQLITE_OK || strlen(name) > NAME_MAX_LEN ||
        sqlite3_vfs_find(name) != NULL)
        return NULL;
    real = sqlite3_vfs_find(base);
    if (real == NULL)
        return NULL;
    f = calloc(1, sizeof *f);
    if (f == NULL)
        return NULL;
    memcpy(f->name, name, strlen(name) + 1);
    f->base = real;
    f->vfs.iVersion = 2;
    f->vfs.szOsFile = (int)sizeof(fault_file) + real->szOsFile;
    f->vfs.mxPathname = real->mxPathname;
    f->vfs.zName = f->name;
    f->vfs.pAppData = f;
    f->vfs.xOpen = fv_open;
    f->vfs.xDelete = fv_delete;
    f->vfs.xAccess = fv_access;
    f->vfs.xFullPathname = fv_full_pathname;
    f->vfs.xDlOpen = fv_dlopen;
    f->vfs.xDlError = fv_dlerror;
    f->vfs.xDlSym = fv_dlsym;
    f->vfs.xDlClose = fv_dlclose;
    f->vfs.xRandomness = fv_randomness;
    f->vfs.xSleep = fv_sleep;
    f->vfs.xCurrentTime = fv_current_time;
    f->vfs.xGetLastError = fv_last_error;
    f->vfs.xCurrentTimeInt64 = fv_current_time64;
    if (sqlite3_vfs_register(&f->vfs, 0) != SQLITE_OK) {
        free(f);
        return NULL;
    }
    return f;
}

void store_fault_destroy(store_fault *f)
{
    if (f == NULL)
        return;
    /* Only fails for a VFS that was never registered. */
    (void)sqlite3_vfs_unregister(&f->vfs);
    free(f);
}

void store_fault_fail_nth(store_fault *f, store_fault_op op, uint32_t n, int code)
{
    f->countdown[op] = n;
    f->nth_code[op] = code;
}

void store_fault_fail_all(store_fault *f, bool on, int code)
{
    f->fail_all = on;
    f->all_code = code;
}

void store_fault_limit_wal(store_fault *f, uint64_t bytes)
{
    f->wal_limit = bytes;
}

uint64_t store_fault_count(const store_fault *f, store_fault_op op)
{
    return f->count[op];
}

uint64_t store_fault_injected(const store_fault *f)
{
    return f->injected;
}
