# tests/fuzz/fuzz.mk - libFuzzer targets (SPEC H3): decode (MQTT codec),
# topic (validation and matching), config (config parser), core (the whole
# broker core and the connection layer over the fake transport), journal
# (the core's persistence records and restore), devices (the kernel's ACPI,
# PCI capability and framebuffer parsers), bundle (the unikernel's boot
# bundle), disk (the disk layout's GPT and superblock readers, the store
# VFS's region headers), tdisk (tern-disk's image detection and region
# header reading; the telemetry journal's head, segment and record reader),
# payload (the installer's payload parser), json (src/json's reader and
# writer: console requests come from the network), ws (the WebSocket frame codec
# and opening-request parser, src/conn/ws*.c), record (the TLS 1.3 record
# layer's open path and a handed-over server connection's reading of records,
# src/tls/record.c and conn.c, on wolfCrypt: it links wolfSSL, so it needs
# `make deps`). Included from the top-level Makefile after src/tls/tls.mk,
# which provide CORE_SRC, CSTD, WARN, INC, BUILD and the WOLFSSL_* and
# DEPS_LDLIBS variables.
#
#   make fuzz [FUZZ_SECONDS=60] [FUZZ_TARGETS="decode core"]
#       fuzz each target for FUZZ_SECONDS; new inputs go to
#       $(BUILD)/fuzz/corpus/<target>, crashes to $(BUILD)/fuzz/artifacts/
#   make fuzz-replay
#       replay every checked-in corpus file once under ASan+UBSan (part of
#       make test); with clang the libFuzzer binaries replay it, without
#       clang a gcc build of the same targets with a plain replay driver
#   make fuzz-seeds
#       regenerate the seed files (packets from the codec's encoders, disk
#       images from the layout's writer, records sealed by the record layer);
#       crash reproducers (crash-*) sit next to them and are kept

FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?= decode topic config core journal devices bundle disk tdisk payload json ws \
                record
FUZZ_DIR     := tests/fuzz
FUZZ_OUT     := $(BUILD)/fuzz
FUZZ_CLANG   := $(shell command -v clang 2>/dev/null)

# The store VFS's region header parser (fuzz_disk's mode 4) and its hash;
# tern-disk's pure parsers (fuzz_tdisk).
FUZZ_RGN_SRC := src/platform/kernel/store/region.c src/platform/kernel/rng/sha256.c \
                tools/disk/tern-disk-detect.c

# Code under test plus the daemon's tern_panic (stderr + abort), which is what
# a fuzzer should see when an ALWAYS() invariant breaks.
FUZZ_LIB_SRC := $(CORE_SRC) $(KDISK_SRC) $(FUZZ_RGN_SRC) src/platform/posix/panic.c \
                tests/sim/alloc_track.c tests/unit/fake_transport.c
FUZZ_INC     := $(INC) -Itests
FUZZ_SAN     := -fsanitize=address,undefined -fno-sanitize-recover=all \
                -fno-omit-frame-pointer

ifneq ($(FUZZ_CLANG),)
FUZZ_CC      := clang
FUZZ_CFLAGS  := -O1 -g -fsanitize=fuzzer-no-link $(FUZZ_SAN)
FUZZ_LDFLAGS := -fsanitize=fuzzer $(FUZZ_SAN)
FUZZ_MAIN    :=
else
FUZZ_CC      := gcc
FUZZ_CFLAGS  := -O1 -g $(FUZZ_SAN)
FUZZ_LDFLAGS := $(FUZZ_SAN)
FUZZ_MAIN    := $(FUZZ_DIR)/replay_main.c
endif

# Objects and binaries per compiler, so a clang and a gcc build never mix.
FUZZ_BIN     := $(FUZZ_OUT)/$(FUZZ_CC)
FUZZ_LIB_OBJ := $(patsubst %.c,$(FUZZ_BIN)/obj/%.o,$(FUZZ_LIB_SRC) $(FUZZ_MAIN))
FUZZ_BINS    := $(patsubst %,$(FUZZ_BIN)/fuzz_%,$(FUZZ_TARGETS))

# Objects reached only through pattern rules would count as intermediate
# and be deleted after every build.
.SECONDARY: $(FUZZ_LIB_OBJ) $(patsubst %,$(FUZZ_BIN)/obj/$(FUZZ_DIR)/fuzz_%.o,$(FUZZ_TARGETS))

$(FUZZ_BIN)/obj/%.o: %.c
	@mkdir -p $(@D)
	$(FUZZ_CC) $(CSTD) $(WARN) $(FUZZ_CFLAGS) $(FUZZ_INC) -MMD -MP -c $< -o $@

$(FUZZ_BIN)/fuzz_%: $(FUZZ_BIN)/obj/$(FUZZ_DIR)/fuzz_%.o $(FUZZ_LIB_OBJ)
	$(FUZZ_CC) $(FUZZ_LDFLAGS) $^ -o $@

# fuzz_record: the TLS adapter (src/tls/) built by the fuzzing compiler with
# wolfSSL's headers, linked with the static wolfSSL of `make deps`.
FUZZ_TLS_OBJ := $(patsubst %.c,$(FUZZ_BIN)/obj/%.o,$(sort $(wildcard src/tls/*.c)))
FUZZ_RECORD_OBJ := $(FUZZ_BIN)/obj/$(FUZZ_DIR)/fuzz_record.o
.SECONDARY: $(FUZZ_TLS_OBJ)
$(FUZZ_TLS_OBJ) $(FUZZ_RECORD_OBJ): FUZZ_INC += $(WOLFSSL_CPPFLAGS)
$(FUZZ_TLS_OBJ) $(FUZZ_RECORD_OBJ): $(WOLFSSL_LIBS)

$(FUZZ_BIN)/fuzz_record: $(FUZZ_RECORD_OBJ) $(FUZZ_TLS_OBJ) $(FUZZ_LIB_OBJ) $(WOLFSSL_LIBS)
	$(FUZZ_CC) $(FUZZ_LDFLAGS) $^ $(DEPS_LDLIBS) -o $@

# The seed generator is an ordinary host program built from the codec.
$(FUZZ_OUT)/gen_seeds: $(FUZZ_DIR)/gen_seeds.c $(FUZZ_DIR)/gen_core_seeds.c \
                       $(FUZZ_DIR)/gen_journal_seeds.c $(filter src/mqtt/%,$(CORE_SRC))
	@mkdir -p $(@D)
	gcc $(CSTD) $(WARN) -O1 -g $(FUZZ_INC) $^ src/platform/posix/panic.c -o $@

# fuzz_record's seeds are sealed by the record layer with the target's keys.
$(FUZZ_OUT)/gen_record_seeds: $(FUZZ_DIR)/gen_record_seeds.c src/tls/record.c $(WOLFSSL_LIBS)
	@mkdir -p $(@D)
	gcc $(CSTD) $(WARN) -O1 -g $(FUZZ_INC) $(WOLFSSL_CPPFLAGS) $^ $(DEPS_LDLIBS) -o $@

# fuzz_disk's seeds come from the layout's own writer on a memory disk.
$(FUZZ_OUT)/gen_disk_seeds: $(FUZZ_DIR)/gen_disk_seeds.c tests/unit/mem_disk.c $(KDISK_SRC) \
                           $(FUZZ_RGN_SRC)
	@mkdir -p $(@D)
	gcc $(CSTD) $(WARN) -O1 -g $(FUZZ_INC) $^ -o $@

.PHONY: fuzz fuzz-replay fuzz-seeds fuzz-build

fuzz-build: $(FUZZ_BINS)

fuzz-seeds: $(FUZZ_OUT)/gen_seeds $(FUZZ_OUT)/gen_disk_seeds $(FUZZ_OUT)/gen_record_seeds
	@mkdir -p $(patsubst %,$(FUZZ_DIR)/corpus/%,$(FUZZ_TARGETS))
	$(FUZZ_OUT)/gen_seeds $(FUZZ_DIR)/corpus
	$(FUZZ_OUT)/gen_disk_seeds $(FUZZ_DIR)/corpus
	$(FUZZ_OUT)/gen_record_seeds $(FUZZ_DIR)/corpus

fuzz: $(FUZZ_BINS)
ifeq ($(FUZZ_CLANG),)
	$(error make fuzz needs clang (apt-get install clang libclang-rt-dev))
endif
	@mkdir -p $(FUZZ_OUT)/artifacts
	@set -e; for t in $(FUZZ_TARGETS); do \
	    mkdir -p $(FUZZ_OUT)/corpus/$$t; \
	    dict=$(FUZZ_DIR)/mqtt.dict; [ $$t = config ] && dict=$(FUZZ_DIR)/config.dict; \
	    [ $$t = devices ] && dict=$(FUZZ_DIR)/devices.dict; \
	    [ $$t = bundle ] && dict=$(FUZZ_DIR)/bundle.dict; \
	    [ $$t = disk ] && dict=$(FUZZ_DIR)/disk.dict; \
	    [ $$t = tdisk ] && dict=$(FUZZ_DIR)/disk.dict; \
	    [ $$t = payload ] && dict=$(FUZZ_DIR)/payload.dict; \
	    [ $$t = ws ] && dict=$(FUZZ_DIR)/ws.dict; \
	    [ $$t = record ] && dict=$(FUZZ_DIR)/record.dict; \
	    echo "== fuzz_$$t for $(FUZZ_SECONDS) s"; \
	    $(FUZZ_BIN)/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -dict=$$dict \
	        -print_final_stats=1 -artifact_prefix=$(FUZZ_OUT)/artifacts/$$t- \
	        $(FUZZ_OUT)/corpus/$$t $(FUZZ_DIR)/corpus/$$t; \
	done

# Each corpus file is passed by name: both libFuzzer and replay_main.c run
# every named file once and stop at the first failure.
fuzz-replay: $(FUZZ_BINS)
	@set -e; for t in $(FUZZ_TARGETS); do \
	    n=$$(ls $(FUZZ_DIR)/corpus/$$t | wc -l); \
	    $(FUZZ_BIN)/fuzz_$$t $(FUZZ_DIR)/corpus/$$t/* >$(FUZZ_OUT)/replay-$$t.log 2>&1 \
	        || { cat $(FUZZ_OUT)/replay-$$t.log; echo "fuzz-replay: fuzz_$$t FAILED"; exit 1; }; \
	    echo "fuzz-replay: fuzz_$$t $$n inputs ok"; \
	done

-include $(shell find $(FUZZ_OUT) -name '*.d' 2>/dev/null)
