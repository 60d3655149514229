#!/usr/bin/env bash
# Install the Debian 12 host packages that tern's build and tests need.
#
# Idempotent and fast when everything is already present: it asks dpkg which
# packages are missing and only then runs `apt-get update` and
# `apt-get install`. Runs as root; otherwise through sudo when available;
# otherwise it stops and lists the packages to install by hand.
#
# Called by `make setup` (and therefore by `make test`, `make deps`, `make run`).
# The project's Python is /usr/bin/python3 (Debian's), not a pyenv shim.
#
# Environment:
#   TERN_SETUP_DRY_RUN=1   only print what would be installed.
set -euo pipefail

# What each group is for:
#   build:   gcc make libc6-dev clang libclang-rt-14-dev (clang runtimes for
#            sanitizers and libFuzzer), libpng-dev (tern-diag-png writes the
#            diagnostics dashboard as a PNG)
#   deps/:   dpkg-dev (dpkg-source unpacks and patches the Debian source
#            packages), autoconf automake libtool (wolfSSL's Debian orig tarball
#            ships configure.ac only), tcl (SQLite's amalgamation generator),
#            xz-utils (tarballs), debian-archive-keyring (verifies the trixie
#            source index), ca-certificates
#   tests:   openssl (test PKI), mosquitto mosquitto-clients (reference
#            broker and clients; -V mqttv5), python3 python3-paho-mqtt
#            (1.6.1: MQTTv5 with properties) python3-pytest, nodejs npm
#            (MQTT.js for the 5.0 tests: npm ci in tests/integration/js,
#            see install_mqttjs below; npm only when no npm is on PATH,
#            since a NodeSource nodejs brings its own and conflicts with
#            Debian's), chromium (headless: MQTT.js's browser bundle over
#            listener.ws, tests/integration/test_websocket_browser.py)
#   bench:   jq (reads the load generator's JSON lines), iproute2 (ss: free
#            ports), util-linux (taskset: CPU pinning), valgrind
#            (scripts/callgrind.sh: instructions per message)
#   kernel:  qemu-system-x86 (TCG boots), grub-pc-bin grub-efi-amd64-bin
#            xorriso mtools (the hybrid ISO), ovmf (UEFI firmware for tests),
#            qemu-utils (qemu-io: the power-cut backend's self-tests),
#            gdisk fdisk (sgdisk and fdisk check the disk image tool's GPT;
#            sfdisk reads it back for tern-build-image --keep-data)
#   release: minisign (signs and verifies SHA256SUMS), lintian (checks the
#            .deb), debootstrap (the Debian 12 root the .deb is installed
#            into), systemd-container (systemd-nspawn boots that root with
#            systemd, which starts the .deb's unit), binutils (strip),
#            faketime (grub-mkrescue stamps the ISO with the current time:
#            tools/image/mkiso.sh); dpkg-dev above builds the .deb
#            (make release, make release-check: docs/RELEASING.md)
PACKAGES=(
    gcc make libc6-dev clang libclang-rt-14-dev libpng-dev
    dpkg-dev autoconf automake libtool tcl xz-utils
    debian-archive-keyring ca-certificates
    openssl mosquitto mosquitto-clients
    python3 python3-paho-mqtt python3-pytest chromium
    qemu-system-x86 qemu-utils grub-pc-bin grub-efi-amd64-bin xorriso mtools ovmf gdisk fdisk
    jq iproute2 util-linux valgrind
    minisign lintian debootstrap systemd-container binutils faketime
)
command -v npm >/dev/null 2>&1 || PACKAGES+=(nodejs npm)

die() { printf 'setup-host: error: %s\n' "$*" >&2; exit 1; }

# MQTT.js for the MQTT 5.0 integration tests: the exact versions of
# tests/integration/js/package-lock.json into its node_modules (ignored by
# git). Skipped when the installed tree is newer than the lock file.
install_mqttjs() {
    local js
    js=$(cd "$(dirname "${BASH_SOURCE[0]}")/../tests/integration/js" && pwd)
    if [[ -f $js/node_modules/.package-lock.json &&
          $js/node_modules/.package-lock.json -nt $js/package-lock.json ]]; then
        return 0
    fi
    echo "setup-host: npm ci in $js (MQTT.js)"
    (cd "$js" && npm ci --no-audit --no-fund --loglevel=error >/dev/null) ||
        die "npm ci failed in $js (network or npm registry?)"
}

# Warn (without touching it) when something already listens on TCP port 1883,
# typically a system mosquitto started by systemd after its package was
# installed. Reads /proc so it needs no extra tool.
check_port_1883() {
    local f
    for f in /proc/net/tcp /proc/net/tcp6; do
        [[ -r $f ]] || continue
        # Field 2 is local_address as HEXIP:HEXPORT, field 4 the state (0A = LISTEN).
        if awk 'NR > 1 && $4 == "0A" && $2 ~ /:075B$/ { found = 1 } END { exit !found }' "$f"; then
            printf 'setup-host: note: a process already listens on TCP port 1883 (a system mosquitto service?).\n' >&2
            printf 'setup-host: note: it was left running; tern tests pick their own ports.\n' >&2
            return 0
        fi
    done
}

command -v dpkg-query >/dev/null 2>&1 || die "dpkg-query not found: this script supports Debian 12 (bookworm) only"

# dpkg-query prints one line per package it knows; packages it has never seen
# are reported on stderr and simply produce no line.
declare -A installed=()
while read -r name status; do
    [[ $status == installed ]] && installed[$name]=1
done < <(dpkg-query -W -f='${Package} ${db:Status-Status}\n' "${PACKAGES[@]}" 2>/dev/null || true)

missing=()
for p in "${PACKAGES[@]}"; do
    [[ -n ${installed[$p]:-} ]] || missing+=("$p")
done

if ((${#missing[@]} == 0)); then
    check_port_1883
    [[ ${TERN_SETUP_DRY_RUN:-} == 1 ]] || install_mqttjs
    exit 0
fi

if [[ ${TERN_SETUP_DRY_RUN:-} == 1 ]]; then
    echo "setup-host: would install ${missing[*]} and MQTT.js (dry run)"
    exit 0
fi

if ((EUID == 0)); then
    SUDO=()
elif command -v sudo >/dev/null 2>&1; then
    SUDO=(sudo)
else
    die "not root and sudo is not installed; as root, run:
  apt-get update && apt-get install -y --no-install-recommends ${missing[*]}"
fi

echo "setup-host: installing ${missing[*]}"
# Wait for another apt/dpkg run (e.g. a parallel setup) instead of failing.
APT_OPTS=(-q -o DPkg::Lock::Timeout=300)
"${SUDO[@]}" apt-get "${APT_OPTS[@]}" update >/dev/null ||
    die "apt-get update failed (network or apt sources?)"
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive DEBCONF_NOWARNINGS=yes \
    apt-get "${APT_OPTS[@]}" install -y --no-install-recommends "${missing[@]}" >/dev/null ||
    die "apt-get install failed for: ${missing[*]}"

check_port_1883
install_mqttjs
echo "setup-host: done"
