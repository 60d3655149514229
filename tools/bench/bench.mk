# tools/bench/bench.mk - the load generator (SPEC F1) and `make bench`.
#
# Included from the top-level Makefile after src/tls/tls.mk
# (include tools/bench/bench.mk), whose CC, CSTD, WARN, REL_CFLAGS,
# REL_LDFLAGS and BUILD it uses; tls.mk's rule explains a missing wolfSSL.
#
#   make build/rel/tern-bench   the load generator (needs `make deps`: wolfSSL)
#   make bench                  install what it needs (make setup deps), run every
#                               scenario against tern and mosquitto, write
#                               build/bench/*.jsonl, refresh docs/PERFORMANCE.md
#   BENCH_QUICK=1 make bench    a smoke run of a couple of minutes
#   BENCH_CASES="flood-q1-64" BENCH_QUICK=1 BENCH_NO_REPORT=1 make bench
#                               one case, quickly, docs untouched (iteration)
#   make bench-kstore           durable QoS 1 through the unikernel (QEMU, a
#                               virtio disk) and the daemon with a store, and a
#                               bystander's QoS 0 latency with and without it
#                               (tools/bench/kstore.py; BENCH_QUICK=1 for a
#                               smoke run, BENCH_KSTORE_ARGS for its options)

-include $(BUILD)/deps/deps.mk

BENCH_SRC := $(sort $(wildcard tools/bench/*.c))
BENCH_OBJ := $(patsubst %.c,$(BUILD)/rel/%.o,$(BENCH_SRC))
# The tool links the codec itself: the encoders and the server-side decoder.
BENCH_MQTT_OBJ := $(patsubst %.c,$(BUILD)/rel/%.o,$(sort $(wildcard src/mqtt/*.c)))

ifeq ($(strip $(WOLFSSL_LIBS)),)
# No build/deps/deps.mk yet: say what to do instead of failing obscurely.
$(BUILD)/rel/tern-bench:
	@echo "tern-bench needs wolfSSL: run 'make deps' first" >&2; exit 1
else
# wolfSSL headers come in as system headers, so its code is not held to our
# warning flags; ours are.
$(BUILD)/rel/tools/bench/%.o: tools/bench/%.c | $(WOLFSSL_LIBS)
	@mkdir -p $(@D)
	$(CC) $(CSTD) $(WARN) $(REL_CFLAGS) -Isrc -Itools/bench $(WOLFSSL_CPPFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/rel/tern-bench: $(BENCH_OBJ) $(BENCH_MQTT_OBJ) $(WOLFSSL_LIBS)
	$(CC) $(REL_CFLAGS) $(REL_LDFLAGS) $(BENCH_OBJ) $(BENCH_MQTT_OBJ) $(WOLFSSL_LIBS) \
	    $(DEPS_LDLIBS) -lm -o $@
endif

# On a fresh machine: host packages (mosquitto, jq, ...) and wolfSSL first;
# the binaries are built by a second make, which reads the deps.mk that
# `make deps` has just written.
.PHONY: bench
bench: setup deps
	$(MAKE) --no-print-directory $(BUILD)/rel/ternd $(BUILD)/rel/tern-bench
	BUILD=$(BUILD) scripts/bench.sh

# The unikernel's disk store beside the daemon's (issue 13); needs QEMU and
# the kernel, and writes build/bench/kstore-*.jsonl (docs untouched).
.PHONY: bench-kstore
bench-kstore: setup deps
	$(MAKE) --no-print-directory $(BUILD)/rel/ternd $(BUILD)/rel/tern-bench \
	    $(BUILD)/rel/tern-bundle $(BUILD)/kernel/tern.elf $(BUILD)/tern-disk.img
	$(PYTHON) tools/bench/kstore.py --build $(BUILD) $(if $(filter 1,$(BENCH_QUICK)),--quick) \
	    $(BENCH_KSTORE_ARGS)
