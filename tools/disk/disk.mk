# tools/disk/disk.mk - host tools over the kernel's disk layout code
# (src/platform/kernel/disk, KDISK_SRC in the top-level Makefile).
# Included by the top-level Makefile.
#
#   build/rel/tern-mkdisk   partition a raw image: GPT, ESP, blank tern
#                           data partition (tern-mkdisk.c says how)
#   build/rel/tern-disk     inspect and verify a disk, block device or
#                           partition image (tern-disk.c says how)
#   make tdisk-test         tern-disk's tests (tests/tools/)

$(BUILD)/rel/tern-mkdisk: $(BUILD)/rel/tools/disk/tern-mkdisk.o $(call obj,rel,$(KDISK_SRC))
	$(if $(Q),@echo "  LD      $@")
	$(Q)$(CC) $(REL_CFLAGS) $(REL_LDFLAGS) $^ -o $@

# build/rel/tern-disk (and build/asan/tern-disk for the tests): inspect and
# verify a disk, block device or partition image (tern-disk.c says how).
# It links the kernel's layout code and its store VFS (kvfs) unchanged,
# with SQLite from `make deps`.
TDISK_SRC  := $(sort $(wildcard tools/disk/tern-disk*.c)) \
              src/platform/kernel/store/region.c src/platform/kernel/store/kvfs.c \
              src/platform/kernel/store/kvfs_io.c src/platform/kernel/rng/sha256.c
TDISK_SQL  := $(sort $(wildcard tools/disk/tern-disk-db.c tools/disk/tern-disk-migrate*.c)) \
              src/platform/kernel/store/kvfs.c src/platform/kernel/store/kvfs_io.c
$(call obj,rel,$(TDISK_SQL)) $(call obj,asan,$(TDISK_SQL)): INC += $(SQLITE_CPPFLAGS)
$(call obj,rel,$(TDISK_SQL)) $(call obj,asan,$(TDISK_SQL)): | $(SQLITE_LIBS)

# SQLite's checksum VFS shim from the pinned source (third-party: its own
# warnings are not ours), linked in statically.
CKSUMVFS_SRC := build/deps/sqlite/src/ext/misc/cksumvfs.c
$(BUILD)/rel/cksumvfs.o $(BUILD)/asan/cksumvfs.o: | $(SQLITE_LIBS)
$(BUILD)/rel/cksumvfs.o: $(CKSUMVFS_SRC)
	@mkdir -p $(@D)
	$(if $(Q),@echo "  CC      $<")
	$(Q)$(CC) $(REL_CFLAGS) -w -DSQLITE_CKSUMVFS_STATIC $(SQLITE_CPPFLAGS) -c $< -o $@
$(BUILD)/asan/cksumvfs.o: $(CKSUMVFS_SRC)
	@mkdir -p $(@D)
	$(if $(Q),@echo "  CC-ASAN $<")
	$(Q)$(CC) $(ASAN_CFLAGS) -w -DSQLITE_CKSUMVFS_STATIC $(SQLITE_CPPFLAGS) -c $< -o $@

$(BUILD)/rel/tern-disk: $(call obj,rel,$(TDISK_SRC) $(KDISK_SRC)) $(BUILD)/rel/cksumvfs.o \
                        $(SQLITE_LIBS)
	$(if $(Q),@echo "  LD      $@")
	$(Q)$(CC) $(REL_CFLAGS) $(REL_LDFLAGS) $^ -pthread -lm -o $@

$(BUILD)/asan/tern-disk: $(call obj,asan,$(TDISK_SRC) $(KDISK_SRC)) $(BUILD)/asan/cksumvfs.o \
                         $(SQLITE_LIBS)
	$(if $(Q),@echo "  LD      $@")
	$(Q)$(CC) $(ASAN_CFLAGS) $(ASAN_LDFLAGS) $^ -pthread -lm -o $@

# The tests' programs (tests/tools/): the image maker (tdisk_fixture.c)
# and the migration's cut harness (tdisk_migrate_cuts.c, over the unit
# tests' fake disk); both fill a disk through the kernel's layout code,
# kvfs and the daemon's store (tdisk_populate.c).
TDISK_LIB_SRC := $(filter-out tools/disk/tern-disk.c,$(TDISK_SRC))
TDISK_TEST_OBJ := $(call obj,asan,$(TDISK_LIB_SRC) $(KDISK_SRC) tests/tools/tdisk_populate.c \
                    src/platform/posix/panic.c) $(BUILD)/asan/cksumvfs.o \
                  $(call obj,asan,$(sort $(wildcard src/store/*.c))) $(ASAN_CORE) $(SQLITE_LIBS)
$(BUILD)/asan/tests/tools/%.o: INC += $(SQLITE_CPPFLAGS)
$(BUILD)/asan/tests/tools/%.o: | $(SQLITE_LIBS)
$(BUILD)/asan/tdisk-fixture: $(BUILD)/asan/tests/tools/tdisk_fixture.o $(TDISK_TEST_OBJ)
	$(if $(Q),@echo "  LD      $@")
	$(Q)$(CC) $(ASAN_CFLAGS) $(ASAN_LDFLAGS) $^ -pthread -lm -o $@
$(BUILD)/asan/tdisk-migrate-cuts: $(BUILD)/asan/tests/tools/tdisk_migrate_cuts.o \
                                  $(BUILD)/asan/tests/unit/fake_blk.o $(TDISK_TEST_OBJ)
	$(if $(Q),@echo "  LD      $@")
	$(Q)$(CC) $(ASAN_CFLAGS) $(ASAN_LDFLAGS) $^ -pthread -lm -o $@

# make tdisk-test: tern-disk on images the fixture makes and damages
# (tests/tools/test_tern_disk.py; ~20 s). Part of make test.
.PHONY: tdisk-test
tdisk-test: $(BUILD)/asan/tern-disk $(BUILD)/asan/tdisk-fixture $(BUILD)/rel/tern-mkdisk \
            $(BUILD)/asan/tdisk-migrate-cuts
	TERN_BUILD=$(BUILD) $(PYTHON) -m pytest -q tests/tools/test_tern_disk.py
	$(BUILD)/asan/tdisk-migrate-cuts

# The kernel tests' harness and the power-cut harness run `tern-disk verify`
# on every disk image they leave (tests/kernel/harness.py, scratch();
# tests/powercut/run.py, after each cut).
kernel-test powercut powercut-test: $(BUILD)/rel/tern-disk

#   build/rel/tern-tele     print a disk image's telemetry journal (tern-tele.c)
$(BUILD)/rel/tern-tele: $(BUILD)/rel/tools/disk/tern-tele.o $(call obj,rel,$(KDISK_SRC))
	$(if $(Q),@echo "  LD      $@")
	$(Q)$(CC) $(REL_CFLAGS) $(REL_LDFLAGS) $^ -o $@
