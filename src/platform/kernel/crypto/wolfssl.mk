# crypto/wolfssl.mk - wolfSSL compiled freestanding into the kernel, and the
# TLS adapter (src/tls, the daemon's own) compiled with the kernel's flags.
# Included by kernel.mk, which adds $(call kwolf_objs,VARIANT) to each
# kernel variant's link.
#
# wolfSSL comes from the Debian source tree `make deps` unpacks
# (build/deps/wolfssl/src); its configuration is crypto/user_settings.h.
# It is third-party code: compiled with the kernel's code-generation flags
# (kernel code model, no red zone, strong stack protector with the global
# guard) but without -Werror, and, unlike the kernel's own code, with SSE
# allowed: the kernel enables SSE/AVX at boot (arch/x86_64/simd.c) and no
# interrupt handler touches vector registers, so nothing needs saving.

KWOLF_DIR := $(BUILD)/deps/wolfssl/src
KWOLF_C   := $(addprefix $(KWOLF_DIR)/src/,internal.c keys.c ssl.c tls.c tls13.c wolfio.c) \
             $(addprefix $(KWOLF_DIR)/wolfcrypt/src/,aes.c asn.c chacha.c chacha20_poly1305.c \
               coding.c cpuid.c curve25519.c ecc.c error.c hash.c hmac.c kdf.c logging.c \
               memory.c poly1305.c pwdbased.c random.c sha.c sha256.c sha512.c signature.c sp_int.c \
               sp_x86_64.c wc_encrypt.c wc_port.c wolfmath.c)
KWOLF_S   := $(addprefix $(KWOLF_DIR)/wolfcrypt/src/,aes_asm.S aes_gcm_asm.S chacha_asm.S \
               fe_x25519_asm.S poly1305_asm.S sha256_asm.S sha512_asm.S sp_x86_64_asm.S)

# Everything that includes a wolfSSL header sees the same settings.
KWOLF_INC := -DWOLFSSL_USER_SETTINGS -I$(KDIR)/crypto -isystem $(KWOLF_DIR)

# -mgeneral-regs-only off (SSE allowed), warnings off; AES-NI intrinsics
# in aes.c need -maes.
KWOLF_CFLAGS := $(filter-out -W% -mgeneral-regs-only -std=%,$(KERNEL_CFLAGS)) -std=gnu17 \
                -Werror=implicit-function-declaration -Werror=implicit-int $(KWOLF_INC) \
                -maes
KWOLF_ASFLAGS := $(KWOLF_INC) -D__ASSEMBLER__ -DWOLFSSL_X86_64_BUILD  # aes_asm.S reads no settings

kwolf_objs = $(patsubst $(KWOLF_DIR)/%.c,$(KBUILD)/$(1)/wolfssl/%.o,$(KWOLF_C)) \
             $(patsubst $(KWOLF_DIR)/%.S,$(KBUILD)/$(1)/wolfssl/%.o,$(KWOLF_S))

# Without the sources a clear message (only then: a catch-all rule would
# also claim the .c twin of every .S file).
ifeq ($(wildcard $(KWOLF_DIR)/src/ssl.c),)
$(KWOLF_DIR)/%.c $(KWOLF_DIR)/%.S:
	@echo "wolfSSL sources missing ($(KWOLF_DIR)): run make deps" >&2; exit 1
endif

# The adapter, the kernel's crypto glue and the diagnostics' crypto
# measurements (src/diag/crypto*.c, handshake*.c) and the WebSocket accept
# key's SHA-1 (src/conn/ws_sha1.c) include wolfSSL headers.
KWOLF_USERS := $(foreach v,prod test debug,$(KBUILD)/$(v)/src/tls/%.o \
                 $(KBUILD)/$(v)/$(KDIR)/crypto/%.o $(KBUILD)/$(v)/src/diag/crypto%.o \
                 $(KBUILD)/$(v)/src/diag/handshake%.o $(KBUILD)/$(v)/src/conn/ws_sha1.o)
$(KWOLF_USERS): KERNEL_CFLAGS += $(KWOLF_INC)

define KWOLF_VARIANT
$(KBUILD)/$(1)/wolfssl/%.o: $(KWOLF_DIR)/%.c $(KDIR)/crypto/user_settings.h
	@mkdir -p $$(@D)
	$$(if $$(Q),@echo "  KCC     $$(notdir $$<) (wolfssl, $(1))")
	$$(Q)$$(CC) $$(KWOLF_CFLAGS) $$(KVAR_$(1)) -MMD -MP -c $$< -o $$@

$(KBUILD)/$(1)/wolfssl/%.o: $(KWOLF_DIR)/%.S $(KDIR)/crypto/user_settings.h
	@mkdir -p $$(@D)
	$$(if $$(Q),@echo "  KAS     $$(notdir $$<) (wolfssl, $(1))")
	$$(Q)$$(CC) $$(KWOLF_ASFLAGS) $$(KVAR_$(1)) -MMD -MP -c $$< -o $$@
endef

$(eval $(call KWOLF_VARIANT,prod))
$(eval $(call KWOLF_VARIANT,test))
$(eval $(call KWOLF_VARIANT,debug))
