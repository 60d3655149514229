# tools/diag/diag.mk - host tools of the diagnostics mode (docs/DIAGNOSTICS.md).
# Included by the top-level Makefile.
#
#   build/rel/tern-diag-png   a report (JSON, or a serial log holding it) ->
#                             the dashboard's PNG, pixel for pixel what the
#                             kernel draws (tern-diag-png.c says how)
#
# It links the dashboard's portable layout (src/diag/layout*.c), the JSON
# reader and the kernel's font (dev/font8x8.c: one source for the glyphs).

DIAG_PNG_SRC := tools/diag/tern-diag-png.c $(DIAG_LAYOUT_SRC) \
                src/json/json_read.c src/json/json_write.c \
                src/platform/kernel/dev/font8x8.c

$(BUILD)/rel/tern-diag-png: $(call obj,rel,$(DIAG_PNG_SRC))
	$(if $(Q),@echo "  LD      $@")
	$(Q)$(CC) $(WARN) $(REL_CFLAGS) $(REL_LDFLAGS) $^ -lpng -o $@

all: $(BUILD)/rel/tern-diag-png
# The kernel tests compare the dashboard's screenshot with its PNG.
kernel-test: $(BUILD)/rel/tern-diag-png
