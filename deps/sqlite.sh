# shellcheck shell=bash
# deps/sqlite.sh - how tern builds SQLite for the hosted daemon.
#
# Sourced by deps/fetch.sh (which runs with `set -euo pipefail`); not run on
# its own. The single place that lists SQLite's compile options.
#
# The Debian orig tarball is SQLite's full source tree; the amalgamation
# (sqlite3.c + sqlite3.h) is generated from it with `configure && make
# sqlite3.c` (needs tclsh from Debian's tcl package). configure is only used
# to drive that generator: tern compiles sqlite3.c itself with the flags below,
# so the Debian patches that edit configure.ac (without regenerating configure)
# have no effect on the result; the patches to the C sources do.
#
# Compile options (daemon build, libsqlite3.a):
#   SQLITE_DQS=0                 double-quoted strings are identifiers only
#   SQLITE_OMIT_LOAD_EXTENSION   no dlopen of extensions
#   SQLITE_THREADSAFE=1          SQLite's default (serialized). 2 (multi-thread)
#                                would do for a dedicated storage thread; decide
#                                with the store design.
#   HAVE_*                       what glibc offers (fdatasync, usleep, *_r time
#                                functions); HAVE_MALLOC_USABLE_SIZE is left out
#                                as Debian does.
# Everything else keeps SQLite's defaults, to be decided with the store (D1):
# journal mode and synchronous level (SQLITE_DEFAULT_WAL_SYNCHRONOUS), memory
# statistics (SQLITE_DEFAULT_MEMSTATUS), page and cache sizes, shared cache.
# No math functions, no JSON-specific flags (JSON is built in since 3.38).
# The library needs only libc (pthread is part of glibc >= 2.34).
#
# The kernel build compiles the same sqlite3.c with its own options
# (SQLITE_OS_OTHER=1 and a VFS), from build/deps/sqlite/sqlite3.c.

SQLITE_DEFINES=(
    -DSQLITE_DQS=0
    -DSQLITE_OMIT_LOAD_EXTENSION=1
    -DSQLITE_THREADSAFE=1
    -DHAVE_FDATASYNC=1 -DHAVE_USLEEP=1 -DHAVE_LOCALTIME_R=1 -DHAVE_GMTIME_R=1
    -DHAVE_STRCHRNUL=1 -DHAVE_ISNAN=1
)
SQLITE_CFLAGS="-O2 -g -fPIE -fstack-protector-strong -D_FORTIFY_SOURCE=2"

# sqlite_amalgamation SRC BUILD OUT: generate sqlite3.c/sqlite3.h in BUILD
# (out-of-tree) and copy them to OUT.
sqlite_amalgamation() {
    local src=$1 build=$2 out=$3
    mkdir -p "$build" "$out"
    cd "$build" || return
    # --disable-tcl: no Tcl extension (needs tcl-dev); tclsh is still used.
    "$src/configure" --disable-tcl
    make -j2 sqlite3.c
    cp sqlite3.c sqlite3.h "$out/"
}

# sqlite_library OUT: compile OUT/sqlite3.c into OUT/libsqlite3.a.
sqlite_library() {
    local out=$1
    cd "$out" || return
    # shellcheck disable=SC2086 # SQLITE_CFLAGS is a list of words
    gcc $SQLITE_CFLAGS "${SQLITE_DEFINES[@]}" -c sqlite3.c -o sqlite3.o
    rm -f libsqlite3.a
    ar rcs libsqlite3.a sqlite3.o
    rm -f sqlite3.o
}
