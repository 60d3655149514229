/*
 * disk_selftest.c - the test builds' hook around the disk section writers
 * (disk_selftest.h). The JSON goes out with console_write, not kprintf:
 * it is longer than kprintf's line limit.
 */
#include "diag/disk_selftest.h"

#include "arch/x86_64/cpu.h"
#include "bootinfo.h"
#include "console.h"
#include "diag/diskbench.h"
#include "mm/kmalloc.h"

#ifdef TERN_TEST_HOOKS

enum { OUT_MAX = 16 * 1024 };

_Noreturn void disk_selftest(const struct boot_info *boot, const struct pci_dev *pci,
                             unsigned pci_count, const struct tsc_info *tsc)
{
    struct diag_env env = {.boot = boot, .pci = pci, .pci_count = pci_count, .tsc = tsc,
                           .loader = boot->loader, .mode = "diag", .serve_after = 0,
                           .budget_ms = 0};
    char arg[8];
    if (bootinfo_arg(boot, "tern.test.diag_ms", arg, sizeof arg)) {
        unsigned v = 0, i = 0;
        for (; arg[i] >= '0' && arg[i] <= '9' && i < 6; i++)
            v = v * 10 + (unsigned)(arg[i] - '0');
        if (!arg[i])
            env.budget_ms = v;
    }
    char *buf = kmalloc(OUT_MAX);
    if (!buf) {
        kprintf("tern: diag: disk selftest: no memory\n");
        cpu_halt_forever();
    }
    jw w;
    jw_init(&w, buf, OUT_MAX);
    jw_obj(&w, NULL);
    diag_disk_read_budget(&w, env.budget_ms);
    diag_disk_write_test(&w, &env);
    jw_end(&w);
    size_t len = jw_finish(&w);
    kprintf("tern: diag: disk selftest begin\n");
    if (len) {
        console_write(buf, len);
        console_write("\n", 1);
    } else {
        kprintf("tern: diag: disk selftest: the JSON did not fit %u bytes\n", (unsigned)OUT_MAX);
    }
    kprintf("tern: diag: disk selftest end\n");
    cpu_halt_forever();
}

#endif
