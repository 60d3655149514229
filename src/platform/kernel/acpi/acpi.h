/*
 * acpi.h - finding the firmware's ACPI tables at boot. The RSDP comes from
 * the loader (multiboot2 ACPI tag, PVH start info) or, failing that, from
 * the BIOS areas; tables are then copied out of physical memory through a
 * reader that only reads firmware or RAM ranges of the boot memory map
 * (never holes, where devices live). Parsing rules: acpi/tables.h.
 */
#ifndef TERN_ACPI_ACPI_H
#define TERN_ACPI_ACPI_H

#include "bootinfo.h"

#include <stddef.h>
#include <stdint.h>

/* Locate and check the RSDP. 0, or -1 (acpi_describe says why). */
int acpi_init(const struct boot_info *bi);
/* Copy the checked table with signature sig into buf (cap bytes). Its
 * length, or -1 with *err ("not present", or why no copy was usable). */
long acpi_table(const char sig[4], uint8_t *buf, size_t cap, const char **err);
/* Copy the checked table at physical address pa (signature sig), like
 * acpi_table. Its length, or -1 with *err. */
long acpi_table_at(uint64_t pa, const char sig[4], uint8_t *buf, size_t cap, const char **err);
/* One phrase for the boot log: where the RSDP came from and which root
 * table is used, or why there are no tables. */
void acpi_describe(char *buf, size_t n);

#endif
