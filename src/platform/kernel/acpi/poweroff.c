/*
 * poweroff.c - ACPI soft off (poweroff.h): the tables through acpi.h, the
 * parsing in sleep.c, the port writes here.
 */
#include "acpi/poweroff.h"

#include "acpi/acpi.h"
#include "acpi/sleep.h"
#include "arch/x86_64/cpu.h"
#include "clock.h"
#include "console.h"
#include "mm/kmalloc.h"

#include <stdio.h>
#include <string.h>

enum {
    FADT_MAX_LEN = 4096,
    ENABLE_WAIT_MS = 1000,   /* firmware's SMI handler entering ACPI mode */
    OFF_WAIT_MS = 3000,      /* the machine should be gone well before this */
};

static void wait_ms(uint64_t ms)
{
    uint64_t until = clock_mono_ns() + ms * 1000000;
    while (clock_mono_ns() < until)
        cpu_relax();
}

static void sleep_write(uint16_t port, uint8_t typ)
{
    uint16_t v = inw(port);
    v = (uint16_t)(v & ~(7u << ACPI_SLP_TYP_SHIFT | ACPI_SLP_EN));
    outw(port, (uint16_t)(v | (uint16_t)(typ << ACPI_SLP_TYP_SHIFT)));
    outw(port, (uint16_t)(v | (uint16_t)(typ << ACPI_SLP_TYP_SHIFT) | ACPI_SLP_EN));
}

void acpi_poweroff(char *why, size_t n)
{
    const char *err;
    struct acpi_fadt_pm pm;
    uint8_t typ_a, typ_b;
    uint8_t *buf = kmalloc(ACPI_DSDT_MAX_LEN);
    if (!buf) {
        snprintf(why, n, "no memory for the ACPI tables");
        return;
    }
    long len = acpi_table("FACP", buf, FADT_MAX_LEN, &err);
    if (len < 0 || acpi_fadt_pm_parse(buf, (size_t)len, &pm, &err)) {
        snprintf(why, n, "FADT: %s", err);
        kfree(buf);
        return;
    }
    len = acpi_table_at(pm.dsdt, "DSDT", buf, ACPI_DSDT_MAX_LEN, &err);
    if (len < 0 || acpi_s5_find(buf, (size_t)len, &typ_a, &typ_b, &err)) {
        snprintf(why, n, "DSDT: %s", err);
        kfree(buf);
        return;
    }
    kfree(buf);
    /* Firmware that left the machine in legacy mode: ask it for ACPI mode
     * first (SCI_EN set), as an operating system does. */
    if (!(inw(pm.pm1a_cnt) & ACPI_SCI_EN) && pm.smi_cmd && pm.acpi_enable) {
        outb(pm.smi_cmd, pm.acpi_enable);
        uint64_t until = clock_mono_ns() + (uint64_t)ENABLE_WAIT_MS * 1000000;
        while (!(inw(pm.pm1a_cnt) & ACPI_SCI_EN) && clock_mono_ns() < until)
            cpu_relax();
    }
    sleep_write(pm.pm1a_cnt, typ_a);
    if (pm.pm1b_cnt)
        sleep_write(pm.pm1b_cnt, typ_b);
    wait_ms(OFF_WAIT_MS);
    snprintf(why, n, "still running %u ms after writing SLP_TYP %u to PM1a_CNT 0x%x",
             (unsigned)OFF_WAIT_MS, (unsigned)typ_a, (unsigned)pm.pm1a_cnt);
}

#ifdef TERN_TEST_HOOKS
void acpi_dump_dsdt(void)
{
    const char *err;
    struct acpi_fadt_pm pm;
    uint8_t *buf = kmalloc(ACPI_DSDT_MAX_LEN);
    long len = buf ? acpi_table("FACP", buf, FADT_MAX_LEN, &err) : -1;
    if (len < 0 || acpi_fadt_pm_parse(buf, (size_t)len, &pm, &err) ||
        (len = acpi_table_at(pm.dsdt, "DSDT", buf, ACPI_DSDT_MAX_LEN, &err)) < 0) {
        kprintf("tern: dsdt: none: %s\n", buf ? err : "no memory");
        kfree(buf);
        return;
    }
    for (long off = 0; off < len; off += 32) {
        char line[96]; /* 19 + 64 hex digits */
        int n = snprintf(line, sizeof line, "tern: dsdt: %06lx ", (unsigned long)off);
        for (long i = off; i < len && i < off + 32; i++)
            n += snprintf(line + n, sizeof line - (size_t)n, "%02x", buf[i]);
        kprintf("%s\n", line);
    }
    kprintf("tern: dsdt: end, %ld bytes\n", len);
    kfree(buf);
}
#endif
