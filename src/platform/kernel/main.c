/*
 * main.c - kernel start-up. kmain_early() runs on the boot stack in .bss
 * with the early page tables: console, descriptor tables, boot information,
 * frame allocator, final page tables, guarded stacks. It then moves to a
 * guarded stack and kmain() reads the baked configuration (halting if it
 * is refused), brings up time, devices, entropy (then replaces the stack
 * protector's early guard from the DRBG), the crypto self-tests
 * (the broker is not started when one fails), the network, the
 * diagnostics report in the diagnostics modes (diag/diag.h; the plain one
 * halts after it), and the broker, reports readiness on the console, and
 * enters the main loop,
 * which polls the network, runs the broker's turn, and halts until the
 * next timer interrupt when there has been nothing to do for a little
 * while.
 */
#include "arch/x86_64/cpu.h"
#include "arch/x86_64/cpufeat.h"
#include "arch/x86_64/kaslr.h"
#include "arch/x86_64/simd.h"
#include "arch/x86_64/smp.h"
#include "arch/x86_64/memlayout.h"
#include "arch/x86_64/timer.h"
#include "arch/x86_64/trap.h"
#include "bootconf.h"
#include "bootinfo.h"
#include "clock.h"
#include "console.h"
#include "crypto/crypto.h"
#include "crypto/cryptobench_hook.h"
#include "dev/blk.h"
#include "dev/blk_selftest.h"
#include "dev/pci.h"
#include "dev/rtc.h"
#include "dev/virtio_disk.h"
#include "dev/virtio_pci.h"
#include "dev/virtio_rng.h"
#include "diag/diag.h"
#include "diag/disk_selftest.h"
#include "diag/hwtest.h"
#include "disk/layout_selftest.h"
#include "install/bootdisk.h"
#include "install/install.h"
#include "libc/stack_chk.h"
#include "mm/kmalloc.h"
#include "mm/paging.h"
#include "mm/pmm.h"
#include "mm/stack.h"
#include "serve/serve.h"
#include "net/echo.h"
#include "net/net.h"
#include "net/sntp.h"
#include "panic.h"
#include "rng/entropy.h"
#include "selftest.h"
#include "store/kdisk_store.h"
#include "store/ksqlite.h"
#include "store/ktele.h"
#include "store/kstore.h"
#include "store/kstore_test.h"
#include "store/kstorecpu.h"

#include <stdio.h>
#include <string.h>

_Noreturn void kmain_early(uint32_t kind, uint32_t info_phys, uint32_t layout_phys);

enum {
    MAIN_STACK_PAGES = 16,    /* 64 KiB */
    IST_STACK_PAGES = 4,      /* 16 KiB each */
    TICK_HZ = 100,
    RNG_WAIT_MS = 5000,       /* jitter collection at boot before giving up */
    DHCP_WAIT_MS = 10000,     /* before declaring readiness without an address */
    BUSY_POLL_NS = 2000000,   /* keep polling this long after the last work */
};

/* What the loader told us and the devices found; written once at boot. */
static struct boot_info boot;
static struct pci_dev pci_devices[PCI_MAX_DEVICES];
static unsigned pci_count;
static tern_config config;
/* TSC ticks paging_init took (test builds print it: docs/PERFORMANCE.md). */
static uint64_t paging_cycles;

static void halt_unavailable(const char *what)
{
    kprintf("tern: %s: not available in this build\n", what);
    kprintf("tern: halted\n");
    cpu_halt_forever();
}

/* What the boot menu's entry (A1) asks for. */
enum boot_mode {
    MODE_SERVE,      /* the broker (live, disk, or a direct -kernel boot) */
    MODE_INSTALL,    /* install/install.h, once the devices and the entropy are up */
    MODE_DIAG,       /* the diagnostics report, then halt (diag/diag.h) */
    MODE_DIAG_SERVE, /* the report, then the broker as the live entry, publishing it */
};

static enum boot_mode check_mode(void)
{
    char mode[32];
    if (!bootinfo_arg(&boot, "tern.mode", mode, sizeof mode) || !strcmp(mode, "live") ||
        !strcmp(mode, "disk"))
        return MODE_SERVE;
    if (!strcmp(mode, "install"))
        return MODE_INSTALL;
    if (!strcmp(mode, "diag"))
        return MODE_DIAG;
    if (!strcmp(mode, "diag-serve"))
        return MODE_DIAG_SERVE;
    kprintf("tern: unknown tern.mode '%s'\n", mode);
    halt_unavailable("that mode");
    return MODE_SERVE;
}

/* The boot menu's live entry runs from RAM and writes no disk (A1); so
 * does "Diagnostics, then serve", the ISO's other serving entry. */
static int live_mode(void)
{
    char mode[32];
    return bootinfo_arg(&boot, "tern.mode", mode, sizeof mode) &&
           (!strcmp(mode, "live") || !strcmp(mode, "diag-serve"));
}

/*
 * The diagnostics modes: every measurement with the devices, disks,
 * entropy and NIC up (no broker), the report on serial and the dashboard
 * on the screen (diag.h). The plain mode halts there, without a reset, so
 * the screen stays; diag-serve gets the report back (heap) to publish on
 * $SYS/diag/report once the broker runs.
 */
static char *run_diagnostics(enum boot_mode mode, const struct tsc_info *tsc)
{
    struct diag_env env = {
        .boot = &boot, .pci = pci_devices,
        .pci_count = pci_count < PCI_MAX_DEVICES ? pci_count : PCI_MAX_DEVICES,
        .tsc = tsc, .loader = boot.loader,
        .mode = mode == MODE_DIAG ? "diag" : "diag-serve",
        .serve_after = mode == MODE_DIAG_SERVE, .budget_ms = 0,
    };
#ifdef TERN_TEST_HOOKS
    char arg[12]; /* tern.test.diag_ms=N: short measurements for TCG tests */
    if (bootinfo_arg(&boot, "tern.test.diag_ms", arg, sizeof arg))
        for (const char *c = arg; *c >= '0' && *c <= '9' && env.budget_ms < 1000000; c++)
            env.budget_ms = env.budget_ms * 10 + (unsigned)(*c - '0');
#endif
    kprintf("tern: diag: measuring (%s)\n", env.mode);
    char *report = kmalloc(DIAG_REPORT_MAX);
    if (!report)
        panic("no memory for the diagnostics report");
    size_t len = diag_run(&env, report, DIAG_REPORT_MAX);
    diag_show(report, len);
    if (mode == MODE_DIAG) {
        kprintf("tern: diag: done; halted (power off or reset the machine)\n");
        cpu_halt_forever();
    }
    return report;
}

/*
 * The durable store the broker restores from and commits to, or NULL: RAM
 * only, retained messages and persistent sessions are lost at reboot.
 * The ISO's live entry never writes a disk; otherwise (the disk's own boot
 * entry, tern.mode=disk, or a direct -kernel boot) the disk store.disk
 * names (kdisk_store.h; halts on a refusal).
 */
static const squeue_store *open_store(const tern_config *cfg)
{
#ifdef TERN_TEST_HOOKS
    char spec[32], err[96];
    if (bootinfo_arg(&boot, "tern.teststore", spec, sizeof spec)) {
        const squeue_store *st = kstore_test_store(spec, err, sizeof err);
        if (!st)
            panic(err);
        kprintf("tern: store: TEST store double (tern.teststore=%s): commits keep nothing\n",
                spec);
        return st;
    }
#endif
    if (live_mode()) {
        kprintf("tern: store: live mode: no disk is written; retained messages and sessions "
                "live in memory only\n");
        return NULL;
    }
    int integrity = 0;
#ifdef TERN_TEST_HOOKS
    char arg[8];
    integrity = bootinfo_arg(&boot, "tern.test.integrity", arg, sizeof arg);
    if (bootinfo_arg(&boot, "tern.test.tele_ms", arg, sizeof arg)) {
        uint32_t ms = 0;
        for (const char *c = arg; *c >= '0' && *c <= '9' && ms < 100000; c++)
            ms = ms * 10 + (uint32_t)(*c - '0');
        ktele_test_interval_ms(ms);
    }
    if (bootinfo_arg(&boot, "tern.test.sqlheap_kib", arg, sizeof arg)) {
        uint32_t kib = 0;
        for (const char *c = arg; *c >= '0' && *c <= '9' && kib < 1000000; c++)
            kib = kib * 10 + (uint32_t)(*c - '0');
        ksqlite_test_heap_kib(kib);
    }
#endif
    return kdisk_store_open(cfg, integrity);
}

/* Replace the early guard (RDRAND, or only the TSC) with one from the DRBG
 * once it is seeded (SPEC B5). Replacing a live guard is delicate: every
 * protected frame live at that moment holds the old canary and fails its
 * check when it returns. kmain calls this once, straight after rng_init,
 * because there the only live frames are kmain_early's (not protected,
 * never returns) and kmain's own (never returns, so never checks); no
 * kernel thread has run yet (the store and telemetry threads are created
 * later, by open_store; the test build's thread self-test finishes its
 * thread); an interrupt handler runs to completion before kmain resumes,
 * and the application processors are not started yet (smp_start follows). The main loop is no such place: the store's
 * thread is parked there inside protected frames. So when the DRBG is not
 * seeded by then (a machine with only the jitter source, slower than
 * RNG_WAIT_MS), the early guard stays for this boot and the log says so.
 * Not protected itself: its own canary would change under it (gcc may
 * inline it into kmain, which never checks). The guard is never printed; the test build prints how many bits changed. */
static __attribute__((no_stack_protector)) void reseed_stack_guard(void)
{
    uint64_t v;
    if (!rng_seeded() || rng_bytes(&v, sizeof v) != 0) {
        kprintf("tern: stack guard: not reseeded: the DRBG was not seeded at boot\n");
        return;
    }
    uintptr_t old = stack_guard_replace(v);
#ifdef TERN_TEST_HOOKS
    unsigned changed = 0; /* counted by hand: no libgcc (__popcountdi2) here */
    for (uintptr_t d = old ^ __stack_chk_guard; d; d &= d - 1)
        changed++;
    kprintf("tern: stack guard: reseeded from the DRBG (test build: %u bits changed)\n",
            changed);
#else
    (void)old;
    kprintf("tern: stack guard: reseeded from the DRBG\n");
#endif
}

/* The heap's free-list secret from the DRBG once it is seeded (the first
 * came from RDRAND or the TSC, mm/kmalloc.c); 1 once done. */
static int rekey_heap(void)
{
    uint64_t v;
    if (rng_bytes(&v, sizeof v) != 0)
        return 0;
    kmalloc_rekey(v);
    kprintf("tern: heap: free-list secret replaced from the DRBG\n");
    return 1;
}

static _Noreturn void kmain(void)
{
    struct tsc_info tsc;
    struct simd_state simd;
    simd_enable(&simd); /* wolfSSL's assembly needs SSE/AVX */
    tsc_calibrate(&tsc);
#ifdef TERN_TEST_HOOKS
    char kaslr_arg[8];
    if (bootinfo_arg(&boot, "tern.test.kaslr", kaslr_arg, sizeof kaslr_arg) &&
        !strcmp(kaslr_arg, "show"))
    {
        kaslr_show_cost(tsc.hz);
        kprintf("tern: kaslr: test build: paging_init took %llu us\n",
                (unsigned long long)(paging_cycles * 1000000 / (tsc.hz ? tsc.hz : 1)));
    }
#endif
    clock_init(tsc.hz);
    lapic_timer_init(tsc.hz, TICK_HZ);
    irq_enable();

    enum boot_mode mode = check_mode();
    /* Before any device: a configuration we refuse stops here. */
    int serve = bootconf_load(&boot, &config);

#ifdef TERN_TEST_HOOKS
    char test[32];
    if (bootinfo_arg(&boot, "tern.test", test, sizeof test))
        selftest_run(test);
#endif

    blk_set_cpu_fn(smp_cpu_id); /* the disks are CPU 0's until the storage core */
    uint64_t scan0 = clock_mono_ns();
    pci_init(&boot);
    pci_count = pci_enumerate(pci_devices, PCI_MAX_DEVICES);
    for (unsigned i = 0; i < pci_count && i < PCI_MAX_DEVICES; i++) {
        const struct pci_dev *d = &pci_devices[i];
        kprintf("tern: pci %02x:%02x.%u %04x:%04x class %02x%02x\n", d->bus, d->dev, d->fn,
                d->vendor, d->device, d->class_code, d->subclass);
    }
    kprintf("tern: pci: %u devices (%s, %llu ms)\n", pci_count, pci_access_name(),
            (unsigned long long)((clock_mono_ns() - scan0) / 1000000));

    /* Disks: one line each; tern.test.blk=noflush (test builds) hides
     * their flush so the refusal can be tested. */
    unsigned disk_flags = 0;
#ifdef TERN_TEST_HOOKS
    char disk_arg[16];
    if (bootinfo_arg(&boot, "tern.test.blk", disk_arg, sizeof disk_arg) &&
        !strcmp(disk_arg, "noflush"))
        disk_flags |= VDISK_NOFLUSH;
#endif
    virtio_disk_probe(pci_devices, pci_count < PCI_MAX_DEVICES ? pci_count : PCI_MAX_DEVICES,
                      disk_flags);
#ifdef TERN_TEST_HOOKS
    if (bootinfo_arg(&boot, "tern.test.disk", disk_arg, sizeof disk_arg))
        blk_selftest(disk_arg);
#endif
    bootdisk_find(&boot); /* an installed disk's boot: which disk (tern.esp=) */

    struct rtc_time now;
    char rtc[32] = "unavailable";
    if (rtc_read(&now) == 0)
        snprintf(rtc, sizeof rtc, "%04d-%02d-%02dT%02d:%02d:%02dZ", now.year, now.month,
                 now.day, now.hour, now.minute, now.second);

    /* Let the timer prove itself before declaring readiness. */
    uint64_t t0 = lapic_ticks();
    for (int i = 0; i < 1000 && lapic_ticks() - t0 < 2; i++)
        cpu_idle();
    if (lapic_ticks() - t0 < 2)
        panic("the local APIC timer does not interrupt");

    kprintf("tern: memory %llu MiB usable, %llu MiB free; heap ready\n",
            (unsigned long long)(boot.usable_bytes >> 20),
            (unsigned long long)((uint64_t)pmm_free_count() * PAGE_SIZE >> 20));
    kprintf("tern: time: tsc %llu.%03llu MHz (%s), apic timer %u Hz, rtc %s\n",
            (unsigned long long)(tsc.hz / 1000000),
            (unsigned long long)(tsc.hz / 1000 % 1000),
            tsc.invariant ? "invariant" : "not invariant", TICK_HZ, rtc);
    /* Entropy before the network: TCP sequence numbers and DHCP ids use it. */
    for (unsigned i = 0; i < pci_count && i < PCI_MAX_DEVICES; i++)
        if (virtio_pci_type(&pci_devices[i]) == VIRTIO_ID_RNG && !virtio_rng_present())
            virtio_rng_init(&pci_devices[i]);
    rng_init(RNG_WAIT_MS);
    reseed_stack_guard(); /* only here: see the function */
    smp_start(&boot); /* after the reseed: see reseed_stack_guard */
#ifdef TERN_TEST_HOOKS
    char guard_arg[8]; /* the canary check still fires with the new guard */
    if (bootinfo_arg(&boot, "tern.test.guard", guard_arg, sizeof guard_arg) &&
        !strcmp(guard_arg, "smash")) {
        stack_guard_smash_selftest();
        panic("selftest: a smashed stack frame was not caught");
    }
#endif
    int heap_rekeyed = rekey_heap();
    if (crypto_boot(&boot, &simd) != 0)
        serve = 0; /* every boot runs the self-tests; a failure means no broker */
#ifdef TERN_TEST_HOOKS
    char bench_arg[8]; /* crypto and handshake costs, for docs/PERFORMANCE.md */
    if (bootinfo_arg(&boot, "tern.test.cryptobench", bench_arg, sizeof bench_arg))
        cryptobench_hook(bench_arg, &tsc);
    char hw_arg[8]; /* the hardware report's sections, printed; halts */
    if (bootinfo_arg(&boot, "tern.test.diaghw", hw_arg, sizeof hw_arg)) {
        struct diag_env env = {
            .boot = &boot, .pci = pci_devices,
            .pci_count = pci_count < PCI_MAX_DEVICES ? pci_count : PCI_MAX_DEVICES,
            .tsc = &tsc, .loader = boot.loader, .mode = "diag",
        };
        diag_hw_test(&env);
    }
#endif
#ifdef TERN_TEST_HOOKS
    char layout_arg[16]; /* after the entropy: formatting draws a volume id */
    if (bootinfo_arg(&boot, "tern.test.layout", layout_arg, sizeof layout_arg))
        layout_selftest(layout_arg);
    char diag_arg[8]; /* the disk measurements alone (diag/disk_selftest.h) */
    if (bootinfo_arg(&boot, "tern.test.diag", diag_arg, sizeof diag_arg) &&
        !strcmp(diag_arg, "disk"))
        disk_selftest(&boot, pci_devices, pci_count < PCI_MAX_DEVICES ? pci_count
                                                                      : PCI_MAX_DEVICES, &tsc);
#endif
    if (mode == MODE_INSTALL)
        install_run(&boot, &config); /* does not return: powers off or halts */
    struct bootconf_assets assets = {NULL, NULL, NULL, 0};
    if (serve)
        bootconf_assets(&config, &assets); /* halts on a bad certificate, ACL or password file */

    int net = net_init(pci_devices, pci_count < PCI_MAX_DEVICES ? pci_count : PCI_MAX_DEVICES,
                       serve ? &config.net : NULL);
    char *report = NULL;
    if (mode == MODE_DIAG || mode == MODE_DIAG_SERVE)
        report = run_diagnostics(mode, &tsc); /* MODE_DIAG does not return */
    if (net == 0) {
#ifdef TERN_TEST_HOOKS
        if (echo_start() < 0)
            kprintf("tern: echo service failed to start\n");
#endif
        uint64_t until = clock_mono_ns() + (uint64_t)DHCP_WAIT_MS * 1000000;
        while (!net_has_address() && clock_mono_ns() < until)
            if (!net_poll())
                cpu_relax();
        if (serve)
            sntp_start(&config);
        ktele_watch_cert(assets.cert_not_after);
        const squeue_store *durable = serve ? open_store(&config) : NULL;
        if (serve && kserve_start(&config, &assets, durable, clock_mono_ns() / 1000000) == 0) {
            char line[200];
            kserve_describe(line, sizeof line);
            kprintf("tern: mqtt: %s\n", line);
            if (durable) {
                kserve_describe_store(line, sizeof line);
                kprintf("tern: store: %s\n", line);
            }
            sntp_publish(); /* the status said before the broker existed */
            /* Last, with the store and its journal open: their threads
             * and the disks go to CPU 1 when there is one (ADR-064). */
            if (!kstorecpu_start() && smp_online() >= 2)
                kprintf("tern: smp: CPU 1 stays parked: %s\n",
                        durable ? "the disks could not be handed over"
                                : "no durable store (RAM only)");
#ifdef TERN_TEST_HOOKS
            char unmap_arg[8]; /* paging's check once CPU 1 runs: must halt */
            if (bootinfo_arg(&boot, "tern.test.unmap", unmap_arg, sizeof unmap_arg) &&
                !strcmp(unmap_arg, "shared")) {
                delay_ms(300); /* CPU 1 logs that its loop runs first */
                vm_unmap(vm_window_reserve(PAGE_SIZE), PAGE_SIZE);
                panic("selftest: an unmap after the hand-over to the storage core was allowed");
            }
#endif
            if (report && kserve_sys_put(DIAG_REPORT_TOPIC, report) == 0)
                kprintf("tern: diag: report published on %s (retained, operators only)\n",
                        DIAG_REPORT_TOPIC);
        }
    } else if (serve) {
        kprintf("tern: mqtt: no network: not serving\n");
    }

    /* Longer than kprintf's line limit, so formatted here. */
    char rngline[192], netline[128], ready[400];
    rng_describe(rngline, sizeof rngline);
    net_describe(netline, sizeof netline);
    int len = snprintf(ready, sizeof ready, "tern: ready (boot %s): rng: %s; net: %s\n",
                       boot.loader, rngline, netline);
    console_write(ready, len > 0 && (size_t)len < sizeof ready ? (size_t)len : 0);

    /* The main loop: service the network; when there has been nothing to do
     * for BUSY_POLL_NS, sleep until the next interrupt (a device's MSI-X
     * message or the timer tick). */
    int announced_rng = rng_seeded(), announced_net = net_has_address();
    uint64_t last_work = clock_mono_ns();
    for (;;) {
        int work = net_poll();
        work |= blk_poll_all();
        work |= kserve_poll(clock_mono_ns() / 1000000);
        rng_poll();
        if (!heap_rekeyed)
            heap_rekeyed = rekey_heap();
        if (!announced_rng && rng_seeded()) {
            announced_rng = 1;
            rng_describe(rngline, sizeof rngline);
            kprintf("tern: rng: %s\n", rngline);
        }
        if (!announced_net && net_has_address()) {
            announced_net = 1;
            net_describe(netline, sizeof netline);
            kprintf("tern: net: %s\n", netline);
        }
        uint64_t t = clock_mono_ns();
        smp_poll_late(t);
        if (work) {
            last_work = t;
        } else if (t - last_work > BUSY_POLL_NS) {
            /* Interrupts off from the check to the hlt (cpu_idle is sti;
             * hlt), so a device interrupt in between wakes the hlt. */
            irq_disable();
            smp_sleep_begin(); /* the storage core wakes it only then (smp.h) */
            if (net_irq_pending() || blk_irq_pending() || kserve_store_waiting())
                irq_enable();
            else
                smp_sleep_idle();
            smp_sleep_end();
        } else {
            cpu_relax();
        }
    }
}

/* Replace the stack protector's boot value, first thing in kmain_early
 * (no protected frame is live yet). Not itself protected: its own canary
 * would change under it. */
static __attribute__((no_stack_protector)) void seed_stack_guard(void)
{
    struct cpu_features f;
    cpu_features_read(&f);
    uint64_t v = 0;
    if (!f.rdrand || !cpu_rdrand64(&v))
        v = rdtsc() * 0x9E3779B97F4A7C15ull; /* weak; reseed_stack_guard follows */
    (void)stack_guard_replace(v);
}

_Noreturn __attribute__((no_stack_protector)) void kmain_early(uint32_t kind, uint32_t info_phys,
                                                               uint32_t layout_phys)
{
    kaslr_adopt(layout_phys); /* before any address conversion */
    seed_stack_guard();
    console_init();
    kprintf("\ntern: booting\n");
    char kaslr_line[96];
    kaslr_describe(kaslr_line, sizeof kaslr_line);
    kprintf("tern: kaslr: %s\n", kaslr_line);
    trap_init_early();
    smp_boot_cpu_init(); /* its struct percpu: before anything may panic */
    bootinfo_parse(&boot, (int)kind, info_phys);
    pmm_init(&boot);
    uint64_t paging_t0 = rdtsc();
    paging_init(&boot); /* with read-only page tables (mm/paging.c) */
    paging_cycles = rdtsc() - paging_t0;
    console_init_fb(&boot);
#ifdef TERN_TEST_HOOKS
    char kaslr_arg[8]; /* the bases, for tests/kernel/test_kaslr.py only */
    if (bootinfo_arg(&boot, "tern.test.kaslr", kaslr_arg, sizeof kaslr_arg) &&
        !strcmp(kaslr_arg, "show"))
        kaslr_show_bases();
#endif

    /* Faults that may strike on a broken stack get their own stacks. */
    trap_set_ist(8, 1, stack_alloc(IST_STACK_PAGES));     /* double fault */
    trap_set_ist(14, 2, stack_alloc(IST_STACK_PAGES));    /* page fault */
    trap_set_ist(2, 3, stack_alloc(IST_STACK_PAGES));     /* NMI */
    trap_set_ist(18, 4, stack_alloc(IST_STACK_PAGES));    /* machine check */

    uint64_t top = stack_alloc(MAIN_STACK_PAGES);
    __asm__ volatile("mov %0, %%rsp\n\t"
                     "xor %%ebp, %%ebp\n\t"
                     "call *%1"
                     :
                     : "r"(top), "r"(kmain)
                     : "memory");
    __builtin_unreachable();
}
