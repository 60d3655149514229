# tests/powercut/powercut.mk - the unikernel's power-cut harness (SPEC D8,
# H4; issue 13): QEMU's disk served by an NBD backend with a volatile write
# cache that the test cuts. Included from the top-level Makefile (after
# kernel.mk: KBUILD, and image.mk: tern-bundle), which provides BUILD and
# PYTHON.
#
#   make powercut [POWERCUT_CUTS=200] [POWERCUT_SEED=1]
#       200 power cuts under a durable mutual-TLS load, the guest's disk on
#       virtio-blk and virtio-scsi by turns, then the failing disk scenario
#   make powercut-test       the bounded run for make test (20 cuts, the
#                            failing disk, then 10 cuts with -smp 2: the
#                            store on CPU 1, ADR-064; about 4 minutes
#                            under TCG)
#   make powercut-self-test  the backend's own tests, no guest (seconds)
#   make powercut-daemon     the harness's cycles against the Linux daemon
#                            (SIGKILL, no power cut): checks the checker

POWERCUT_CUTS ?= 200
POWERCUT_SEED ?= 1
POWERCUT_TEST_CUTS := 20
POWERCUT_TEST_SMP_CUTS := 10
POWERCUT_RUN := $(PYTHON) tests/powercut/run.py --build $(BUILD) --seed $(POWERCUT_SEED)
# The TEST kernel (integrity_check at every boot), the bundle maker, and
# tern-mkdisk for the guest's disk (a blank tern partition), tern-tele to
# read its telemetry journal after every cut.
POWERCUT_DEPS := $(KBUILD)/tern-test.elf $(BUILD)/rel/tern-bundle $(BUILD)/rel/tern-mkdisk \
                 $(BUILD)/rel/tern-tele

.PHONY: powercut powercut-test powercut-self-test powercut-daemon

powercut: $(POWERCUT_DEPS) powercut-self-test
	$(POWERCUT_RUN) --cuts $(POWERCUT_CUTS) --bus alternate
	$(POWERCUT_RUN) --failing-disk --bus alternate
	$(POWERCUT_RUN) --cuts $(POWERCUT_CUTS) --bus alternate --smp 2
	$(POWERCUT_RUN) --failing-disk --bus alternate --smp 2

powercut-test: $(POWERCUT_DEPS) powercut-self-test
	$(POWERCUT_RUN) --cuts $(POWERCUT_TEST_CUTS) --bus alternate
	$(POWERCUT_RUN) --failing-disk --bus alternate
	$(POWERCUT_RUN) --cuts $(POWERCUT_TEST_SMP_CUTS) --bus alternate --smp 2

powercut-self-test:
	$(PYTHON) -m pytest -q tests/powercut

powercut-daemon: $(BUILD)/rel/ternd $(BUILD)/asan/ternd
	$(POWERCUT_RUN) --target daemon --bin $(BUILD)/rel/ternd --cuts 20
	$(POWERCUT_RUN) --target daemon --bin $(BUILD)/asan/ternd --failing-disk
