#!/usr/bin/env bash
# deps/fetch.sh - fetch, verify and build tern's pinned Debian source packages.
#
# Reads deps/lock (wolfSSL, SQLite, lwIP from Debian 13 "trixie"), and makes
# build/deps (in the repository) a symlink to a cache directory holding:
#
#   wolfssl/src/             patched Debian source (configure generated)
#   wolfssl/{include,lib}/   static libwolfssl.a + headers (hosted daemon)
#   wolfssl/bin/wolfcrypt-benchmark
#   sqlite/src/              patched Debian source
#   sqlite/{sqlite3.c,sqlite3.h,libsqlite3.a}
#   lwip/src/                patched Debian source (the kernel build uses it)
#   deps.mk                  make variables to compile/link against the above
#   manifest.txt             what was built from what, with which options
#   logs/                    full output of every step
#
# The cache directory is
#   ${TERN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tern}/deps-<key>
# where <key> is the first 16 hex digits of the SHA-256 of the lock and the
# deps/*.sh build scripts: changing either builds a new directory. A finished
# directory carries a stamp (.complete) written last, so an interrupted build
# is redone from scratch. With the stamp present this script only (re)creates
# the symlink and prints nothing. Verified downloads are kept, shared by all
# keys, in <cache root>/downloads; the private apt state in <cache root>/apt.
#
# Downloads use apt-get with a private configuration (APT_CONFIG) that reads
# none of the machine's apt configuration or state: its own deb-src list for
# trixie main signed by the Debian archive keyring, its own index and cache
# directories, no hooks. It works without root. Every file must match its
# SHA-256 in the lock. If Debian has replaced the pinned revision, the newest
# revision of the same upstream version is used instead, but only if all its
# orig files (upstream tarballs and signatures) still match the lock; a
# warning says so and manifest.txt records it. apt itself checks the other
# files against the signed trixie index.
#
# Sources are unpacked with dpkg-source -x (dpkg-dev), which checks the .dsc
# checksums and applies debian/patches exactly as Debian does (quilt format,
# several orig tarballs), rather than a hand-written `patch -p1` loop.
#
# Usage:
#   deps/fetch.sh                      ensure the deps are built, link build/deps
#   deps/fetch.sh --lock-lines PKG...  print lock lines for the current trixie
#                                      versions of source packages PKG
# Environment:
#   TERN_CACHE       cache root (default ${XDG_CACHE_HOME:-$HOME/.cache}/tern)
#   TERN_DEPS_LOCK   use another lock file (for tests)
#   TERN_DEPS_FETCH_ONLY=1  stop after downloading and verifying (for tests)
#
# Cache directories of other keys whose stamp has not been refreshed for 14
# days (each cache hit refreshes it), and unfinished ones, are removed when a
# new one is built.
# Needs (scripts/setup-host.sh installs them): apt, dpkg-dev, gcc, make,
# autoconf, automake, libtool, tcl, xz-utils, debian-archive-keyring.
set -euo pipefail
export LC_ALL=C

self=${BASH_SOURCE[0]}
[[ $self == */* ]] || self=./$self
DEPS_DIR=$(cd "${self%/*}" && pwd -P)
REPO=${DEPS_DIR%/*}
LOCK=${TERN_DEPS_LOCK:-$DEPS_DIR/lock}
CACHE_ROOT=${TERN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tern}
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
MIRROR=http://deb.debian.org/debian
SUITE=trixie
# The packages this script knows how to build; the lock must pin each.
REQUIRED_PACKAGES=(wolfssl sqlite3 lwip)

die() { printf 'deps: error: %s\n' "$*" >&2; exit 1; }
warn() { printf 'deps: warning: %s\n' "$*" >&2; }

[[ -r $LOCK ]] || die "lock file not found: $LOCK"

# cache_key: hash of the lock and of every build script in deps/ (sorted).
cache_key() {
    local f sum
    sum=$({
        printf 'lock\n'
        cat "$LOCK"
        for f in "$DEPS_DIR"/*.sh; do
            printf '%s\n' "${f##*/}"
            cat "$f"
        done
    } | sha256sum)
    printf '%s' "${sum:0:16}"
}

KEY=$(cache_key)
CACHE=$CACHE_ROOT/deps-$KEY
LINK=$REPO/build/deps

# link_build: point build/deps at the cache directory (atomically).
link_build() {
    if [[ -e $LINK && ! -L $LINK ]]; then
        die "$LINK exists and is not a symlink; remove it and run again"
    fi
    if [[ $(readlink "$LINK" 2>/dev/null || true) != "$CACHE" ]]; then
        mkdir -p "$REPO/build"
        ln -sfn "$CACHE" "$LINK.tmp.$$"
        mv -Tf "$LINK.tmp.$$" "$LINK"
    fi
}

# Fast path: a finished cache directory. Rewriting the stamp marks it as in
# use (see pruning below) without starting a process; a read-only cache is
# fine too.
if [[ $# -eq 0 && -f $CACHE/.complete ]]; then
    { printf '%s\n' "$KEY" >"$CACHE/.complete"; } 2>/dev/null || true
    link_build
    exit 0
fi

# ---------------------------------------------------------------- apt -------

APT_DIR=$CACHE_ROOT/apt
APT_UPDATED=0

# apt_setup: write the private apt configuration under $APT_DIR.
apt_setup() {
    [[ -r $KEYRING ]] || die "$KEYRING missing (package debian-archive-keyring; run scripts/setup-host.sh)"
    command -v apt-get >/dev/null || die "apt-get not found"
    mkdir -p "$APT_DIR"/{lists/partial,cache/archives/partial,empty.d,state,log}
    : >"$APT_DIR/status"
    cat >"$APT_DIR/tern.sources" <<EOF
Types: deb-src
URIs: $MIRROR
Suites: $SUITE
Components: main
Signed-By: $KEYRING
EOF
    # Read first (APT_CONFIG), this points apt away from /etc/apt/apt.conf.d
    # and /etc/apt/apt.conf, so no system hooks run and no system state is
    # read or written.
    {
        printf 'Dir::Etc::Main "/dev/null";\n'
        printf 'Dir::Etc::Parts "%s";\n' "$APT_DIR/empty.d"
        printf 'Dir::Etc::SourceList "%s";\n' "$APT_DIR/tern.sources"
        printf 'Dir::Etc::SourceParts "%s";\n' "$APT_DIR/empty.d"
        printf 'Dir::Etc::Preferences "/dev/null";\n'
        printf 'Dir::Etc::PreferencesParts "%s";\n' "$APT_DIR/empty.d"
        printf 'Dir::Etc::Trusted "/dev/null";\n'
        printf 'Dir::Etc::TrustedParts "%s";\n' "$APT_DIR/empty.d"
        printf 'Dir::State "%s";\n' "$APT_DIR/state"
        printf 'Dir::State::Lists "%s";\n' "$APT_DIR/lists"
        printf 'Dir::State::status "%s";\n' "$APT_DIR/status"
        printf 'Dir::Cache "%s";\n' "$APT_DIR/cache"
        printf 'Dir::Cache::pkgcache "";\n'
        printf 'Dir::Cache::srcpkgcache "";\n'
        printf 'Dir::Log "%s";\n' "$APT_DIR/log"
        printf 'Acquire::Languages "none";\n'
        # As root apt would download as user _apt, which cannot write into
        # a private directory under root's home.
        if ((EUID == 0)); then printf 'APT::Sandbox::User "root";\n'; fi
        # Keep a proxy the machine's apt uses (environment proxies work anyway).
        local proxy=''
        eval "$(apt-config shell proxy Acquire::http::Proxy 2>/dev/null || true)"
        if [[ -n $proxy ]]; then printf 'Acquire::http::Proxy "%s";\n' "$proxy"; fi
    } >"$APT_DIR/apt.conf"
}

apt_get() { APT_CONFIG=$APT_DIR/apt.conf apt-get -q "$@"; }

# apt_update: refresh the private trixie source index (once per run).
apt_update() {
    ((APT_UPDATED)) && return 0
    apt_setup
    step "apt: update trixie source index" "$LOGS/apt.log" apt_get update
    APT_UPDATED=1
}

# apt_versions PKG: the versions of source package PKG in the index.
apt_versions() {
    APT_CONFIG=$APT_DIR/apt.conf apt-cache showsrc "$1" 2>/dev/null |
        awk -v p="$1" '/^Package: / { cur = $2 } /^Version: / && cur == p { print $2 }'
}

# --lock-lines PKG...: print lock lines for what trixie has now.
if [[ ${1:-} == --lock-lines ]]; then
    shift
    (($# > 0)) || die "usage: deps/fetch.sh --lock-lines PKG..."
    mkdir -p "$CACHE_ROOT"
    apt_setup
    apt_get update >/dev/null || die "apt-get update failed"
    for pkg in "$@"; do
        APT_CONFIG=$APT_DIR/apt.conf apt-cache showsrc "$pkg" | awk -v p="$pkg" '
            /^Package: /          { cur = $2; insum = 0; next }
            /^Version: /          { ver = $2; next }
            /^Checksums-Sha256:/  { insum = (cur == p); next }
            /^[^ ]/               { insum = 0 }
            insum && /^ /         { up = ver; sub(/^[0-9]+:/, "", up); sub(/-[^-]*$/, "", up)
                                    print p, up, ver, $3, $1 }'
    done
    exit 0
fi
(($# == 0)) || die "unknown arguments: $* (see the header of deps/fetch.sh)"

# ------------------------------------------------------------ helpers -------

LOGS=$CACHE/logs
START=$SECONDS

# Progress lines go to fd 3 (the original stdout), so that steps running in
# the background with their output in a log can still report.
exec 3>&1
say() { printf 'deps: %s\n' "$*" >&3; }

# step LABEL LOG COMMAND...: print LABEL, run COMMAND in a subshell with
# errexit, its output appended to LOG; on failure show the end of LOG and stop.
step() {
    local label=$1 log=$2 rc t0=$SECONDS
    shift 2
    say "$label"
    printf '\n=== %s: %s\n' "$label" "$*" >>"$log"
    set +e
    (set -e; "$@") >>"$log" 2>&1 </dev/null
    rc=$?
    set -e
    if ((rc != 0)); then
        printf 'deps: error: %s failed (exit %d); last lines of %s:\n' "$label" "$rc" "$log" >&2
        tail -n 40 "$log" | sed 's/^/  | /' >&2
        exit 1
    fi
    printf '%4ds  %s\n' $((SECONDS - t0)) "$label" >>"$LOGS/timings.txt"
}

sha256_of() { sha256sum "$1" | cut -d' ' -f1; }

# ---------------------------------------------------------- the lock --------

declare -A UPSTREAM=() DEBVER=() SHA=() FILES=()
PACKAGES=()
lineno=0
while IFS= read -r line || [[ -n $line ]]; do
    lineno=$((lineno + 1))
    [[ $line =~ ^[[:space:]]*(#|$) ]] && continue
    read -r pkg up deb file sum extra <<<"$line"
    [[ -z ${extra:-} && -n ${sum:-} ]] ||
        die "$LOCK:$lineno: expected 5 fields: package upstream_version debian_version file sha256"
    [[ $sum =~ ^[0-9a-f]{64}$ ]] || die "$LOCK:$lineno: not a SHA-256: $sum"
    [[ $file != */* && $file == "${pkg}_"* ]] || die "$LOCK:$lineno: bad file name: $file"
    [[ ${deb#*:} == "$up"-* ]] ||
        die "$LOCK:$lineno: Debian version $deb is not a revision of upstream version $up"
    if [[ -z ${UPSTREAM[$pkg]:-} ]]; then
        PACKAGES+=("$pkg")
        UPSTREAM[$pkg]=$up
        DEBVER[$pkg]=$deb
    elif [[ ${UPSTREAM[$pkg]} != "$up" || ${DEBVER[$pkg]} != "$deb" ]]; then
        die "$LOCK:$lineno: $pkg is pinned to two different versions"
    fi
    SHA[$pkg/$file]=$sum
    FILES[$pkg]+="$file "
done <"$LOCK"
for pkg in "${REQUIRED_PACKAGES[@]}"; do
    [[ -n ${UPSTREAM[$pkg]:-} ]] || die "$LOCK does not pin $pkg"
    [[ ${FILES[$pkg]} == *.dsc\ * ]] || die "$LOCK lists no .dsc for $pkg"
done

# ------------------------------------------------- lock the cache root ------

mkdir -p "$CACHE_ROOT"
exec 9>"$CACHE_ROOT/deps.lock"
if ! flock -n 9; then
    say "waiting for another deps/fetch.sh run (lock: $CACHE_ROOT/deps.lock)"
    flock 9
fi
if [[ -f $CACHE/.complete ]]; then
    link_build
    exit 0
fi
rm -rf "$CACHE" "$CACHE_ROOT"/downloads/.tmp.*
# Prune: unfinished directories (none can be in progress: we hold the lock)
# and finished ones unused for 14 days.
for old in "$CACHE_ROOT"/deps-*; do
    [[ -d $old && $old != "$CACHE" ]] || continue
    if [[ ! -f $old/.complete || -n $(find "$old/.complete" -mtime +14) ]]; then
        rm -rf "$old"
    fi
done
mkdir -p "$LOGS"
say "building into $CACHE (logs in $LOGS)"

# ------------------------------------------------------------ download ------

DL=$CACHE_ROOT/downloads
mkdir -p "$DL"
declare -A DSC=() USED=()

# orig_file PKG FILE: is FILE one of PKG's upstream (orig) files?
orig_file() { [[ $2 == "${1}_${UPSTREAM[$1]}.orig"* ]]; }

# fetch PKG: make the pinned files of PKG present and verified in $DL, or
# those of a newer Debian revision of the same upstream version.
fetch() {
    local pkg=$1 file have=1 ver tmp f sum want
    for file in ${FILES[$pkg]}; do
        if [[ ! -f $DL/$file || $(sha256_of "$DL/$file") != "${SHA[$pkg/$file]}" ]]; then
            have=0
            break
        fi
    done
    if ((have)); then
        for file in ${FILES[$pkg]}; do [[ $file == *.dsc ]] && DSC[$pkg]=$DL/$file; done
        USED[$pkg]="${DEBVER[$pkg]} (pinned)"
        return 0
    fi

    apt_update
    local versions
    versions=$(apt_versions "$pkg" || true)
    ver=''
    if grep -qxF -- "${DEBVER[$pkg]}" <<<"$versions"; then
        ver=${DEBVER[$pkg]}
    else
        local v up
        for v in $versions; do
            up=${v#*:}
            up=${up%-*}
            [[ $up == "${UPSTREAM[$pkg]}" ]] || continue
            if [[ -z $ver ]] || dpkg --compare-versions "$v" gt "$ver"; then ver=$v; fi
        done
        [[ -n $ver ]] || die "$pkg ${DEBVER[$pkg]} is no longer in Debian $SUITE, and no other revision of upstream ${UPSTREAM[$pkg]} is (available: ${versions//$'\n'/ }); update $LOCK"
    fi

    tmp=$(mktemp -d "$DL/.tmp.XXXXXX")
    # shellcheck disable=SC2016 # $1 and $@ belong to the inner bash
    step "$pkg: download $ver" "$LOGS/apt.log" \
        bash -c 'cd "$1" && shift && "$@"' _ "$tmp" \
        env APT_CONFIG="$APT_DIR/apt.conf" apt-get -q source --download-only "$pkg=$ver"

    if [[ $ver == "${DEBVER[$pkg]}" ]]; then
        # Exactly the pinned files, each with its pinned checksum.
        for file in ${FILES[$pkg]}; do
            [[ -f $tmp/$file ]] || { rm -rf "$tmp"; die "$pkg $ver: apt did not download $file listed in the lock"; }
        done
        for f in "$tmp"/*; do
            file=${f##*/}
            want=${SHA[$pkg/$file]:-}
            [[ -n $want ]] || { rm -rf "$tmp"; die "$pkg $ver has a file the lock does not list: $file (lock incomplete?)"; }
            sum=$(sha256_of "$f")
            [[ $sum == "$want" ]] || { rm -rf "$tmp"; die "checksum mismatch for $file: lock says $want, downloaded file has $sum"; }
        done
        USED[$pkg]="$ver (pinned)"
    else
        # A newer Debian revision: the orig files must be exactly the pinned ones.
        for file in ${FILES[$pkg]}; do
            orig_file "$pkg" "$file" || continue
            [[ -f $tmp/$file ]] || { rm -rf "$tmp"; die "$pkg $ver no longer has the pinned orig file $file; update $LOCK"; }
        done
        for f in "$tmp"/*; do
            file=${f##*/}
            orig_file "$pkg" "$file" || continue
            want=${SHA[$pkg/$file]:-}
            sum=$(sha256_of "$f")
            [[ -n $want ]] || { rm -rf "$tmp"; die "$pkg $ver has an orig file the lock does not list: $file; update $LOCK"; }
            [[ $sum == "$want" ]] || { rm -rf "$tmp"; die "checksum mismatch for $file ($pkg $ver): lock says $want, downloaded file has $sum"; }
        done
        warn "$pkg ${DEBVER[$pkg]} is no longer in Debian $SUITE; using $ver instead (same upstream ${UPSTREAM[$pkg]}, orig checksums match the lock; apt verified the rest). Update $LOCK."
        USED[$pkg]="$ver (pinned ${DEBVER[$pkg]} unavailable; orig files match the lock)"
    fi

    for f in "$tmp"/*; do
        mv -f "$f" "$DL/"
        [[ $f == *.dsc ]] && DSC[$pkg]=$DL/${f##*/}
    done
    rmdir "$tmp"
}

for pkg in "${PACKAGES[@]}"; do
    fetch "$pkg"
done
if [[ ${TERN_DEPS_FETCH_ONLY:-} == 1 ]]; then
    for pkg in "${PACKAGES[@]}"; do say "$pkg: ${USED[$pkg]}"; done
    say "downloads verified; stopping (TERN_DEPS_FETCH_ONLY=1)"
    exit 0
fi

# -------------------------------------------------------------- unpack ------

# unpack PKG DIR: extract and patch PKG's source into DIR.
unpack() {
    rm -rf "$2"
    mkdir -p "${2%/*}"
    dpkg-source --no-copy -x "${DSC[$1]}" "$2"
}

command -v dpkg-source >/dev/null || die "dpkg-source not found (package dpkg-dev; run scripts/setup-host.sh)"
for pkg in "${REQUIRED_PACKAGES[@]}"; do
    dir=$pkg
    [[ $pkg == sqlite3 ]] && dir=sqlite
    step "$pkg: unpack and apply Debian patches" "$LOGS/unpack.log" unpack "$pkg" "$CACHE/$dir/src"
done

# --------------------------------------------------------------- build ------

# shellcheck source=deps/wolfssl.sh
source "$DEPS_DIR/wolfssl.sh"
# shellcheck source=deps/sqlite.sh
source "$DEPS_DIR/sqlite.sh"

for tool in gcc make ar autoreconf libtoolize tclsh; do
    command -v "$tool" >/dev/null || die "$tool not found; run scripts/setup-host.sh"
done

# SQLite builds mostly single-threaded; run it next to wolfSSL's (equally
# single-threaded) autogen and configure. Its fd 9 keeps the cache lock held
# even if this script is interrupted, until it has finished.
build_sqlite() {
    step "sqlite: generate the amalgamation" "$LOGS/sqlite.log" \
        sqlite_amalgamation "$CACHE/sqlite/src" "$CACHE/sqlite/build" "$CACHE/sqlite"
    step "sqlite: compile libsqlite3.a" "$LOGS/sqlite.log" sqlite_library "$CACHE/sqlite"
    rm -rf "$CACHE/sqlite/build"
}
build_sqlite &
sqlite_pid=$!
trap 'kill "$sqlite_pid" 2>/dev/null || true' EXIT

step "wolfssl: autogen" "$LOGS/wolfssl.log" wolfssl_autogen "$CACHE/wolfssl/src"
step "wolfssl: configure" "$LOGS/wolfssl.log" \
    wolfssl_configure "$CACHE/wolfssl/src" "$CACHE/wolfssl/build" "$CACHE/wolfssl"
step "wolfssl: make (library, benchmark) and install" "$LOGS/wolfssl.log" \
    wolfssl_make "$CACHE/wolfssl/build" "$CACHE/wolfssl"
rm -rf "$CACHE/wolfssl/build"

wait "$sqlite_pid" || die "SQLite build failed (see above)"
trap - EXIT

# ---------------------------------------------------------- smoke test ------

# smoke: compile and run a program that uses both libraries the way the
# daemon will (PIE, warnings as errors, headers as system headers).
smoke() {
    local dir=$CACHE/smoke
    mkdir -p "$dir"
    cat >"$dir/smoke.c" <<'EOF'
/* Links tern's pinned wolfSSL and SQLite and exercises them briefly. */
#include <wolfssl/options.h>
#include <wolfssl/ssl.h>
#include <wolfssl/wolfcrypt/asn_public.h>
#include <wolfssl/wolfcrypt/pwdbased.h>
#include <sqlite3.h>
#include <stdio.h>

/* Functions the daemon relies on; linking them checks the build options.
 * (src/tls/ takes the client identity in the verify callback with the
 * DecodedCert API, so no peer-certificate accessors are needed.) */
static void (*const volatile needed[])(void) = {
    (void (*)(void))wc_InitDecodedCert,
    (void (*)(void))wc_ParseCert,
    (void (*)(void))wc_CertPemToDer,
    (void (*)(void))wc_SetTimeCb,
    (void (*)(void))wolfSSL_SetCertCbCtx,
    (void (*)(void))wolfSSL_CertManagerVerifyBuffer,
    (void (*)(void))wolfSSL_CTX_set_groups,
    (void (*)(void))wolfSSL_CTX_check_private_key,
    (void (*)(void))wolfSSL_get_alert_history,
    (void (*)(void))wc_PBKDF2,
    (void (*)(void))wolfSSL_UseALPN,
};

int main(void)
{
    sqlite3 *db = NULL;
    WOLFSSL_CTX *ctx;
    unsigned char key[32];
    static const unsigned char salt[16] = { 1 };

    for (size_t i = 0; i < sizeof needed / sizeof needed[0]; i++)
        if (needed[i] == NULL)
            return 5;
    if (wolfSSL_Init() != WOLFSSL_SUCCESS)
        return 1;
    ctx = wolfSSL_CTX_new(wolfSSLv23_server_method());
    if (ctx == NULL || wolfSSL_CTX_SetMinVersion(ctx, WOLFSSL_TLSV1_2) != WOLFSSL_SUCCESS)
        return 2;
    wolfSSL_CTX_free(ctx);
    if (wc_PBKDF2(key, (const unsigned char *)"pw", 2, salt, sizeof salt, 1000,
                  sizeof key, WC_SHA256) != 0)
        return 3;
    wolfSSL_Cleanup();
    if (sqlite3_open(":memory:", &db) != SQLITE_OK ||
        sqlite3_exec(db, "CREATE TABLE t(x); INSERT INTO t VALUES (1);", NULL, NULL, NULL) != SQLITE_OK)
        return 4;
    sqlite3_close(db);
    printf("wolfSSL %s, SQLite %s, %zu symbols checked\n", wolfSSL_lib_version(),
           sqlite3_libversion(), sizeof needed / sizeof needed[0]);
    return 0;
}
EOF
    gcc -std=c17 -Wall -Wextra -Werror -O2 -fPIE -pie \
        -isystem "$CACHE/wolfssl/include" -isystem "$CACHE/sqlite" \
        "$dir/smoke.c" "$CACHE/wolfssl/lib/libwolfssl.a" "$CACHE/sqlite/libsqlite3.a" \
        -pthread -o "$dir/smoke"
    "$dir/smoke"
    rm -rf "$dir"
}
step "check: link and run a program using both libraries" "$LOGS/smoke.log" smoke

# -------------------------------------------------------------- finish ------

cat >"$CACHE/deps.mk" <<'EOF'
# Generated by deps/fetch.sh: compile and link against tern's pinned deps.
# Paths are relative to the repository root; build/deps links to the cache.
# Include <wolfssl/options.h> before any other wolfSSL header.
DEPS_DIR        ?= build/deps
WOLFSSL_CPPFLAGS := -isystem $(DEPS_DIR)/wolfssl/include
WOLFSSL_LIBS     := $(DEPS_DIR)/wolfssl/lib/libwolfssl.a
SQLITE_CPPFLAGS  := -isystem $(DEPS_DIR)/sqlite
SQLITE_LIBS      := $(DEPS_DIR)/sqlite/libsqlite3.a
DEPS_LDLIBS      := -pthread
EOF

{
    printf 'tern deps, built %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
    printf 'cache key: %s (lock: %s)\n' "$KEY" "$LOCK"
    printf 'compiler: %s\n\n' "$(gcc --version | head -n 1)"
    for pkg in "${PACKAGES[@]}"; do
        printf '%s %s: %s\n' "$pkg" "${UPSTREAM[$pkg]}" "${USED[$pkg]}"
    done
    printf '\nfiles (sha256):\n'
    (cd "$DL" && for pkg in "${PACKAGES[@]}"; do
        sha256sum "${DSC[$pkg]##*/}"
        sed -n '/^Checksums-Sha256:/,/^[^ ]/{s/^ [0-9a-f]\{64\} [0-9]* //p}' "${DSC[$pkg]}" |
            while read -r f; do sha256sum "$f"; done
    done) | sed 's/^/  /'
    printf '\nwolfSSL configure: %s\n' "${WOLFSSL_CONFIGURE_FLAGS[*]}"
    printf '  CPPFLAGS=%s\n  CFLAGS=%s (make: %s)\n' \
        "$WOLFSSL_CPPFLAGS" "$WOLFSSL_CFLAGS" "$WOLFSSL_MAKE_CFLAGS"
    printf 'SQLite: %s %s\n' "$SQLITE_CFLAGS" "${SQLITE_DEFINES[*]}"
} >"$CACHE/manifest.txt"

printf '%s\n' "$KEY" >"$CACHE/.complete"
link_build
say "done in $((SECONDS - START))s; build/deps -> $CACHE"
