# tests/sim/sim.mk - the deterministic simulator of the broker core (SPEC H5)
# and the allocation-failure loop, both under ASan+UBSan. Included from the
# top-level Makefile, which provides CORE_SRC, CSTD, WARN, INC, BUILD and the
# $(BUILD)/asan/%.o rule with ASAN_CFLAGS/ASAN_LDFLAGS.
#
#   make sim [SEEDS=1000] [SEED_START=1]   run SEEDS seeds
#   make sim-test                          the fixed set run by make test,
#                                          plus the allocation-failure loop
#   make alloc-fail                        only the allocation-failure loop
#   tests/sim/sim --seed N --verbose       replay one seed with a trace
#   ... --durable | --no-durable           force the durable mode (store
#                                          commits/failures, crashes) on or
#                                          off; default: seeds divisible by 3
#                                          (binary: $(BUILD)/asan/sim)

SEEDS      ?= 1000
SEED_START ?= 1
SIM_TEST_SEEDS := 200

# alloc_fail.c has its own main(); every other file belongs to the simulator.
# The durable store model and the fake transport under the connection layer
# (src/conn, in CORE_SRC) are the unit tests' (tests/unit/).
SIM_SRC  := $(filter-out tests/sim/alloc_fail.c,$(sort $(wildcard tests/sim/*.c))) \
            tests/unit/model_store.c tests/unit/fake_transport.c
SIM_OBJ  := $(call obj,asan,$(SIM_SRC) src/platform/posix/panic.c)
AF_OBJ   := $(call obj,asan,tests/sim/alloc_fail.c tests/sim/alloc_track.c \
                            src/platform/posix/panic.c)

# Quoted includes find tests/sim/*.h from the including file's directory;
# the core's headers come through INC (src). alloc_track.c is shared with
# the fuzz_core target.
$(BUILD)/asan/sim: $(ASAN_CORE) $(SIM_OBJ)
	$(CC) $(ASAN_CFLAGS) $(ASAN_LDFLAGS) $^ -o $@

$(BUILD)/asan/alloc_fail: $(ASAN_CORE) $(AF_OBJ)
	$(CC) $(ASAN_CFLAGS) $(ASAN_LDFLAGS) $^ -o $@

.PHONY: sim sim-test alloc-fail

sim: $(BUILD)/asan/sim
	$(BUILD)/asan/sim --seeds $(SEEDS) --start $(SEED_START)

alloc-fail: $(BUILD)/asan/alloc_fail
	$(BUILD)/asan/alloc_fail

# make test: a fixed seed set and the allocation-failure loop.
# Seeds beyond that set on which the simulator once found a bug, replayed
# so each fix keeps a test that failed before it: 241 (a departed shared
# member's expired message sent to a QoS 0 member), 3183 and 5069 durable
# (an expired message with a packet id not yet written still sent), 290
# (the end phase judged memory before the tree's sweep freed the nodes an
# expired retained message left: the simulator's error, not the core's).
sim-test: $(BUILD)/asan/sim $(BUILD)/asan/alloc_fail
	$(BUILD)/asan/sim --seeds $(SIM_TEST_SEEDS) --start 1
	$(BUILD)/asan/sim --seed 241
	$(BUILD)/asan/sim --seed 290
	$(BUILD)/asan/sim --seed 3183 --durable
	$(BUILD)/asan/sim --seed 5069 --durable
	$(BUILD)/asan/alloc_fail
