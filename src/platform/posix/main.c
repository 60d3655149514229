/*
 * main.c - ternd, the Linux daemon: command line, configuration file, the
 * files it names (ACL, TLS certificates and keys), then the event loop.
 * --check stops before the loop, after a read-only look at the store.
 * Exit status: 0 after a clean shutdown (or a valid --check), 1 when
 * --check finds the configuration invalid or the daemon fails at run time,
 * 2 for a usage error or a configuration (or a file it names) that prevents
 * the daemon from starting.
 */
#define _DEFAULT_SOURCE /* setenv, unsetenv */

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/config.h"
#include "platform/posix/cli.h"
#include "platform/posix/diagclock.h"
#include "platform/posix/file.h"
#include "platform/posix/load.h"
#include "platform/posix/log.h"
#include "platform/posix/loop.h"
#include "platform/posix/bridges.h"
#include "platform/posix/storecheck.h"
#include "version.h"

enum {
    CONFIG_MAX_BYTES = 1024 * 1024,
    EXIT_CANNOT_START = 2,
};

/* Read, parse and check that the daemon can run what the file describes,
 * including the ACL file and TLS files it names (into assets). On failure
 * err holds one "WHERE: what" line. */
static bool load_config(const char *path, tern_config *cfg, tern_assets *assets, char *err,
                        size_t err_size)
{
    char *text = NULL; /* owned, from tern_read_file */
    size_t len = 0;
    bool ok = false;

    if (!tern_read_file(path, CONFIG_MAX_BYTES, &text, &len, err, err_size))
        goto done;
    if (!tern_config_parse(cfg, path, text, len, err, err_size))
        goto done;
    if (cfg->listener_plain.family == TERN_ADDR_NONE &&
        cfg->listener_tls.family == TERN_ADDR_NONE && cfg->listener_ws.family == TERN_ADDR_NONE &&
        cfg->listener_wss.family == TERN_ADDR_NONE) {
        if (snprintf(err, err_size,
                     "%s: no listener configured (set listener.tls or listener.plain)", path) < 0)
            err[0] = '\0';
        goto done;
    }
    ok = tern_assets_load(cfg, path, assets, err, err_size);
    if (ok && !tern_bridges_check(cfg, path, err, err_size)) {
        tern_assets_free(assets);
        ok = false;
    }
done:
    free(text);
    return ok;
}

static int run(const tern_config *cfg, const char *config_path, tern_assets *assets)
{
    tern_log log;
    tern_loop *loop;
    int rc;

    tern_log_init(&log, cfg->log_level, STDERR_FILENO);
    /* Not an error: the same file may configure the unikernel image. */
    if (cfg->net.ipv4.set)
        tern_logf(&log, BROKER_LOG_WARN, "%s: net.ipv4 and net.gateway set the unikernel's "
                  "address; ternd uses the host's network and ignores them", config_path);
    if (cfg->time.sntp_servers[0] != '\0')
        tern_logf(&log, BROKER_LOG_WARN, "%s:%zu: time.sntp_servers sets the unikernel's "
                  "clock; ternd keeps the host's clock and ignores time.*",
                  config_path, tern_config_line(cfg, "time.sntp_servers"));
    if (tern_config_line(cfg, "telemetry.interval") != 0)
        tern_logf(&log, BROKER_LOG_WARN, "%s:%zu: telemetry.interval paces the unikernel's "
                  "telemetry journal on its disk; ternd has none and ignores it",
                  config_path, tern_config_line(cfg, "telemetry.interval"));
    if (tern_config_line(cfg, "store.disk") != 0)
        tern_logf(&log, BROKER_LOG_WARN, "%s:%zu: store.disk chooses the unikernel's disk; "
                  "ternd keeps its store in the file store.path names and ignores it",
                  config_path, tern_config_line(cfg, "store.disk"));
    loop = tern_loop_create(cfg, config_path, assets, &log);
    if (loop == NULL)
        return EXIT_FAILURE;
    rc = tern_loop_run(loop);
    tern_loop_destroy(loop);
    return rc;
}

/* The loop's large buffers (a subscriber's output under a flood, input
 * kept for the next turn) are transient: freed and allocated again turn
 * after turn. glibc returns such memory to the kernel as soon as it is
 * freed (heap trimming above 128 KiB, a mapping per large block), and the
 * next allocation faults every page back in: measured at 63,000 page
 * faults a second and half the QoS 0 flood's throughput. Keep it: trim
 * only above 64 MiB of free heap, map only blocks above 32 MiB. */
static void tune_malloc(void)
{
    (void)mallopt(M_TRIM_THRESHOLD, 64 * 1024 * 1024);
    (void)mallopt(M_MMAP_THRESHOLD, 32 * 1024 * 1024);
}

/* glibc's per-thread cache keeps up to seven freed blocks of each size up
 * to 1 KiB out of its free lists, and malloc_trim cannot give back the
 * pages they sit on. After a burst of TLS handshakes (each allocates and
 * frees a few hundred small blocks of wolfSSL's) those are the last
 * handshakes' blocks, scattered over the heap: measured at ~150 KiB that
 * stayed resident for good, ~75 bytes per idle mutual-TLS connection at
 * 2,000 (docs/PERFORMANCE.md, "Idle mutual-TLS connections"). The daemon's
 * own small blocks come from its pool (pool.h), and its large buffers are
 * above the cache's sizes, so the cache buys little here. glibc reads the
 * setting only from the environment at start, hence the one exec of
 * itself with glibc.malloc.tcache_count=0 (ADR-062); an operator's own
 * tcache_count in GLIBC_TUNABLES is left alone, and when the exec fails the
 * daemon runs on with the cache. Not under AddressSanitizer, whose
 * allocator is not glibc's. */
static void exec_without_malloc_cache(char **argv)
{
#if !defined(__SANITIZE_ADDRESS__)
    static const char setting[] = "glibc.malloc.tcache_count=0";
    const char *old = getenv("GLIBC_TUNABLES");
    char value[1024];

    if (old != NULL && strstr(old, "glibc.malloc.tcache_count") != NULL)
        return; /* ours after the exec, or the operator's */
    if (snprintf(value, sizeof value, "%s%s%s", old != NULL ? old : "", old != NULL ? ":" : "",
                 setting) >= (int)sizeof value)
        return;
    if (setenv("GLIBC_TUNABLES", value, 1) != 0)
        return;
    (void)execv("/proc/self/exe", argv);
    /* Still here: no /proc, or no exec. The cache costs memory only. */
    if (old != NULL)
        (void)setenv("GLIBC_TUNABLES", old, 1);
    else
        (void)unsetenv("GLIBC_TUNABLES");
#else
    (void)argv;
#endif
}

int main(int argc, char **argv)
{
    char err[TERN_CONFIG_ERR_SIZE + TERN_LOAD_ERR_SIZE];
    tern_assets assets = {NULL, NULL, NULL};
    tern_config cfg;
    tern_cli cli;

    if (!tern_cli_parse(argc, argv, &cli, err, sizeof err)) {
        fprintf(stderr, "ternd: %s\nTry 'ternd --help'.\n", err);
        return TERN_EXIT_USAGE;
    }
    switch (cli.mode) {
    case TERN_CLI_HELP:
        return fputs(tern_cli_usage(), stdout) < 0 ? EXIT_FAILURE : 0;
    case TERN_CLI_VERSION:
        return printf("tern %s\n", TERN_VERSION) < 0 ? EXIT_FAILURE : 0;
    case TERN_CLI_DIAG:
        return posix_diag_run(cli.budget_ms);
    case TERN_CLI_CHECK: {
        char note[sizeof err];

        if (!load_config(cli.config_path, &cfg, &assets, err, sizeof err)) {
            fprintf(stderr, "%s\n", err);
            return EXIT_FAILURE;
        }
        tern_assets_free(&assets);
        if (!tern_check_store(&cfg, cli.config_path, note, sizeof note, err, sizeof err)) {
            fprintf(stderr, "%s\n", err);
            return EXIT_FAILURE;
        }
        if (note[0] != '\0' && printf("%s\n", note) < 0)
            return EXIT_FAILURE;
        return printf("%s: configuration ok\n", cli.config_path) < 0 ? EXIT_FAILURE : 0;
    }
    case TERN_CLI_RUN:
        break;
    }
    exec_without_malloc_cache(argv);
    tune_malloc();
    if (!load_config(cli.config_path, &cfg, &assets, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return EXIT_CANNOT_START;
    }
    return run(&cfg, cli.config_path, &assets);
}
