# tools/disk/disk.mk - host tools over the kernel's disk layout code
# (src/platform/kernel/disk, KDISK_SRC in the top-level Makefile).
# Included by the top-level Makefile.
#
#   build/rel/tern-mkdisk   partition a raw image: GPT, ESP, blank tern
#                           data partition (tern-mkdisk.c says how)

$(BUILD)/rel/tern-mkdisk: $(BUILD)/rel/tools/disk/tern-mkdisk.o $(call obj,rel,$(KDISK_SRC))
	$(if $(Q),@echo "  LD      $@")
	$(Q)$(CC) $(REL_CFLAGS) $(REL_LDFLAGS) $^ -o $@

#   build/rel/tern-tele     print a disk image's telemetry journal (tern-tele.c)
$(BUILD)/rel/tern-tele: $(BUILD)/rel/tools/disk/tern-tele.o $(call obj,rel,$(KDISK_SRC))
	$(if $(Q),@echo "  LD      $@")
	$(Q)$(CC) $(REL_CFLAGS) $(REL_LDFLAGS) $^ -o $@
