# tests/ct/ct.mk - the constant-time tests (SPEC H6, dudect-style: main.c
# says how they judge). Included from the top-level Makefile, which
# provides CSTD, WARN, INC and BUILD.
#
#   make ct-test    build and run them on the host (part of make test;
#                   about 10 s, more on a loaded machine)
#
# The code under test is compiled as the kernel compiles it (-O2, general
# registers only): timing is a property of the machine code, and the
# kernel is where these secrets live. No sanitizers here: they add work
# that depends on the addresses and values touched.

CT_OUT      := $(BUILD)/ct
CT_TEST_SRC := $(sort $(wildcard tests/ct/*.c))
CT_CODE_SRC := src/platform/kernel/rng/sha256.c src/platform/kernel/rng/drbg.c \
               src/broker/hash.c src/broker/ctcmp.c
CT_CFLAGS   := -O2 -g -fno-omit-frame-pointer
CT_OBJ      := $(patsubst %.c,$(CT_OUT)/%.o,$(CT_TEST_SRC) $(CT_CODE_SRC))

$(patsubst %.c,$(CT_OUT)/%.o,$(CT_CODE_SRC)): CT_CFLAGS += -mgeneral-regs-only

$(CT_OUT)/%.o: %.c
	@mkdir -p $(@D)
	$(if $(Q),@echo "  CC-CT   $<")
	$(Q)$(CC) $(CSTD) $(WARN) $(CT_CFLAGS) $(INC) -MMD -MP -c $< -o $@

$(CT_OUT)/ct-tests: $(CT_OBJ)
	$(if $(Q),@echo "  LD      $@")
	$(Q)$(CC) $(CT_CFLAGS) $^ -lm -o $@

.PHONY: ct-test
ct-test: $(CT_OUT)/ct-tests
	$(CT_OUT)/ct-tests
