# kernel.mk - the unikernel (src/platform/kernel), its ISO and its tests.
# Included by the top-level Makefile, whose CC, WARN, BUILD, Q and PYTHON it
# uses.
#
#   make kernel        build/kernel/tern.elf (production), tern-test.elf
#                      (test hooks, 1 s fatal hold) and tern-debug.elf (as
#                      tern-test.elf, with register dumps in fatal reports);
#                      boot with qemu-system-x86_64 -kernel FILE (PVH)
#   make image         build/tern.iso: GRUB hybrid ISO, BIOS and UEFI, and
#                      build/tern-disk.img (a raw disk image), with the
#                      development configuration and PKI (tools/image/image.mk)
#   make kernel-test   boot tests under QEMU (TCG): PVH, faults, ISO on
#                      SeaBIOS and OVMF, entropy, DHCP and TCP echo, the
#                      broker with MQTT clients, the baked configuration
#
# The kernel compiles lwIP from build/deps/lwip (make deps) into each
# variant, with lwIP's own warnings relaxed: it is third-party code.

KDIR      := src/platform/kernel
KBUILD    := $(BUILD)/kernel
KERNEL_C  := $(sort $(shell find $(KDIR) -name '*.c'))
KERNEL_S  := $(sort $(shell find $(KDIR) -name '*.S'))
KERNEL_LD := $(KDIR)/arch/x86_64/linker.ld
# The portable broker core, codec and config parser, compiled freestanding
# with the kernel's flags and libc (the same sources as the daemon). The
# store (src/store, with SQLite) comes from store/sqlite.mk.
KERNEL_CORE_C := $(sort $(wildcard src/mqtt/*.c src/config/*.c src/broker/*.c src/tls/*.c src/json/*.c src/time/*.c \
                                   src/conn/*.c src/diag/crypto*.c src/diag/handshake*.c \
                                   src/diag/layout*.c))

# lwIP: IPv4, TCP, UDP (for DHCP), ARP, ICMP; configured by net/lwipopts.h.
LWIP_DIR  := $(BUILD)/deps/lwip/src/src
LWIP_C    := $(addprefix $(LWIP_DIR)/core/,def.c inet_chksum.c init.c ip.c mem.c memp.c \
               netif.c pbuf.c sys.c tcp.c tcp_in.c tcp_out.c timeouts.c udp.c) \
             $(addprefix $(LWIP_DIR)/core/ipv4/,dhcp.c etharp.c icmp.c ip4.c ip4_addr.c \
               ip4_frag.c acd.c) \
             $(LWIP_DIR)/netif/ethernet.c

# Freestanding, no SSE (no FPU state to save on traps), global stack
# protector guard (no TLS), no red zone (interrupts use the same stack),
# kernel code model (linked in the top 2 GiB). The loop-pattern option stops
# gcc from compiling libc's loops into calls to memset/memcpy themselves.
KERNEL_CFLAGS := -std=c17 $(WARN) -O2 -g -ffreestanding -fno-pic -fno-pie \
    -mcmodel=kernel -mno-red-zone -mgeneral-regs-only -fno-omit-frame-pointer \
    -fstack-protector-strong -mstack-protector-guard=global \
    -fno-tree-loop-distribute-patterns -fno-asynchronous-unwind-tables \
    -fno-strict-aliasing -nostdinc -isystem $(shell $(CC) -print-file-name=include) \
    -isystem $(KDIR)/libc/include -I$(KDIR) -Isrc -I$(KDIR)/net -I$(LWIP_DIR)/include
# lwIP is built with the same code-generation flags, without -Werror.
KERNEL_LWIP_CFLAGS := $(filter-out -W%,$(KERNEL_CFLAGS)) -w
KERNEL_ASFLAGS := -I$(KDIR) -D__ASSEMBLER__
KERNEL_LDFLAGS := -nostdlib -static -z max-page-size=0x1000 -z noexecstack \
    --no-warn-rwx-segments -T $(KERNEL_LD)

# The early relocator (kaslr_early.c, kaslr_plan.c) runs from the fixed
# boot section before the higher half is mapped: position-independent
# code that reaches only its own section, and no stack protector (its
# guard lives in the higher half).
KERNEL_BOOT_CFLAGS := $(filter-out -mcmodel=kernel -fno-pic -fno-pie -fstack-protector-strong \
                        -mstack-protector-guard=global,$(KERNEL_CFLAGS)) \
    -fpie -mcmodel=small -fvisibility=hidden -fno-stack-protector -fno-jump-tables
KRELOC := tools/kreloc/kreloc.py

# Variants: prod (the shipped kernel), test (self-test hooks, short fatal
# hold), debug (as test, plus register dumps in fatal reports).
KVAR_prod  :=
KVAR_test  := -DTERN_TEST_HOOKS -DTERN_FATAL_HOLD_MS=1000
KVAR_debug := -DTERN_DEBUG -DTERN_TEST_HOOKS -DTERN_FATAL_HOLD_MS=1000

kobjs = $(patsubst %.c,$(KBUILD)/$(1)/%.o,$(KERNEL_C) $(KERNEL_CORE_C)) \
        $(patsubst %.S,$(KBUILD)/$(1)/%.o,$(KERNEL_S)) \
        $(patsubst $(LWIP_DIR)/%.c,$(KBUILD)/$(1)/lwip/%.o,$(LWIP_C)) \
        $(call kwolf_objs,$(1)) $(call ksqlite_objs,$(1))

# wolfSSL (freestanding) and the TLS adapter's flags: crypto/wolfssl.mk.
include $(KDIR)/crypto/wolfssl.mk
# SQLite and the store (src/store): store/sqlite.mk.
include $(KDIR)/store/sqlite.mk

$(LWIP_DIR)/%.c:
	@echo "lwIP sources missing ($(LWIP_DIR)): run make deps" >&2; exit 1

# Every object also depends on the kernel's wolfSSL configuration: the
# files that include wolfSSL's headers (crypto/wolfssl.mk, KWOLF_USERS)
# reach crypto/user_settings.h through a system include directory, which
# -MMD leaves out of the .d files, and a changed option (a struct's
# layout) must not leave them built against the old one. It rarely
# changes, so all are rebuilt rather than a list kept.
define KERNEL_VARIANT
$(KBUILD)/$(1)/%.o: %.c $(KDIR)/crypto/user_settings.h
	@mkdir -p $$(@D)
	$$(if $$(Q),@echo "  KCC     $$< ($(1))")
	$$(Q)$$(CC) $$(KERNEL_CFLAGS) $$(KVAR_$(1)) -MMD -MP -c $$< -o $$@

$(KBUILD)/$(1)/lwip/%.o: $(LWIP_DIR)/%.c
	@mkdir -p $$(@D)
	$$(if $$(Q),@echo "  KCC     $$(notdir $$<) (lwip, $(1))")
	$$(Q)$$(CC) $$(KERNEL_LWIP_CFLAGS) $$(KVAR_$(1)) -MMD -MP -c $$< -o $$@

$(KBUILD)/$(1)/%.o: %.S
	@mkdir -p $$(@D)
	$$(if $$(Q),@echo "  KAS     $$< ($(1))")
	$$(Q)$$(CC) $$(KERNEL_ASFLAGS) $$(KVAR_$(1)) -MMD -MP -c $$< -o $$@

$(KBUILD)/$(1)/$(KDIR)/arch/x86_64/kaslr_early.o $(KBUILD)/$(1)/$(KDIR)/arch/x86_64/kaslr_plan.o: \
    KERNEL_CFLAGS := $$(KERNEL_BOOT_CFLAGS)

# KASLR: a first link keeps its relocations (--emit-relocs); kreloc.py
# turns those into the table the boot code applies (and refuses an image
# with a reference that cannot move); the second link adds the table as
# the last section, where it moves nothing else, and must yield the same
# table; the kept relocations are then dropped from the image, which
# replaces the old one in one rename (a test booting it meanwhile sees one
# or the other).
$(KBUILD)/$(2): $(call kobjs,$(1)) $(KERNEL_LD) $(KRELOC)
	$$(if $$(Q),@echo "  KLD     $$@")
	$$(Q)ld $$(KERNEL_LDFLAGS) --emit-relocs $(call kobjs,$(1)) -o $$@.pass1
	$$(Q)$$(PYTHON) $(KRELOC) $$@.pass1 $$@.kreloc
	$$(Q)cd $$(@D) && objcopy -I binary -O elf64-x86-64 -B i386:x86-64 \
	    --rename-section .data=.kreloc,alloc,load,readonly,data,contents \
	    $$(@F).kreloc $$(@F).kreloc.o
	$$(Q)ld $$(KERNEL_LDFLAGS) --emit-relocs $(call kobjs,$(1)) $$@.kreloc.o -o $$@.pass2
	$$(Q)$$(PYTHON) $(KRELOC) --check $$@.pass2 $$@.kreloc
	$$(Q)objcopy --remove-relocations='*' $$@.pass2 $$@.tmp
	$$(Q)mv -f $$@.tmp $$@ && rm -f $$@.pass1 $$@.pass2 $$@.kreloc.o
endef

$(eval $(call KERNEL_VARIANT,prod,tern.elf))
$(eval $(call KERNEL_VARIANT,test,tern-test.elf))
$(eval $(call KERNEL_VARIANT,debug,tern-debug.elf))

# The image builder and build/tern.iso (the development image).
include tools/image/image.mk

.PHONY: kernel image kernel-test check-kreloc

kernel: $(KBUILD)/tern.elf $(KBUILD)/tern-test.elf $(KBUILD)/tern-debug.elf

image: $(BUILD)/tern.iso $(BUILD)/tern-disk.img

kernel-test: check-kreloc kernel image $(BUILD)/rel/tern-mkdisk $(BUILD)/rel/tern-tele $(BUILD)/rel/tern-disk $(BUILD)/rel/tern-payload \
             $(BUILD)/rel/tern-bench
	$(PYTHON) tests/kernel/run.py --build $(BUILD)

# The relocation table tool's own tests (small images linked here).
check-kreloc:
	$(PYTHON) -m pytest -q -p no:cacheprovider tools/kreloc

# The boot's crypto self-tests also run on the host (tests/unit/test_kkat.c)
# against the hosted wolfSSL build.
$(BUILD)/asan/tests/unit/test_kkat.o: INC += $(WOLFSSL_CPPFLAGS)
$(BUILD)/asan/tests/unit/test_kkat.o: $(WOLFSSL_LIBS)

# The block layer and its drivers' host tests include kernel sources that
# use the kernel's own header paths (dev/..., clock.h, console.h).
$(BUILD)/asan/tests/unit/test_kblk.o: INC += -I$(KDIR)
# The heap's host test includes mm/kmalloc.c, which uses the same paths.
$(BUILD)/asan/tests/unit/test_kmalloc.o: INC += -I$(KDIR)
# KASLR's placement and relocation applier (tests/unit/test_kkaslr.c).
$(BUILD)/asan/tests/unit/test_kkaslr.o: INC += -I$(KDIR)
# The SYN admission's pure half (net/synflow.c) likewise.
$(BUILD)/asan/tests/unit/test_ksynflow.o: INC += -I$(KDIR)
