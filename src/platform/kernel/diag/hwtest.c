/*
 * hwtest.c - the hardware sections printed for kernel tests (hwtest.h).
 */
#include "diag/hwtest.h"

#include "arch/x86_64/cpu.h"
#include "clock.h"
#include "console.h"
#include "diag/hw.h"
#include "mm/kmalloc.h"

#ifdef TERN_TEST_HOOKS

enum { HWTEST_MAX = DIAG_REPORT_MAX };

_Noreturn void diag_hw_test(const struct diag_env *env)
{
    char *buf = kmalloc(HWTEST_MAX);
    if (!buf) {
        kprintf("tern: diag-hw: no memory\n");
        cpu_halt_forever();
    }
    uint64_t t0 = clock_mono_ns();
    jw w;
    jw_init(&w, buf, HWTEST_MAX);
    jw_obj(&w, NULL);
    jw_u64(&w, "schema", 1);
    diag_hw_write(&w, env);
    uint64_t t1 = clock_mono_ns();
    diag_membw_write(&w);
    uint64_t t2 = clock_mono_ns();
    jw_end(&w);
    size_t len = jw_finish(&w);
    kprintf("tern: diag-hw: hw %llu ms, membw %llu ms, %llu bytes\n",
            (unsigned long long)((t1 - t0) / 1000000), (unsigned long long)((t2 - t1) / 1000000),
            (unsigned long long)len);
    if (!len) {
        kprintf("tern: diag-hw: the JSON did not fit in %u bytes\n", (unsigned)HWTEST_MAX);
        cpu_halt_forever();
    }
    static const char begin[] = "tern: diag-hw: begin\n", end[] = "\ntern: diag-hw: end\n";
    console_write(begin, sizeof begin - 1);
    console_write(buf, len);
    console_write(end, sizeof end - 1);
    cpu_halt_forever();
}

#endif
