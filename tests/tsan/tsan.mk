# tests/tsan/tsan.mk - the cross-core primitives' stress tests under
# ThreadSanitizer: the rings (src/ring/, tests/tsan/ring_stress.c) and the
# kernel's ticket spinlock (src/platform/kernel/arch/x86_64/spinlock.h,
# tests/tsan/spin_stress.c) and the kernel heap behind it
# (src/platform/kernel/mm/kmalloc.c, tests/tsan/heap_stress.c). Included from the
# top-level Makefile, which provides CSTD, WARN, INC, BUILD and Q.
#
#   make tsan-test   build and run it (part of make test; tens of seconds
#                    on a loaded 2-core machine)
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

.PHONY: tsan-test
tsan-test: $(TSAN_OUT)/ring-stress $(TSAN_OUT)/spin-stress $(TSAN_OUT)/heap-stress
	TSAN_OPTIONS=halt_on_error=1 $(TSAN_OUT)/ring-stress
	TSAN_OPTIONS=halt_on_error=1 $(TSAN_OUT)/spin-stress
	TSAN_OPTIONS=halt_on_error=1 $(TSAN_OUT)/heap-stress
