# src/store/store.mk - the SQLite store (SPEC D1, D5, D8), its link into the
# daemon and the unit tests, and the power-cut torture test (SPEC H4).
# Included from the top-level Makefile (anywhere after `obj` and BUILD are
# defined), which provides CC, CSTD, WARN, INC, BUILD, PYTHON and the
# $(BUILD)/{rel,asan}/%.o rules.
#
#   make torture [TORTURE_KILLS=200] [TORTURE_SEED=1]
#       SIGKILL the release daemon at random moments under a durable load and
#       check that every acknowledged message survives each restart
#   make torture-test      the bounded run (~1-2 min, 25 kills) for make test
#   make store-bench       group-commit throughput and commit latency

TORTURE_KILLS ?= 200
TORTURE_SEED  ?= 1
TORTURE_TEST_KILLS := 25

# SQLite comes from `make deps` (deps/sqlite.sh); deps.mk names its files.
# Without it, point at the library anyway so the rule below says what is
# missing instead of a wall of undefined symbols.
-include build/deps/deps.mk
ifeq ($(SQLITE_LIBS),)
SQLITE_CPPFLAGS := -isystem build/deps/sqlite
SQLITE_LIBS     := build/deps/sqlite/libsqlite3.a
endif

STORE_SRC  := $(sort $(wildcard src/store/*.c))
REL_STORE  := $(call obj,rel,$(STORE_SRC))
ASAN_STORE := $(call obj,asan,$(STORE_SRC))

# The store's files and its unit tests include <sqlite3.h>; they wait for the
# library to exist (order-only: a rebuilt library does not recompile them).
$(REL_STORE) $(ASAN_STORE): INC += $(SQLITE_CPPFLAGS)
$(BUILD)/asan/tests/unit/test_store_%.o $(BUILD)/asan/tests/unit/test_kvfs%.o: \
    INC += $(SQLITE_CPPFLAGS)
$(REL_STORE) $(ASAN_STORE): | $(SQLITE_LIBS)
$(BUILD)/asan/tests/unit/test_store_%.o $(BUILD)/asan/tests/unit/test_kvfs%.o: | $(SQLITE_LIBS)

# Extra prerequisites of the lead's link rules: make appends them to $^
# after the objects, so the archive comes last on the link line.
$(BUILD)/rel/ternd: $(REL_STORE) $(SQLITE_LIBS)
$(BUILD)/asan/ternd $(BUILD)/asan/unit-tests: $(ASAN_STORE) $(SQLITE_LIBS)
# The kernel store's page checksums (store/kcksum.h) run under the unit
# tests over the fake disk: SQLite's cksumvfs from the same pinned tree,
# compiled as it is (third-party: its warnings are not ours). Not in ternd:
# the daemon's store keeps its files unchecksummed.
ASAN_CKSUMVFS := $(BUILD)/asan/deps/cksumvfs.o
$(ASAN_CKSUMVFS): | $(SQLITE_LIBS)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CSTD) -w $(ASAN_CFLAGS) $(SQLITE_CPPFLAGS) -DSQLITE_CKSUMVFS_STATIC \
	    -c build/deps/sqlite/src/ext/misc/cksumvfs.c -o $@
$(BUILD)/asan/unit-tests: $(ASAN_CKSUMVFS)
$(BUILD)/rel/ternd: REL_LDFLAGS += -pthread
$(BUILD)/asan/ternd $(BUILD)/asan/unit-tests: ASAN_LDFLAGS += -pthread

$(SQLITE_LIBS):
	@echo "SQLite is not built yet: run 'make deps' (make test does it)" >&2; exit 1

# The store benchmark: a C program over the store alone (no broker, no
# network), so it measures SQLite and the disk.
$(BUILD)/rel/store-bench: $(BUILD)/rel/tests/torture/store_bench.o $(REL_STORE) \
                          $(REL_CORE) $(BUILD)/rel/src/platform/posix/panic.o $(SQLITE_LIBS)
	$(CC) $(REL_CFLAGS) $(REL_LDFLAGS) -pthread $^ -o $@
$(BUILD)/rel/tests/torture/store_bench.o: INC += $(SQLITE_CPPFLAGS)

.PHONY: torture torture-test store-bench

torture: $(BUILD)/rel/ternd
	TERN_BIN=$(abspath $(BUILD)/rel/ternd) $(PYTHON) tests/torture/torture.py \
	    --kills $(TORTURE_KILLS) --seed $(TORTURE_SEED)

torture-test: $(BUILD)/rel/ternd
	TERN_BIN=$(abspath $(BUILD)/rel/ternd) $(PYTHON) tests/torture/torture.py \
	    --kills $(TORTURE_TEST_KILLS) --seed $(TORTURE_SEED)

store-bench: $(BUILD)/rel/store-bench
	$(BUILD)/rel/store-bench --dir $(BUILD)/store-bench
