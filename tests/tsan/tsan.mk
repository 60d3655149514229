# tests/tsan/tsan.mk - the cross-core primitives' stress tests under
# ThreadSanitizer: the rings (src/ring/, tests/tsan/ring_stress.c), the
# kernel's ticket spinlock (src/platform/kernel/arch/x86_64/spinlock.h,
# tests/tsan/spin_stress.c) and the kernel heap behind it
# (src/platform/kernel/mm/kmalloc.c, tests/tsan/heap_stress.c); a TLS
# server context shared by threads (tests/tsan/tls_stress.c); and the
# daemon's I/O threads (tests/tsan/workers_run.sh). Included from the
# top-level Makefile, which provides CSTD, WARN, INC, BUILD and Q.
#
#   make tsan-test   build and run them all (part of make test; the rings take
#                    tens of seconds on a loaded 2-core machine, the TSan
#                    ternd a full build the first time and about a minute)
#   make tsan-workers  only the daemon's
#
# halt_on_error: the first race TSan reports fails the run (exit 66).

TSAN_OUT    := $(BUILD)/tsan
TSAN_CFLAGS := -O1 -g -fsanitize=thread -fno-omit-frame-pointer -pthread

$(TSAN_OUT)/ring-stress: tests/tsan/ring_stress.c src/ring/spsc.h src/ring/mpsc.h
	@mkdir -p $(@D)
	$(if $(Q),@echo "  CC-TSAN $<")
	$(Q)$(CC) $(CSTD) $(WARN) $(TSAN_CFLAGS) $(INC) $< -o $@

$(TSAN_OUT)/spin-stress: tests/tsan/spin_stress.c src/platform/kernel/arch/x86_64/spinlock.h
	@mkdir -p $(@D)
	$(if $(Q),@echo "  CC-TSAN $<")
	$(Q)$(CC) $(CSTD) $(WARN) $(TSAN_CFLAGS) $(INC) $< -o $@

$(TSAN_OUT)/heap-stress: tests/tsan/heap_stress.c src/platform/kernel/mm/kmalloc.c \
                         src/platform/kernel/mm/kmalloc.h src/platform/kernel/arch/x86_64/spinlock.h
	@mkdir -p $(@D)
	$(if $(Q),@echo "  CC-TSAN $<")
	$(Q)$(CC) $(CSTD) $(WARN) $(TSAN_CFLAGS) $(INC) -Isrc/platform/kernel $< -o $@

# One TLS server context shared by threads that run handshakes and records
# while contexts are swapped (reloads): the adapter's reference counts and
# signature cache (ADR-065). Links the TSan objects of src/tls/ (and the
# UTF-8 check identities go through) only.
TSAN_TLS_STRESS_OBJ := $(call obj,tsan,tests/tsan/tls_stress.c tests/unit/test_tls_pair.c \
                                     src/mqtt/utf8.c $(sort $(wildcard src/tls/*.c)))
$(call obj,tsan,tests/tsan/tls_stress.c tests/unit/test_tls_pair.c): INC += $(WOLFSSL_CPPFLAGS) -Itests/unit
$(call obj,tsan,tests/tsan/tls_stress.c tests/unit/test_tls_pair.c): $(WOLFSSL_LIBS)
$(TSAN_OUT)/tls-stress: $(TSAN_TLS_STRESS_OBJ) $(WOLFSSL_LIBS)
	$(if $(Q),@echo "  LD      $@")
	$(Q)$(CC) $(TSAN_CFLAGS) $^ -o $@ $(DEPS_LDLIBS)

.PHONY: tsan-test tsan-tls
tsan-test: $(TSAN_OUT)/ring-stress $(TSAN_OUT)/spin-stress $(TSAN_OUT)/heap-stress \
           $(TSAN_OUT)/tls-stress
	TSAN_OPTIONS=halt_on_error=1 $(TSAN_OUT)/ring-stress
	TSAN_OPTIONS=halt_on_error=1 $(TSAN_OUT)/spin-stress
	TSAN_OPTIONS=halt_on_error=1 $(TSAN_OUT)/heap-stress
	TSAN_OPTIONS=halt_on_error=1 $(TSAN_OUT)/tls-stress
tsan-tls: $(TSAN_OUT)/tls-stress
	TSAN_OPTIONS=halt_on_error=1 $(TSAN_OUT)/tls-stress

# The daemon's threaded loop (workers = N, ADR-061) under ThreadSanitizer:
# the whole ternd built with -fsanitize=thread (wolfSSL and SQLite are
# prebuilt and not instrumented: SQLite is the store thread's; wolfSSL's
# sessions are each one I/O thread's and the contexts they share are
# covered by tls-stress above), then
# tests/tsan/workers_run.sh drives it with tern-bench (plaintext QoS 1
# and QoS 0 floods, mutual-TLS flood and handshakes with certificate
# reloads, at workers = 2 and 4) and shuts it down with clients
# connected; any TSan report fails.
TSAN_TERND_SRC := $(CORE_SRC) $(POSIX_SRC) $(TLS_SRC) $(STORE_SRC)
TSAN_TERND_OBJ := $(call obj,tsan,$(TSAN_TERND_SRC))
$(call obj,tsan,$(TLS_SRC)): INC += $(WOLFSSL_CPPFLAGS)
$(call obj,tsan,$(STORE_SRC)): INC += $(SQLITE_CPPFLAGS)
$(call obj,tsan,$(STORE_SRC)): | $(SQLITE_LIBS)
$(call obj,tsan,$(TLS_SRC)): $(WOLFSSL_LIBS)

$(BUILD)/tsan/%.o: %.c $(WOLF_OPTIONS)
	@mkdir -p $(@D)
	$(if $(Q),@echo "  CC-TSAN $<")
	$(Q)$(CC) $(CSTD) $(WARN) $(TSAN_CFLAGS) $(INC) -MMD -MP -c $< -o $@

$(TSAN_OUT)/ternd: $(TSAN_TERND_OBJ) $(WOLFSSL_LIBS) $(SQLITE_LIBS)
	$(if $(Q),@echo "  LD      $@")
	$(Q)$(CC) $(TSAN_CFLAGS) $^ -o $@

.PHONY: tsan-workers
tsan-workers: $(TSAN_OUT)/ternd $(BUILD)/rel/tern-bench
	tests/tsan/workers_run.sh $(TSAN_OUT)/ternd $(BUILD)/rel/tern-bench

tsan-test: tsan-workers
