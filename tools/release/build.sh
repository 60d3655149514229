#!/usr/bin/env bash
# tools/release/build.sh BUILD - `make release`: the release artifacts of the
# checked-out commit in BUILD/release (docs/RELEASING.md):
#
#   tern-V.iso, tern-V-disk.img   the unikernel's evaluation images (ISO and
#                                 raw disk image; tools/release/image/tern.conf)
#   ternd_DV_amd64.deb            the daemon as a Debian package (tools/release/deb)
#   tern-V.tar.gz                 the source: git archive of the commit (deps/lock
#                                 included)
#   ARTIFACT.spdx.json            an SPDX 2.3 SBOM per artifact (sbom.py)
#   SHA256SUMS, SHA256SUMS.minisig  the checksums, signed with MINISIGN_KEY
#
# V is src/version.h's TERN_VERSION, DV its Debian form ('-' becomes '~').
# Reproducible: every timestamp is the commit's (SOURCE_DATE_EPOCH), the
# objects are built in BUILD/release-work with -ffile-prefix-map (no build
# path), archives have sorted names, owner 0 and fixed modes, the images'
# ids come from the version and commit (TERN_IMAGE_SEED). Two clones of one
# commit give identical bytes (tests/release/test_release.py checks).
#
# Environment: MINISIGN_KEY=PATH signs SHA256SUMS (minisign asks for the
# key's password when it has one); without it the release is unsigned and
# this says so. RELEASE_ALLOW_DIRTY=1 builds from a tree with uncommitted
# changes (the artifacts then are not the commit's; for working on this
# script only).
set -euo pipefail

build=${1:?usage: tools/release/build.sh BUILD}
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
here=tools/release
out=$build/release
work=$build/release-work
say() { printf 'release: %s\n' "$*"; }
die() { printf 'release: %s\n' "$*" >&2; exit 1; }

for tool in git dpkg-deb dpkg-shlibdeps gzip xz sha256sum strip; do
    command -v "$tool" >/dev/null || die "$tool missing (scripts/setup-host.sh installs it)"
done
if [[ -n $(git status --porcelain --untracked-files=no) ]]; then
    [[ ${RELEASE_ALLOW_DIRTY:-} == 1 ]] ||
        die "the tree has uncommitted changes: commit them (a release is a commit), or RELEASE_ALLOW_DIRTY=1"
    say "WARNING: uncommitted changes: these artifacts are NOT the commit's"
fi

commit=$(git rev-parse HEAD)
SOURCE_DATE_EPOCH=$(git log -1 --format=%ct HEAD)
export SOURCE_DATE_EPOCH
export TZ=UTC LC_ALL=C.UTF-8
umask 022
version=$(sed -n 's/^#define TERN_VERSION "\(.*\)"$/\1/p' src/version.h)
[[ $version =~ ^[0-9][0-9A-Za-z.+~-]*$ ]] || die "src/version.h: no usable TERN_VERSION ('$version')"
debversion=${version//-/\~}
say "tern $version (Debian $debversion), commit $commit, SOURCE_DATE_EPOCH $SOURCE_DATE_EPOCH"

rm -rf "$out" "$work/stage"
mkdir -p "$out" "$work/stage"
# The release's objects have their own tree (flags differ: -ffile-prefix-map)
# with the same dependency cache as BUILD.
[[ -e $build/deps/manifest.txt ]] || die "$build/deps missing: make deps"
ln -sfn "$(readlink -f "$build/deps")" "$work/deps"
nice make --no-print-directory -j"${RELEASE_JOBS:-2}" BUILD="$work" TERN_RELEASE=1 \
    "$work/rel/ternd" "$work/kernel/tern.elf" "$work/rel/tern-bundle" \
    "$work/rel/tern-payload" "$work/rel/tern-mkdisk"

# --- the unikernel's evaluation images ---------------------------------------
export TERN_IMAGE_SEED="tern $version $commit"
images=(--kernel "$work/kernel/tern.elf" --bundler "$work/rel/tern-bundle")
tools/image/tern-build-image "${images[@]}" --payload "$work/rel/tern-payload" \
    $here/image/tern.conf "$out/tern-$version.iso"
tools/image/tern-build-image "${images[@]}" --mkdisk "$work/rel/tern-mkdisk" --disk 256 \
    $here/image/tern.conf "$out/tern-$version-disk.img"
# No secret in them (tern.conf has no key): readable by all, like any download.
chmod 644 "$out/tern-$version.iso" "$out/tern-$version-disk.img"

# --- the Debian package -------------------------------------------------------
deb=$work/stage/deb
install -d "$deb/DEBIAN" "$deb/usr/sbin" "$deb/lib/systemd/system" "$deb/etc/tern/tls" \
    "$deb/usr/share/doc/ternd" "$deb/usr/share/man/man8"
install -m 755 "$work/rel/ternd" "$deb/usr/sbin/ternd"
strip --remove-section=.comment --remove-section=.note "$deb/usr/sbin/ternd"
install -m 644 $here/deb/ternd.service "$deb/lib/systemd/system/ternd.service"
install -m 644 $here/deb/tern.conf "$deb/etc/tern/tern.conf"
install -m 644 $here/deb/README.Debian "$deb/usr/share/doc/ternd/"
# The copyright file names the linked packages' versions from deps/lock
# (its one source): @PACKAGE.upstream@ and @PACKAGE.debian@.
lock_subst=$(awk '!/^#/ && NF == 5 && !seen[$1]++ {
    printf "s/@%s\\.upstream@/%s/g;s/@%s\\.debian@/%s/g;", $1, $2, $1, $3 }' deps/lock)
sed -e "$lock_subst" $here/deb/copyright >"$deb/usr/share/doc/ternd/copyright"
! grep -n '@[a-z0-9]*\.[a-z]*@' "$deb/usr/share/doc/ternd/copyright" ||
    die "$here/deb/copyright: a placeholder above names no package of deps/lock"
chmod 644 "$deb/usr/share/doc/ternd/copyright"
for doc in CONFIG OPERATIONS; do
    gzip -n -9 <"docs/$doc.md" >"$deb/usr/share/doc/ternd/$doc.md.gz"
done
gzip -n -9 <$here/deb/ternd.8 >"$deb/usr/share/man/man8/ternd.8.gz"
# A native package's changelog: one entry for this version, dated by the commit.
{
    printf 'ternd (%s) unstable; urgency=medium\n\n' "$debversion"
    printf '  * tern %s, commit %s.\n\n' "$version" "$commit"
    printf ' -- tern maintainers <maintainers@tern.invalid>  %s\n' \
        "$(date -u -R -d "@$SOURCE_DATE_EPOCH")"
} | gzip -n -9 >"$deb/usr/share/doc/ternd/changelog.gz"
for script in postinst prerm postrm; do
    install -m 755 "$here/deb/$script" "$deb/DEBIAN/$script"
done
echo /etc/tern/tern.conf >"$deb/DEBIAN/conffiles"
chmod 644 "$deb/DEBIAN/conffiles"
# Depends: what the binary's dynamic links need (dpkg-shlibdeps reads a
# debian/control; a throwaway one in the staging directory), and adduser
# for the postinst.
mkdir -p "$work/stage/shlibs/debian"
printf 'Source: ternd\n\nPackage: ternd\nArchitecture: amd64\n' >"$work/stage/shlibs/debian/control"
ternd_abs=$(readlink -f "$deb/usr/sbin/ternd")
shlibs=$(cd "$work/stage/shlibs" && dpkg-shlibdeps -O "$ternd_abs" |
    sed -n 's/^shlibs:Depends=//p')
[[ -n $shlibs ]] || die "dpkg-shlibdeps found no dependencies for ternd"
# Installed-Size in KiB, counted from the files (not du: that depends on
# the file system).
installed=$(find "$deb" -path "$deb/DEBIAN" -prune -o -type f -printf '%s\n' |
    awk '{ k += int(($1 + 1023) / 1024) } END { print k + 0 }')
cat >"$deb/DEBIAN/control" <<EOF
Package: ternd
Version: $debversion
Architecture: amd64
Maintainer: tern maintainers <maintainers@tern.invalid>
Installed-Size: $installed
Depends: $shlibs, adduser
Section: net
Priority: optional
Description: MQTT broker over mutually authenticated TLS
 tern is an MQTT 3.1, 3.1.1 and 5.0 broker that serves clients over
 mutual TLS 1.3 (and optional plaintext and WebSocket listeners), with
 QoS 0, 1 and 2, retained messages and persistent sessions kept in SQLite,
 ACLs and password files in Mosquitto's formats, bridges to other brokers
 and an operator role observed over MQTT.
 .
 This package runs the broker as the systemd service ternd; it starts once
 certificates are configured (see /usr/share/doc/ternd/README.Debian).
EOF
chmod 644 "$deb/DEBIAN/control"
(cd "$deb" && find . -path ./DEBIAN -prune -o -path ./etc -prune -o -type f -printf '%P\n' | sort |
    xargs md5sum >DEBIAN/md5sums)
chmod 644 "$deb/DEBIAN/md5sums"
find "$deb" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
debfile=$out/ternd_${debversion}_amd64.deb
dpkg-deb --root-owner-group -Zxz --build "$deb" "$debfile" >/dev/null
if command -v lintian >/dev/null; then
    say "lintian $debfile"
    lintian --fail-on error,warning "$debfile" || die "lintian found errors or warnings"
else
    say "WARNING: lintian missing: the package is not checked"
fi

# --- the source ----------------------------------------------------------------
git archive --format=tar --prefix="tern-$version/" "$commit" | gzip -n -9 >"$out/tern-$version.tar.gz"

# --- SBOMs, checksums, signature ----------------------------------------------
# glibc etc.: the .deb's runtime dependencies, with the versions the
# build machine had (dpkg-shlibdeps' lower bounds are in Depends).
python3 $here/sbom.py --lock deps/lock --version "$version" --commit "$commit" \
    --epoch "$SOURCE_DATE_EPOCH" --out "$out" \
    --image "tern-$version.iso" --image "tern-$version-disk.img" \
    --deb "$(basename "$debfile")" --deb-depends "$shlibs" \
    --source "tern-$version.tar.gz"
(cd "$out" && find . -maxdepth 1 -type f ! -name 'SHA256SUMS*' -printf '%P\n' | sort |
    xargs sha256sum >SHA256SUMS)
if [[ -n ${MINISIGN_KEY:-} ]]; then
    [[ -r $MINISIGN_KEY ]] || die "MINISIGN_KEY=$MINISIGN_KEY: not a readable file"
    command -v minisign >/dev/null || die "minisign missing (apt-get install minisign)"
    # The trusted comment names the release instead of minisign's default
    # timestamp, so the signature is reproducible too (Ed25519 is deterministic).
    minisign -S -s "$MINISIGN_KEY" -m "$out/SHA256SUMS" -x "$out/SHA256SUMS.minisig" \
        -c "tern $version release checksums" -t "tern $version commit $commit"
    say "signed: $out/SHA256SUMS.minisig"
else
    cat >&2 <<'EOF'
release: ************************************************************
release: *  UNSIGNED: no MINISIGN_KEY given, no SHA256SUMS.minisig.  *
release: *  Do not publish these artifacts; sign with                *
release: *    make release MINISIGN_KEY=/path/to/minisign.key        *
release: ************************************************************
EOF
fi
say "done: $out"
(cd "$out" && ls -l)
