# tern - top-level build.
#
#   make            build the Linux daemon (build/rel/ternd)
#   make run        set up the machine, build the unikernel image with the dev PKI
#                   and boot it in QEMU (KVM if usable), mTLS on 127.0.0.1:8883
#   make run-diag   as make run, from the ISO's "Diagnostics, then serve" entry: the
#                   diagnostics report (docs/DIAGNOSTICS.md), then the live broker
#   make run-hosted set up the machine, build, run the Linux daemon with the dev config
#   make test       check the tree, set up the machine and dependencies, run every test
#   make check-tree fail if a tracked file matches .gitignore (*.orig, *.rej, *~, ...),
#                   then run check-conformance and check-security
#   make check-security  check docs/SECURITY.md against the tree (every test it cites
#                   exists, every promise names a test or why it has none)
#   make check-conformance  check docs/CONFORMANCE.md against the tree (every tested
#                   row names a test that exists) and the checker's own tests
#   make unit       unit tests under ASan+UBSan
#   make ct-test    the constant-time tests (tests/ct/, dudect-style, about 10 s)
#   make tsan-test  the cross-core rings' stress test under ThreadSanitizer (tests/tsan/),
#                   and the daemon's I/O threads under it (make tsan-workers: a TSan
#                   ternd at workers = 2 and 4 driven by tern-bench)
#   make unit-core  the fast inner loop: the unit tests that need neither wolfSSL nor
#                   SQLite (codec, core, config, kernel-host, platform helpers) under
#                   ASan+UBSan; never builds or fetches dependencies. Add -j2 for speed.
#   make integration  integration tests (real clients) against the ASan daemon
#   make deps       fetch, verify and build the pinned Debian source packages
#   make release    signed reproducible release artifacts in build/release
#                   (MINISIGN_KEY=PATH signs; tools/release/release.mk)
#   make release-check  two clean builds compared byte for byte, the .deb
#                   installed in a Debian 12 chroot (tests/release; slow)
#   make setup      install the host packages the build and tests need, and
#                   MQTT.js (npm ci) for the MQTT 5.0 integration tests
#
# Two build variants share the sources: rel (-O2, hardened) and asan
# (AddressSanitizer + UndefinedBehaviorSanitizer, used by the tests).

.DEFAULT_GOAL := all
.DELETE_ON_ERROR:

BUILD   ?= build
# V=1 shows whole compiler command lines.
Q       := $(if $(V),,@)
CC      := gcc
PYTHON  := /usr/bin/python3

CSTD    := -std=c17
WARN    := -Wall -Wextra -Werror -Wshadow -Wconversion -Wno-sign-conversion \
           -Wstrict-prototypes -Wmissing-prototypes -Wvla
INC     := -Isrc
# -flto: the hot path crosses files (conn.c -> publish.c -> deliver.c ->
# mqtt/encode.c); link-time optimisation inlines across them (about 7% of
# a QoS 1 delivery's instructions, docs/PERFORMANCE.md). ternd's link line
# repeats $(WARN), so what LTO's code generation warns about fails the
# build as a compile would. Change these flags here, not by setting
# REL_LDFLAGS on the make command line: that replaces it, target-specific
# += included, and drops -z relro,now.
REL_CFLAGS  := -O2 -g -fstack-protector-strong -D_FORTIFY_SOURCE=2 -fPIE -flto=auto
ASAN_CFLAGS := -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all \
               -fno-omit-frame-pointer
# Test hooks (e.g. the store's fault injection, storeq.c) exist only in the
# ASan daemon the integration tests run, never in the release build.
TEST_HOOKS   := -DTERN_TEST_HOOKS
REL_LDFLAGS  := -pie -Wl,-z,relro,-z,now
ASAN_LDFLAGS := -fsanitize=address,undefined

# Portable, I/O-free code: the codec, the config parser, the broker core and
# the connection layer (its TLS half, src/conn/tls.c, links with the TLS
# adapter in src/tls/tls.mk, so builds without wolfSSL can use the rest).
CONN_TLS_SRC := src/conn/tls.c src/conn/ws_sha1.c
CORE_SRC  := $(sort $(wildcard src/mqtt/*.c src/config/*.c src/broker/*.c src/json/*.c src/time/*.c) \
                    $(filter-out $(CONN_TLS_SRC),$(wildcard src/conn/*.c)))
# The kernel's disk layout (GPT, superblocks, regions) is portable: unit
# tests, fuzz targets and the image tool build it on the host too. Its
# adapter over the kernel's block layer (blkdisk.c) and the test builds'
# self-test over that (layout_selftest.c) are kernel-only.
KDISK_SRC := $(filter-out %/blkdisk.c %/layout_selftest.c,\
                          $(sort $(wildcard src/platform/kernel/disk/*.c)))
# The Linux daemon's platform layer (main.c holds main()).
POSIX_SRC := $(sort $(wildcard src/platform/posix/*.c))
UNIT_SRC  := $(sort $(wildcard tests/unit/*.c))

obj = $(patsubst %.c,$(BUILD)/$(1)/%.o,$(2))

REL_CORE   := $(call obj,rel,$(CORE_SRC))
REL_POSIX  := $(call obj,rel,$(POSIX_SRC))
ASAN_CORE  := $(call obj,asan,$(CORE_SRC))
ASAN_POSIX := $(call obj,asan,$(POSIX_SRC))
$(ASAN_POSIX): ASAN_CFLAGS += $(TEST_HOOKS)
# The diagnostics dashboard's layout (src/diag/layout*.c): portable, also
# in the kernel and tern-diag-png (tools/diag/diag.mk); unit-tested here.
DIAG_LAYOUT_SRC := src/diag/layout.c src/diag/layout_draw.c
# Unit tests link the core and every platform file except main.c.
ASAN_UNIT  := $(call obj,asan,$(UNIT_SRC) $(KDISK_SRC) $(DIAG_LAYOUT_SRC)) \
              $(filter-out %/main.o,$(ASAN_POSIX))

# wolfSSL's build options (options.h) reach the objects through -isystem,
# which -MMD leaves out of the .d files: after deps/fetch.sh points
# build/deps at a wolfSSL built with other options (struct layouts), every
# object is rebuilt. $(wildcard) keeps make unit-core free of deps.
WOLF_OPTIONS := $(wildcard $(BUILD)/deps/wolfssl/include/wolfssl/options.h)

$(BUILD)/rel/%.o: %.c $(WOLF_OPTIONS)
	@mkdir -p $(@D)
	$(if $(Q),@echo "  CC      $<")
	$(Q)$(CC) $(CSTD) $(WARN) $(REL_CFLAGS) $(INC) -MMD -MP -c $< -o $@

$(BUILD)/asan/%.o: %.c $(WOLF_OPTIONS)
	@mkdir -p $(@D)
	$(if $(Q),@echo "  CC-ASAN $<")
	$(Q)$(CC) $(CSTD) $(WARN) $(ASAN_CFLAGS) $(INC) -MMD -MP -c $< -o $@

$(BUILD)/rel/ternd: $(REL_CORE) $(REL_POSIX)
	$(if $(Q),@echo "  LD      $@")
	$(Q)$(CC) $(WARN) $(REL_CFLAGS) $(REL_LDFLAGS) $^ -o $@

$(BUILD)/asan/ternd: $(ASAN_CORE) $(ASAN_POSIX)
	$(if $(Q),@echo "  LD      $@")
	$(Q)$(CC) $(ASAN_CFLAGS) $(ASAN_LDFLAGS) $^ -o $@

$(BUILD)/asan/unit-tests: $(ASAN_CORE) $(ASAN_UNIT)
	$(if $(Q),@echo "  LD      $@")
	$(Q)$(CC) $(ASAN_CFLAGS) $(ASAN_LDFLAGS) $^ -o $@

# make unit-core: the same test files minus those needing wolfSSL or SQLite
# (a test that needs either must match UNIT_DEPS_SRC). tests/unit/main.c
# runs whatever registered itself, so this is a second link, not a second
# list. Of the daemon's platform files only those with a test here
# (test_posix_NAME.c tests posix/NAME.c) and panic.c are built. Everything
# goes in a (thin) archive, so the linker takes only the members the tests
# use, none of which may need the libraries: nothing here depends on
# `deps`, and a fresh clone builds it in seconds.
# test_conn_tls needs wolfSSL through src/conn/tls.c, test_kkat through crypto/kat.c,
# test_diag_crypto through src/diag/cryptobench.c.
UNIT_DEPS_SRC  := $(filter tests/unit/test_tls_% tests/unit/test_store_% tests/unit/test_kvfs% \
                           tests/unit/test_conn_tls.c tests/unit/test_kkat.c \
                           tests/unit/test_diag_crypto.c,$(UNIT_SRC))
UNIT_CORE_SRC  := $(filter-out $(UNIT_DEPS_SRC),$(UNIT_SRC))
UNIT_CORE_PLAT := $(filter $(patsubst tests/unit/test_posix_%.c,src/platform/posix/%.c,\
                              $(UNIT_CORE_SRC)) src/platform/posix/panic.c,$(POSIX_SRC))

$(BUILD)/asan/unit-core.a: $(ASAN_CORE) $(call obj,asan,$(UNIT_CORE_PLAT) $(KDISK_SRC) \
                                                 $(DIAG_LAYOUT_SRC))
	$(if $(Q),@echo "  AR      $@")
	$(Q)rm -f $@ && ar rcs --thin $@ $^

$(BUILD)/asan/unit-core-tests: $(call obj,asan,$(UNIT_CORE_SRC)) $(BUILD)/asan/unit-core.a
	$(if $(Q),@echo "  LD      $@")
	$(Q)$(CC) $(ASAN_CFLAGS) $(ASAN_LDFLAGS) $^ -o $@

# Components with their own build rules (third-party libraries, test kinds).
include src/tls/tls.mk
include tools/bench/bench.mk
include tools/disk/disk.mk
include tools/diag/diag.mk
include src/store/store.mk
include src/platform/kernel/kernel.mk
include tests/fuzz/fuzz.mk
include tests/sim/sim.mk
include tests/powercut/powercut.mk
include tests/ct/ct.mk
include tests/tsan/tsan.mk
include tools/release/release.mk

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)

.PHONY: all run run-live run-diag run-hosted test unit unit-core integration deps setup clean check-tree \
        check-conformance check-security

all: $(BUILD)/rel/ternd

setup:
	@scripts/setup-host.sh

# deps/fetch.sh prints nothing on a cache hit; build/deps links to the cache.
deps: setup
	@deps/fetch.sh

# make run: the development disk image, created on the first run and kept
# (its data partition survives runs and rebuilds); FRESH=1 starts from an
# empty disk. make run-live: the ISO's live entry, RAM only.
DEV_DISK     := $(BUILD)/run/tern-disk.img
DEV_DISK_MIB := 1024
run: setup deps
	$(MAKE) --no-print-directory $(KBUILD)/tern.elf $(BUILD)/rel/tern-bundle \
	    $(BUILD)/rel/tern-mkdisk $(BUILD)/image/tern.conf
	@mkdir -p $(dir $(DEV_DISK))
	$(if $(FRESH),rm -f $(DEV_DISK))
	$(Q)tools/image/tern-build-image --kernel $(KBUILD)/tern.elf --bundler $(BUILD)/rel/tern-bundle \
	    --mkdisk $(BUILD)/rel/tern-mkdisk --disk $(DEV_DISK_MIB) --keep-data \
	    $(BUILD)/image/tern.conf $(DEV_DISK)
	@scripts/run-image.sh --disk $(DEV_DISK) $(KBUILD)/tern.elf

run-live: setup deps
	$(MAKE) --no-print-directory image
	@scripts/run-image.sh --iso $(BUILD)/tern.iso $(KBUILD)/tern.elf

# make run-diag: the ISO's "Diagnostics, then serve" entry (docs/DIAGNOSTICS.md):
# the report on the console, then the live broker publishing it on
# $SYS/diag/report; tools/diag/run-diag.sh says how.
run-diag: setup deps
	$(MAKE) --no-print-directory $(KBUILD)/tern.elf $(BUILD)/rel/tern-bundle \
	    $(BUILD)/rel/tern-payload $(BUILD)/image/tern.conf $(BUILD)/rel/tern-diag-png
	@tools/diag/run-diag.sh $(BUILD)

run-hosted: setup deps
	$(MAKE) --no-print-directory all
	@scripts/run-dev.sh $(BUILD)/rel/ternd

unit: $(BUILD)/asan/unit-tests
	$(BUILD)/asan/unit-tests

unit-core: $(BUILD)/asan/unit-core-tests
	$(BUILD)/asan/unit-core-tests

# tern-bench: test_bench_kstore drives the disk-store benchmark's driver
# against the daemon (a check of its plumbing and figures, not a timing).
integration: setup deps
	$(MAKE) --no-print-directory $(BUILD)/asan/ternd $(BUILD)/rel/tern-bench
	TERN_BIN=$(abspath $(BUILD)/asan/ternd) $(PYTHON) -m pytest -q tests/integration

# check-tree first: a stray tracked *.orig fails at once, before any build.
test: check-tree setup deps
	$(MAKE) --no-print-directory all $(BUILD)/asan/ternd $(BUILD)/asan/unit-tests
	$(MAKE) --no-print-directory unit
	$(MAKE) --no-print-directory ct-test
	$(MAKE) --no-print-directory tsan-test
	BUILD=$(BUILD) scripts/check-core-symbols.sh
	$(MAKE) --no-print-directory fuzz-replay
	$(MAKE) --no-print-directory tdisk-test
	$(MAKE) --no-print-directory sim-test
	$(MAKE) --no-print-directory integration
	$(MAKE) --no-print-directory torture-test
	$(MAKE) --no-print-directory kernel-test
	$(MAKE) --no-print-directory powercut-test

clean:
	rm -rf $(BUILD)

# No tracked file that .gitignore excludes (*.orig, *.rej, editor swap files);
# and the conformance matrix's and the security promises' claims hold.
check-tree:
	@scripts/check-tree.sh
	@$(MAKE) --no-print-directory check-conformance
	@$(MAKE) --no-print-directory check-security

# docs/SECURITY.md: every test it cites exists, every promise is tested or
# says why not. Standard library only, like check-conformance (whose rule
# for "a test exists" it uses); its own tests only where pytest already is.
check-security:
	@$(PYTHON) tools/security/check.py
	@if $(PYTHON) -c 'import pytest' 2>/dev/null; then \
	    $(PYTHON) -m pytest -q -p no:cacheprovider tools/security; \
	else echo "check-security: the checker's own tests skipped: no pytest yet"; fi

# docs/CONFORMANCE.md: every "tested" row names a test that exists, no row
# binding the server is left without a status or a reason. Python's standard
# library only, no build: cheap enough to run first in make test, before
# make setup has installed pytest, so the checker's own tests run only
# where pytest already is.
check-conformance:
	@$(PYTHON) tools/conformance/check.py
	@if $(PYTHON) -c 'import pytest' 2>/dev/null; then \
	    $(PYTHON) -m pytest -q -p no:cacheprovider tools/conformance; \
	else echo "check-conformance: the checker's own tests skipped: no pytest yet"; fi
