# tools/image/image.mk - the image builder (SPEC F3) and the default image.
# Included by src/platform/kernel/kernel.mk.
#
#   build/rel/tern-bundle      config + the files it names -> boot bundle,
#                              checked like the kernel will (tern-bundle.c)
#   tools/image/tern-build-image CONFIG OUT.iso
#                              bundle + kernel -> hybrid ISO (mkiso.sh)
#   make image                 build/tern.iso: the development image, mTLS on
#                              8883 with the dev PKI (scripts/pki.sh build/pki)
#                              and tools/image/tern.conf + tern.acl; and
#                              build/tern-disk.img, the same as a raw disk
#                              image (GPT, ESP, empty data partition) that
#                              kernel tests copy

IMAGE_BUNDLE_OBJ := $(BUILD)/rel/tools/image/tern-bundle.o \
    $(call obj,rel,src/platform/kernel/bundle.c src/platform/kernel/confcheck.c \
      src/platform/posix/load.c src/platform/posix/file.c src/platform/posix/panic.c)

$(BUILD)/rel/tern-bundle: $(IMAGE_BUNDLE_OBJ) $(REL_CORE) $(REL_TLS) $(WOLFSSL_LIBS)
	$(if $(Q),@echo "  LD      $@")
	$(Q)$(CC) $(REL_CFLAGS) $(REL_LDFLAGS) $^ $(DEPS_LDLIBS) -o $@

# The development image: the configuration and ACL from tools/image, the
# certificates from the dev PKI, staged side by side in build/image so the
# configuration's relative paths (pki/...) resolve.
$(BUILD)/pki/server.crt:
	$(Q)scripts/pki.sh $(BUILD)/pki

$(BUILD)/image/tern.conf: tools/image/tern.conf tools/image/tern.acl $(BUILD)/pki/server.crt
	@mkdir -p $(@D)
	$(Q)cp tools/image/tern.conf tools/image/tern.acl $(@D)/
	$(Q)ln -sfn ../pki $(@D)/pki

$(BUILD)/tern.iso: $(KBUILD)/tern.elf $(BUILD)/rel/tern-bundle $(BUILD)/rel/tern-payload \
                   $(BUILD)/image/tern.conf tools/image/grub.cfg tools/image/grub-disk.cfg \
                   tools/image/mkiso.sh tools/image/mkboot.sh tools/image/tern-build-image
	$(if $(Q),@echo "  ISO     $@")
	$(Q)tools/image/tern-build-image --kernel $(KBUILD)/tern.elf \
	    --bundler $(BUILD)/rel/tern-bundle --payload $(BUILD)/rel/tern-payload \
	    $(BUILD)/image/tern.conf $@

# 256 MiB, sparse: room for the layout's regions, small to copy in tests.
$(BUILD)/tern-disk.img: $(KBUILD)/tern.elf $(BUILD)/rel/tern-bundle $(BUILD)/rel/tern-mkdisk \
                        $(BUILD)/image/tern.conf tools/image/grub-disk.cfg tools/image/mkdisk.sh \
                        tools/image/mkboot.sh \
                        tools/image/tern-build-image
	$(if $(Q),@echo "  DISK    $@")
	$(Q)tools/image/tern-build-image --kernel $(KBUILD)/tern.elf \
	    --bundler $(BUILD)/rel/tern-bundle --mkdisk $(BUILD)/rel/tern-mkdisk \
	    --disk 256 $(BUILD)/image/tern.conf $@

# The install payload's packer (tern-payload.c): the kernel's own parser and
# SHA-256 check what it wrote.
$(BUILD)/rel/tern-payload: $(BUILD)/rel/tools/image/tern-payload.o \
    $(call obj,rel,src/platform/kernel/install/payload.c src/platform/kernel/rng/sha256.c)
	$(if $(Q),@echo "  LD      $@")
	$(Q)$(CC) $(REL_CFLAGS) $(REL_LDFLAGS) $^ -o $@
