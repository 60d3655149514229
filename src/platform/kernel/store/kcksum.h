/*
 * kcksum.h - page checksums for the store's SQLite files (layout v3):
 * SQLite's cksumvfs shim (the pinned source, build/deps/sqlite/src/ext/
 * misc/cksumvfs.c, compiled by store/sqlite.mk and, for the unit tests,
 * src/store/store.mk) stacked over a VFS, with two small shims of tern's
 * that keep SQLite's WAL intact under it: a repair of the WAL frame
 * checksums below it and a write splitter above it (kcksum.c says why).
 *
 * A database opened through KCKSUM_VFS whose reserve bytes are 8 (the
 * store sets them when it creates the file: store_options.reserve_bytes)
 * gets an 8-byte checksum in every page it writes, to the database, its
 * WAL and its backups, and every full page read is verified: a mismatch
 * fails the read with SQLITE_IOERR_DATA. pagesum.h checks the same sums
 * without SQLite.
 */
#ifndef TERN_KSTORE_KCKSUM_H
#define TERN_KSTORE_KCKSUM_H

#define KCKSUM_VFS "tern-cksum"       /* what the store opens: the top of the stack */
#define KCKSUM_CKSM_VFS "cksmvfs"     /* the name cksumvfs registers under */
#define KCKSUM_WALFIX_VFS "tern-walfix"

enum { KCKSUM_RESERVE = 8 };           /* the reserve bytes cksumvfs needs */

/*
 * Stack the WAL repair shim over the registered VFS named lower, cksumvfs
 * over that and the splitter on top, named KCKSUM_VFS; the default VFS
 * stays what it was. Only one stack
 * at a time (cksumvfs is a single registration): kcksum_unstack() first
 * to stack over another VFS. SQLite's result code.
 */
int kcksum_stack(const char *lower);

/* Unregister both shims (no file may be open through them); harmless when
 * nothing is stacked. */
void kcksum_unstack(void);

#endif
