/*
 * smp.c - bringing up the application processors (issue 18).
 *
 * The CPUs are the MADT's enabled local APIC and x2APIC entries (acpi/
 * madt.c parses it); online-capable ones are counted and left off (no
 * hot-plug here), as are x2APIC ids above 254 (this kernel drives the
 * APIC in xAPIC mode, whose IPIs carry 8-bit ids). Each AP is started in
 * turn with INIT, SIPI, SIPI through trampoline.S copied to a free page
 * below 1 MiB; it arrives in smp_ap_entry on its own guarded stack with
 * its own IST fault stacks, GDT and TSS (trap.c), the shared IDT, its
 * GS base on its struct percpu, the boot CPU's PAT, and its own local
 * APIC timer; then it parks until CPU 0 hands it work for its role
 * (smp_run_role: CPU 1, the storage core). An AP that does not
 * come up within AP_WAIT_MS is named in the boot log and left out.
 *
 * A late AP: one that did not come up in time may still arrive (a vCPU
 * the host ran late), after its slot, stacks and the trampoline's
 * parameters went to the next CPU. So the trampoline's first act, before
 * it reads a parameter or writes anything, is a claim: a compare-and-swap
 * of the parameter block's claim word from its own APIC id + 1 (the CPU
 * being started, set by CPU 0 last of all) to that | TRAMP_CLAIMED. CPU 0,
 * giving up, swaps the word to 0: whichever swap comes first decides. An
 * AP that lost sets its bit in the block's late bitmap and halts in the
 * trampoline for good (real mode, interrupts off; no NMI is ever sent to
 * it: it never comes online); CPU 0 names it once its CPUs are started.
 * One that won in time but is slow is waited for (AP_CLAIMED_WAIT_MS),
 * and panics the machine if it never comes: it may write its slot any
 * time. The blob is copied once and never writes itself, so a late AP
 * may run it while the next CPU starts from it.
 *
 * Page tables: the trampoline uses its own small PML4 (below 4 GiB, as
 * 32-bit code needs) whose higher half is the kernel's top-level entries
 * copied, so it shares every kernel mapping with KASLR's slide; the AP
 * loads the kernel's CR3 itself once in the higher half.
 *
 * Whether the page-table edits after boot (mm/paging.c's CR0.WP window)
 * need a TLB shootdown: not today, and paging.c refuses an edit on any
 * CPU but 0 (paging_check_cpu), so it cannot start needing one unnoticed.
 * The reasoning: only CPU 0 edits; an edit that adds a mapping needs no
 * flush anywhere (a CPU caches no not-present entry, Intel SDM vol. 3
 * 4.10.2.3); the edits that remove or change one (vm_unmap of the ACPI
 * scratch page and the MMIO windows' short-lived mappings) touch
 * addresses only CPU 0 ever uses, and an AP today runs only its parked
 * loop, the timer and NMI handlers, and the fatal path (and, in test
 * builds, smp_selftest.c: the heap, which lives in the direct map, and
 * the console, whose framebuffer mapping is never removed), none of which
 * reaches such an address even speculatively. Since the storage core
 * (ADR-064) CPU 1 runs real work - SQLite, the disks - in the direct
 * map, the kernel image and the MMIO windows mapped at boot; from the
 * hand-over on paging_share makes every removal or change of a mapping
 * panic (except the ACPI scratch page, CPU 0's alone), which keeps this
 * argument true without a shootdown.
 */
#include "arch/x86_64/smp.h"

#include "acpi/acpi.h"
#include "acpi/madt.h"
#include "arch/x86_64/cpu.h"
#include "arch/x86_64/lapic.h"
#include "arch/x86_64/memlayout.h"
#include "arch/x86_64/percpu.h"
#include "arch/x86_64/smp_selftest.h"
#include "arch/x86_64/trap.h"
#include "clock.h"
#include "console.h"
#include "mm/kmalloc.h"
#include "mm/paging.h"
#include "mm/stack.h"
#include "panic.h"

#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

enum {
    AP_STACK_PAGES = 8,         /* 32 KiB: parked today, room for the storage core */
    AP_IST_PAGES = 4,           /* 16 KiB each, as the boot CPU's */
    AP_WAIT_MS = 1000,          /* per AP, generous for TCG */
    AP_CLAIMED_WAIT_MS = 10000, /* for one that took its claim in time: on its way */
    STOP_WAIT_MS = 100,         /* for the others to halt on the fatal NMI */
    TRAMPOLINE_PAGES = 4,       /* code and parameters, PML4, PDPT, PD */
    LOW_LIMIT = 0x9F000,        /* below the EBDA; the SIPI page must be < 1 MiB */
    MSR_GS_BASE = 0xC0000101,
    ICR_INIT = 0x4500,          /* INIT, level assert */
    ICR_STARTUP = 0x4600,       /* start-up IPI; low byte = page number */
};

#define TRAMP_CLAIMED 0x80000000u /* trampoline.S's CLAIMED */

extern const char trampoline_start[], trampoline_end[], trampoline_params[];
extern const char trampoline_gdt_ptr[], trampoline_far32[], trampoline_far64[];

/* trampoline.S's parameter block. claim and late are shared with APs in
 * the trampoline (atomic builtins); the rest is read only by the AP that
 * took the claim, written by CPU 0 before it opens the claim. */
struct trampoline_params {
    uint64_t cr3, stack, percpu, entry;
    uint32_t hold;    /* test builds: APIC id + 1 of a CPU held before its claim */
    uint32_t claim;   /* APIC id + 1 of the CPU being started, | TRAMP_CLAIMED
                       * once it took it; 0: none may */
    uint32_t late[8]; /* a bit per APIC id: CPUs that lost their claim */
};

/* The per-CPU table and the boot structures of the bring-up, written by
 * CPU 0 before each AP starts (each AP then writes only its own entry's
 * state). stopping is the one field every CPU may write (fatal path). */
static struct percpu cpus[SMP_MAX_CPUS];
static unsigned ncpus = 1, nonline = 1;
static uint64_t kernel_cr3;
static int boot_ready;
static _Atomic int stopping;
static _Atomic unsigned stopped;
static unsigned wake_vector;     /* smp_wake's IPI (0: none allocated) */
static struct trampoline_params *tparams; /* in the low page, once copied */
static uint32_t late_named[8]; /* CPU 0's: late bits already reported */
static uint64_t late_next_ns;  /* CPU 0's: smp_poll_late's next look */
#ifdef TERN_TEST_HOOKS
static unsigned fault_on_cpu; /* tern.test.apfault=N: CPU N faults once online */
static unsigned fatal_starting; /* tern.test.apstartfatal=N: CPU 0 panics as CPU N starts */
static int share_test;        /* tern.test.smpshare=1: smp_selftest.h */
static unsigned late_cpu;     /* tern.test.aplate=N: CPU N's first try is held */
static uint32_t late_hold;    /* its APIC id + 1, once known */
static int late_after_boot;   /* tern.test.aplateboot=N: held until after boot */
static unsigned slow_cpu;     /* tern.test.apslow=N: CPU N held after its claim */
#endif

static const char *role_text(enum cpu_role r)
{
    switch (r) {
    case CPU_ROLE_BOOT:
        return "network and broker";
    case CPU_ROLE_STORAGE:
        return "storage (parked until the store opens; then the store's threads run here)";
    case CPU_ROLE_NETWORK:
        return "network (idle until the multi-core broker lands)";
    }
    return "?";
}

void smp_boot_cpu_init(void)
{
    struct percpu *c = &cpus[0];
    c->self = c;
    c->id = 0;
    c->role = CPU_ROLE_BOOT;
    atomic_store(&c->state, CPU_ONLINE);
    wrmsr(MSR_GS_BASE, (uint64_t)c);
    boot_ready = 1;
}

unsigned smp_cpu_id(void) { return boot_ready ? this_cpu()->id : 0; }
struct percpu *smp_this_cpu(void) { return boot_ready ? this_cpu() : &cpus[0]; }
unsigned smp_online(void) { return nonline; }
int smp_stopping(void) { return atomic_load(&stopping); }

/* A free run of TRAMPOLINE_PAGES pages below LOW_LIMIT from the memory map
 * (the frame allocator never hands out the first 1 MiB), or 0. */
static uint64_t find_low_pages(const struct boot_info *bi)
{
    uint64_t best = 0;
    for (unsigned i = 0; i < bi->nregions; i++) {
        const struct mem_region *r = &bi->regions[i];
        if (r->type != MEM_USABLE)
            continue;
        uint64_t start = (r->base + PAGE_SIZE - 1) & ~(uint64_t)(PAGE_SIZE - 1);
        uint64_t end = (r->base + r->len) & ~(uint64_t)(PAGE_SIZE - 1);
        if (start < 0x1000)
            start = 0x1000; /* page 0: real-mode IVT, and the null guard */
        if (end > LOW_LIMIT)
            end = LOW_LIMIT;
        if (end > start && end - start >= TRAMPOLINE_PAGES * PAGE_SIZE) {
            uint64_t at = end - TRAMPOLINE_PAGES * PAGE_SIZE;
            if (at > best)
                best = at;
        }
    }
    return best;
}

/* Add the page's base pa to one of the blob's 32-bit offsets, in the copy. */
static void patch(uint8_t *page, const char *field, uint64_t pa)
{
    uint8_t *at = page + (field - trampoline_start);
    uint32_t v;
    memcpy(&v, at, sizeof v);
    v += (uint32_t)pa;
    memcpy(at, &v, sizeof v);
}

/* The blob to pa, once (a late AP may be running it: it must not change
 * under it), then for each AP its page tables and parameters, and last
 * the claim that lets c's CPU, and only it, go on. */
static void trampoline_prepare(uint64_t pa, const struct percpu *c)
{
    uint8_t *page = phys_to_virt(pa);
    if (!tparams) {
        if ((size_t)(trampoline_end - trampoline_params) != sizeof *tparams)
            panic("smp: trampoline.S's parameter block and smp.c's differ");
        memcpy(page, trampoline_start, (size_t)(trampoline_end - trampoline_start));
        patch(page, trampoline_gdt_ptr + 2, pa);
        patch(page, trampoline_far32, pa);
        patch(page, trampoline_far64, pa);
        tparams = (struct trampoline_params *)(page + (trampoline_params - trampoline_start));
    }
    uint64_t *pml4 = phys_to_virt(pa + PAGE_SIZE);
    uint64_t *pdpt = phys_to_virt(pa + 2 * PAGE_SIZE);
    uint64_t *pd = phys_to_virt(pa + 3 * PAGE_SIZE);
    memset(pml4, 0, 3 * PAGE_SIZE);
    const uint64_t *kpml4 = phys_to_virt(kernel_cr3 & 0x000ffffffffff000ull);
    for (unsigned i = 256; i < 512; i++)
        pml4[i] = kpml4[i];
    pml4[0] = (pa + 2 * PAGE_SIZE) | 3;
    pdpt[0] = (pa + 3 * PAGE_SIZE) | 3;
    pd[0] = 0x83; /* 0..2 MiB, present, writable, 2 MiB page: the trampoline runs here */
    struct trampoline_params *p = tparams;
    p->cr3 = pa + PAGE_SIZE;
    p->stack = c->stack_top;
    p->percpu = (uint64_t)c;
    extern _Noreturn void smp_ap_entry(struct percpu *c);
    p->entry = (uint64_t)smp_ap_entry;
#ifdef TERN_TEST_HOOKS
    if (late_cpu && late_cpu == c->id && !late_hold)
        late_hold = c->apic_id + 1;
    uint32_t hold = late_hold;
    if (slow_cpu && slow_cpu == c->id)
        hold = (c->apic_id + 1) | TRAMP_CLAIMED;
    __atomic_store_n(&p->hold, hold, __ATOMIC_RELAXED);
#endif
    /* Release: the parameters before the claim that lets the AP read them
     * (its locked compare-and-swap reads this); the fence keeps all of it
     * before the start-up IPI's write to the local APIC. */
    __atomic_store_n(&p->claim, c->apic_id + 1, __ATOMIC_RELEASE);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
}

static int wait_online(const struct percpu *c, uint64_t until_ns)
{
    while (clock_mono_ns() < until_ns) {
        if (atomic_load_explicit(&c->state, memory_order_acquire) == CPU_ONLINE)
            return 1;
        cpu_relax();
    }
    return atomic_load_explicit(&c->state, memory_order_acquire) == CPU_ONLINE;
}

static int start_ap(uint64_t tramp, struct percpu *c)
{
    if (!c->stack_top) /* else those of a CPU that never took its claim */
        c->stack_top = stack_alloc(AP_STACK_PAGES);
    for (unsigned i = 0; i < SMP_IST_STACKS; i++)
        if (!c->ist_top[i])
            c->ist_top[i] = stack_alloc(AP_IST_PAGES);
    trampoline_prepare(tramp, c);
    atomic_store_explicit(&c->state, CPU_STARTING, memory_order_release);
    /* Intel SDM vol. 3 8.4.4.1: INIT, 10 ms, SIPI, 200 us, SIPI. The
     * second SIPI is skipped once the AP is already on its way. */
    lapic_send_ipi(c->apic_id, ICR_INIT);
    delay_ms(10);
    unsigned vec = (unsigned)(tramp >> 12);
    lapic_send_ipi(c->apic_id, ICR_STARTUP | vec);
#ifdef TERN_TEST_HOOKS
    if (fatal_starting && fatal_starting == c->id)
        panic("selftest: a fatal error while an AP starts");
#endif
    if (wait_online(c, clock_mono_ns() + 200000))
        return 1;
    lapic_send_ipi(c->apic_id, ICR_STARTUP | vec);
    if (wait_online(c, clock_mono_ns() + (uint64_t)AP_WAIT_MS * 1000000))
        return 1;
    /* Its window closes. Taken meanwhile, the claim means it is on its
     * way and will use its slot: wait for it. Else it never can. */
    uint32_t was = __atomic_exchange_n(&tparams->claim, 0, __ATOMIC_SEQ_CST);
    if (!(was & TRAMP_CLAIMED))
        return 0;
    uint64_t closed = clock_mono_ns();
    if (wait_online(c, closed + (uint64_t)AP_CLAIMED_WAIT_MS * 1000000)) {
        kprintf("tern: smp: CPU with APIC id %u had claimed its start in time and came online "
                "%llu ms after its window closed\n", c->apic_id,
                (unsigned long long)((clock_mono_ns() - closed) / 1000000));
        return 1;
    }
    panic("smp: an AP took its claim but did not come online; it may yet write its slot");
}

/* Name the CPUs that lost their claim since the last call (the
 * trampoline's bitmap; CPU 0 only). */
static void report_late(void)
{
    for (unsigned w = 0; tparams && w < 8; w++) {
        uint32_t bits = __atomic_load_n(&tparams->late[w], __ATOMIC_ACQUIRE) & ~late_named[w];
        late_named[w] |= bits;
        for (unsigned b = 0; b < 32; b++)
            if (bits >> b & 1)
                kprintf("tern: smp: CPU with APIC id %u arrived after its start window had "
                        "closed: halted before touching any CPU's data, not used\n", w * 32 + b);
    }
}

void smp_poll_late(uint64_t now_ns)
{
    if (!tparams || now_ns < late_next_ns)
        return;
    late_next_ns = now_ns + 1000000000ull;
#ifdef TERN_TEST_HOOKS
    /* Let the held CPU go at the main loop's first look: it then arrives
     * after every start window and after smp_start's report, so only a
     * later look can name it. */
    if (late_after_boot && late_hold && __atomic_load_n(&tparams->hold, __ATOMIC_RELAXED)) {
        kprintf("tern: smp: selftest: letting APIC id %u go on, after the boot\n",
                late_hold - 1);
        __atomic_store_n(&tparams->hold, 0, __ATOMIC_RELEASE);
    }
#endif
    report_late();
}

/* The wake IPI's handler: the interrupt itself ended the hlt; the woken
 * loop looks for its work. */
static void on_wake(struct trap_frame *tf)
{
    (void)tf;
    lapic_eoi();
}

void smp_wake(unsigned id)
{
    if (id >= ncpus || id == smp_cpu_id() || !wake_vector ||
        atomic_load_explicit(&cpus[id].state, memory_order_acquire) != CPU_ONLINE)
        return;
    /* The work's publication (a lock release, a plain store) before the
     * look at the flag: the store-load order only a full fence gives. */
    atomic_thread_fence(memory_order_seq_cst);
    struct percpu *me = smp_this_cpu();
    if (atomic_load(&cpus[id].sleeping)) {
        lapic_send_ipi(cpus[id].apic_id, wake_vector); /* fixed delivery, edge */
        me->ipis_sent++;
    } else {
        me->ipis_skipped++;
    }
}

void smp_sleep_idle(void)
{
    smp_this_cpu()->halts++;
    cpu_idle();
}

int smp_get_counters(unsigned id, struct smp_counters *out)
{
    *out = (struct smp_counters){0};
    if (id >= ncpus || atomic_load_explicit(&cpus[id].state, memory_order_acquire) != CPU_ONLINE)
        return 0;
    const volatile struct percpu *c = &cpus[id];
    *out = (struct smp_counters){c->ipis_sent, c->ipis_skipped, c->halts};
    return 1;
}

void smp_sleep_begin(void)
{
    atomic_store(&smp_this_cpu()->sleeping, 1); /* seq_cst: before the last look */
}

void smp_sleep_end(void)
{
    atomic_store_explicit(&smp_this_cpu()->sleeping, 0, memory_order_relaxed);
}

int smp_run_role(int role, void (*fn)(void))
{
    if (smp_cpu_id() != 0)
        panic("smp_run_role called on an application processor");
    for (unsigned i = 1; i < ncpus; i++) {
        struct percpu *c = &cpus[i];
        if ((int)c->role != role ||
            atomic_load_explicit(&c->state, memory_order_acquire) != CPU_ONLINE)
            continue;
        void (*none)(void) = NULL;
        if (!atomic_compare_exchange_strong_explicit(&c->work, &none, fn, memory_order_release,
                                                     memory_order_relaxed))
            panic("smp_run_role: that CPU already has its work");
        /* Always: the parked loop does not flag its sleep (its timer would
         * find the work within a tick anyway). */
        lapic_send_ipi(c->apic_id, wake_vector);
        return (int)i;
    }
    return -1;
}

void smp_start(const struct boot_info *bi)
{
    kernel_cr3 = read_cr3();
    if (!wake_vector)
        wake_vector = trap_alloc_vector(on_wake);
    cpus[0].apic_id = lapic_id();
    uint8_t *buf = kmalloc(MADT_MAX_LEN);
    struct madt_info *m = kmalloc(sizeof *m);
    const char *err = "no memory for the table";
    long len = buf && m ? acpi_table("APIC", buf, MADT_MAX_LEN, &err) : -1;
    if (len >= 0 && madt_parse(buf, (size_t)len, m, &err) < 0)
        len = -1;
    if (len < 0) {
        kprintf("tern: smp: no usable ACPI MADT (%s): CPU 0 only\n", err ? err : "?");
        kfree(buf);
        kfree(m);
        return;
    }
#ifdef TERN_TEST_HOOKS
    char arg[8];
    if (bootinfo_arg(bi, "tern.test.apfault", arg, sizeof arg) && arg[0] >= '1' && arg[0] <= '9')
        fault_on_cpu = (unsigned)(arg[0] - '0');
    if (bootinfo_arg(bi, "tern.test.apstartfatal", arg, sizeof arg) && arg[0] >= '1' &&
        arg[0] <= '9')
        fatal_starting = (unsigned)(arg[0] - '0');
    share_test = bootinfo_arg(bi, "tern.test.smpshare", arg, sizeof arg) && arg[0] == '1';
    if (bootinfo_arg(bi, "tern.test.aplate", arg, sizeof arg) && arg[0] >= '1' && arg[0] <= '9')
        late_cpu = (unsigned)(arg[0] - '0');
    if (bootinfo_arg(bi, "tern.test.aplateboot", arg, sizeof arg) && arg[0] >= '1' &&
        arg[0] <= '9') {
        late_cpu = (unsigned)(arg[0] - '0');
        late_after_boot = 1;
    }
    if (bootinfo_arg(bi, "tern.test.apslow", arg, sizeof arg) && arg[0] >= '1' && arg[0] <= '9')
        slow_cpu = (unsigned)(arg[0] - '0');
#endif
    uint64_t tramp = find_low_pages(bi);
    kprintf("tern: smp: MADT lists %u enabled CPU(s), %u online-capable (not started: no "
            "hot-plug), %u disabled; trampoline page %#llx\n",
            m->cpus_enabled, m->cpus_online_capable, m->cpus_disabled,
            (unsigned long long)tramp);
    for (unsigned i = 0; i < m->ncpus; i++) {
        const struct madt_cpu *mc = &m->cpu[i];
        if (!mc->enabled || mc->apic_id == cpus[0].apic_id)
            continue;
        if (mc->apic_id > 254) {
            kprintf("tern: smp: CPU with APIC id %u not started: above xAPIC's 254\n",
                    mc->apic_id);
            continue;
        }
        if (ncpus >= SMP_MAX_CPUS) {
            kprintf("tern: smp: CPU with APIC id %u not started: more than %u CPUs\n",
                    mc->apic_id, SMP_MAX_CPUS);
            continue;
        }
        if (!tramp) {
            kprintf("tern: smp: APIC id %u not started: no free page below 1 MiB for the "
                    "trampoline\n", mc->apic_id);
            continue;
        }
        struct percpu *c = &cpus[ncpus];
        c->self = c;
        c->id = ncpus;
        c->apic_id = mc->apic_id;
        c->role = ncpus == 1 ? CPU_ROLE_STORAGE : CPU_ROLE_NETWORK;
        if (start_ap(tramp, c)) {
            ncpus++;
            nonline++;
        } else {
            kprintf("tern: smp: CPU with APIC id %u did not come up within %u ms; going on "
                    "without it\n", c->apic_id, AP_WAIT_MS);
            /* It cannot take the slot now (start_ap closed the claim): the
             * slot and the stacks go to the next CPU. */
            struct percpu keep = *c;
            memset(c, 0, sizeof *c);
            c->stack_top = keep.stack_top;
            memcpy(c->ist_top, keep.ist_top, sizeof c->ist_top);
        }
    }
    kfree(buf);
    kfree(m);
    for (unsigned i = 0; i < ncpus; i++)
        kprintf("tern: smp: CPU %u (APIC id %u): %s\n", i, cpus[i].apic_id,
                role_text(cpus[i].role));
    kprintf("tern: smp: %u CPU(s) online\n", nonline);
#ifdef TERN_TEST_HOOKS
    if (late_hold && tparams && !late_after_boot) {
        kprintf("tern: smp: selftest: letting APIC id %u go on, past its start window\n",
                late_hold - 1);
        __atomic_store_n(&tparams->hold, 0, __ATOMIC_RELEASE);
        /* Until it marked itself late: a loaded host may run its vCPU late. */
        uint64_t until = clock_mono_ns() + 20000000000ull;
        unsigned id = late_hold - 1;
        while (!(__atomic_load_n(&tparams->late[id / 32], __ATOMIC_ACQUIRE) >> id % 32 & 1) &&
               clock_mono_ns() < until)
            cpu_relax();
    }
#endif
    report_late();
#ifdef TERN_TEST_HOOKS
    smp_selftest_boot(share_test);
#endif
}

/* Where an AP's trampoline jumps, on its own stack, interrupts off. Its
 * page tables still are the trampoline's: the kernel's first. */
_Noreturn void smp_ap_entry(struct percpu *c);
_Noreturn void smp_ap_entry(struct percpu *c)
{
    write_cr3(kernel_cr3);
    trap_init_cpu(c->id, c->ist_top); /* reloads %gs: the GS base after it */
    wrmsr(MSR_GS_BASE, (uint64_t)c);
    paging_cpu_init();
    lapic_ap_init();
    atomic_store_explicit(&c->state, CPU_ONLINE, memory_order_release);
    /* A fatal error elsewhere since this CPU's SIPI sent it no NMI (see
     * smp_stop_others): stop here instead of taking up its role. */
    atomic_thread_fence(memory_order_seq_cst);
    if (smp_stopping())
        smp_halt_stopped();
#ifdef TERN_TEST_HOOKS
    if (fault_on_cpu && fault_on_cpu == c->id) {
        delay_ms(200); /* let CPU 0 log the roles first */
        uintptr_t bad = 8;
        __asm__ volatile("" : "+r"(bad)); /* hide the constant from the compiler */
        *(volatile uint64_t *)bad = 1; /* a null-pointer write: the fatal path on an AP */
    }
#endif
    /* Parked until CPU 0 hands it work (smp_run_role: the storage core).
     * The timer or the wake IPI wakes it; interrupts are off from the look
     * at its work to the hlt, so a wake IPI sent in between ends that hlt.
     * An NMI from a fatal error elsewhere stops it (panic.c). */
    for (;;) {
        irq_disable();
        void (*fn)(void) = atomic_load_explicit(&c->work, memory_order_acquire);
        if (fn) {
            irq_enable();
            fn();
            panic("an application processor's work returned");
        }
        cpu_idle();
#ifdef TERN_TEST_HOOKS
        smp_selftest_ap(c);
#endif
    }
}

/* The stop NMI goes to each CPU that is online, one by one, not to "all
 * but self": a CPU that was sent its SIPI but is not online yet may still
 * be in the trampoline, with no IDT that can take an NMI (QEMU then resets
 * the machine at once: a triple fault cutting the report's hold short),
 * and CPUs the kernel never started (hot-plug slots, ones that did not
 * come up) are the firmware's. A starting CPU instead looks at `stopping`
 * itself once online (smp_ap_entry); the seq_cst exchange here and the
 * fence there make sure that at least one side sees the other: the AP is
 * sent the NMI, or it sees `stopping` and halts, or both. */
int smp_stop_others(void)
{
    int expected = 0;
    if (!atomic_compare_exchange_strong(&stopping, &expected, 1))
        return 0;
    /* Every slot, not just the first ncpus: the CPU being started is
     * counted only once start_ap returns, and it may be online already. */
    unsigned me = smp_cpu_id();
    for (unsigned i = 0; i < SMP_MAX_CPUS; i++)
        if (i != me && atomic_load(&cpus[i].state) == CPU_ONLINE)
            lapic_send_nmi(cpus[i].apic_id);
    if (nonline > 1) {
        uint64_t until = clock_mono_ns() + (uint64_t)STOP_WAIT_MS * 1000000;
        while (atomic_load(&stopped) + 1 < nonline && clock_mono_ns() < until)
            cpu_relax();
    }
    return 1;
}

_Noreturn void smp_halt_stopped(void)
{
    /* Counted once: a CPU that stopped itself on arrival may still get the
     * NMI (it was online when the reporter looked) and come here again. */
    if (!boot_ready || atomic_exchange(&this_cpu()->state, CPU_STOPPED) != CPU_STOPPED)
        atomic_fetch_add(&stopped, 1);
    cpu_halt_forever();
}

unsigned smp_stopped_count(void) { return atomic_load(&stopped); }
