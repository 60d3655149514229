# store/sqlite.mk - SQLite (build/deps/sqlite/sqlite3.c, make deps) and the
# daemon's store (src/store, unchanged) compiled into every kernel variant.
# Included by kernel.mk, which adds $(call ksqlite_objs,VARIANT) to each
# variant's link.
#
# Options (the daemon's are in deps/sqlite.sh; those that change behaviour
# are kept: SQLITE_DQS=0, no load extension):
#   SQLITE_OS_OTHER=1          no OS layer: store/ksqlite.c provides
#                              sqlite3_os_init/end, store/kvfs.c the VFS
#   SQLITE_THREADSAFE=0        one store thread; no mutexes
#   SQLITE_OMIT_LOCALTIME      no time zones in the kernel ('localtime' fails)
#   SQLITE_TEMP_STORE=3        temporary tables and statement journals in
#                              memory: the VFS has no temporary files
#   SQLITE_MAX_MMAP_SIZE=0     no memory-mapped I/O
#   SQLITE_OMIT_DESERIALIZE    no in-memory "memdb" VFS: it needs a default
#                              VFS at sqlite3_initialize(), before the disk
#                              is known, and the store does not use it
#   SQLITE_DEFAULT_CACHE_SIZE=-2048   2 MiB of page cache per connection
#                              (the total is bounded by the soft heap limit,
#                              store/ksqlite.c says why)
#   SQLITE_DEFAULT_MEMSTATUS=1 (SQLite's default, kept) the soft heap limit
#                              and ksqlite_memory_used() need the counts
#   SQLITE_OMIT_SHARED_CACHE, SQLITE_OMIT_DEPRECATED, SQLITE_OMIT_PROGRESS_CALLBACK
#                              are NOT set: the store thread may use the
#                              progress handler to yield inside long work.
#
# Floating point: SQLite computes with doubles (REAL values, the query
# planner's cost estimates), so sqlite3.c and src/store are compiled
# without -mgeneral-regs-only, like wolfSSL. This is safe in this kernel:
# arch/x86_64/simd.c enables SSE at boot; interrupt and exception handlers
# are compiled -mgeneral-regs-only and never touch XMM or MXCSR, so code
# they interrupt finds its vector state unchanged; and a cooperative switch
# between the main loop and the store thread happens at a function call,
# where the SysV ABI makes every XMM register caller-saved (the caller has
# already spilled what it needs), so the switch need not save them. MXCSR's
# control bits and the x87 control word are callee-saved in the ABI; the
# thread switch keeps them (or nothing changes them: SQLite does not).
# SQLite's own warnings are not ours to fix (third-party, as lwIP).

KSQLITE_DIR  := $(BUILD)/deps/sqlite
KSQLITE_DEFS := -DSQLITE_OS_OTHER=1 -DSQLITE_THREADSAFE=0 -DSQLITE_DQS=0 \
                -DSQLITE_OMIT_LOAD_EXTENSION=1 -DSQLITE_OMIT_LOCALTIME=1 \
                -DSQLITE_TEMP_STORE=3 -DSQLITE_MAX_MMAP_SIZE=0 -DSQLITE_OMIT_DESERIALIZE=1 \
                -DSQLITE_DEFAULT_CACHE_SIZE=-2048
KSQLITE_CFLAGS := $(filter-out -W% -mgeneral-regs-only -std=%,$(KERNEL_CFLAGS)) -std=gnu17 \
                  -w $(KSQLITE_DEFS)
KSTORE_C     := $(sort $(wildcard src/store/*.c))

ksqlite_objs = $(KBUILD)/$(1)/sqlite/sqlite3.o $(KBUILD)/$(1)/sqlite/cksumvfs.o \
               $(patsubst %.c,$(KBUILD)/$(1)/%.o,$(KSTORE_C))

ifeq ($(wildcard $(KSQLITE_DIR)/sqlite3.c),)
$(KSQLITE_DIR)/sqlite3.c:
	@echo "SQLite sources missing ($(KSQLITE_DIR)): run make deps" >&2; exit 1
endif

# The store (our code: warnings stay errors) with floating point allowed;
# it and the kernel's store directory include <sqlite3.h>.
KSTORE_FP    := $(foreach v,prod test debug,$(KBUILD)/$(v)/src/store/%.o)
KSTORE_USERS := $(foreach v,prod test debug,$(KBUILD)/$(v)/$(KDIR)/store/%.o)
$(KSTORE_FP): KERNEL_CFLAGS := $(filter-out -mgeneral-regs-only,$(KERNEL_CFLAGS)) \
                               -isystem $(KSQLITE_DIR)
$(KSTORE_USERS): KERNEL_CFLAGS += -isystem $(KSQLITE_DIR)

# Each variant: the amalgamation, and SQLite's cksumvfs page-checksum shim
# (layout v3, store/kcksum.h) from the same pinned tree, compiled as it is.
define KSQLITE_VARIANT
$(KBUILD)/$(1)/sqlite/sqlite3.o: $(KSQLITE_DIR)/sqlite3.c
	@mkdir -p $$(@D)
	$$(if $$(Q),@echo "  KCC     sqlite3.c ($(1))")
	$$(Q)$$(CC) $$(KSQLITE_CFLAGS) $$(KVAR_$(1)) -MMD -MP -c $$< -o $$@
$(KBUILD)/$(1)/sqlite/cksumvfs.o: $(KSQLITE_DIR)/src/ext/misc/cksumvfs.c
	@mkdir -p $$(@D)
	$$(if $$(Q),@echo "  KCC     cksumvfs.c ($(1))")
	$$(Q)$$(CC) $$(KSQLITE_CFLAGS) $$(KVAR_$(1)) -DSQLITE_CKSUMVFS_STATIC -I$(KSQLITE_DIR) \
	    -MMD -MP -c $$< -o $$@
endef

$(eval $(call KSQLITE_VARIANT,prod))
$(eval $(call KSQLITE_VARIANT,test))
$(eval $(call KSQLITE_VARIANT,debug))
