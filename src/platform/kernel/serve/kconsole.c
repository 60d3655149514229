/*
 * kconsole.c - the kernel's operator console ops (kconsole.h,
 * src/broker/console.h). They run inside the request's broker_input call
 * on the main loop, so none of them waits: backup-now and scrub-now only
 * ask the store thread (kstore.h, kscrub.h), which does the work at its
 * next idle moment while the loop goes on serving.
 *
 * config-show shows every key of the baked configuration
 * (tern_config_show, as the daemon does), and each file it names by path,
 * size and SHA-256 as the image carries it - the file's bytes never. The
 * server's private key gets no hash either: the image's copy is wiped once
 * wolfSSL has loaded it (bootconf.c), and a hash of a secret tells an
 * operator nothing they need while confirming a guess of the key to anyone
 * who reads the answer. Its path and size (which says little more than its
 * type) are shown.
 */
#include "serve/kconsole.h"

#include "arch/x86_64/cpufeat.h"
#include "bootconf.h"
#include "broker/console.h"
#include "clock.h"
#include "confcheck.h"
#include "config/config_show.h"
#include "crypto/kdiagclock.h"
#include "diag/cryptobench.h"
#include "rng/sha256.h"
#include "serve/kcontend.h"
#include "serve/tcp.h"
#include "store/kdisk_store.h"
#include "store/kscrub.h"
#include "store/kstore.h"

#include <stdio.h>
#include <string.h>

/* The console's view of the kernel: boot-time state, written once. */
struct kconsole {
    tern_config cfg;
    struct kserver *srv;
    struct tsc_info tsc; /* invariant: the TSC may count diag's cycles */
};

static struct kconsole kconsole;

static int fail(char *err, size_t errlen, const char *why)
{
    snprintf(err, errlen, "%s", why);
    return -1;
}

static void hex(const uint8_t *b, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[b[i] >> 4];
        out[2 * i + 1] = digits[b[i] & 0xfu];
    }
    out[2 * n] = '\0';
}

/* One file the configuration names: path, size, SHA-256 (none for the key). */
static void show_file(const struct kconsole *kc, unsigned i, jw *w)
{
    const uint8_t *data;
    size_t len;
    jw_obj(w, NULL);
    jw_str(w, "key", conf_file_key(i));
    jw_str(w, "path", conf_file_value(&kc->cfg, i));
    if (bootconf_file(&kc->cfg, i, &data, &len) != 0) {
        /* A test build's lone configuration carries no files. */
        jw_null(w, "bytes");
        jw_str(w, "bytes_why", "not in the image");
        jw_end(w);
        return;
    }
    jw_u64(w, "bytes", len);
    if (i == CONF_FILE_TLS_KEY) {
        jw_null(w, "sha256");
        jw_str(w, "sha256_why", "the server's private key: neither its bytes nor a hash");
    } else {
        uint8_t sum[SHA256_BYTES];
        char text[2 * SHA256_BYTES + 1];
        sha256(data, len, sum);
        hex(sum, sizeof sum, text);
        jw_str(w, "sha256", text);
    }
    jw_end(w);
}

static int config_show(void *ctx, jw *w, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    const struct kconsole *kc = ctx;
    jw_str(w, "file", bootconf_name());
    jw_obj(w, "config");
    tern_config_show(&kc->cfg, w);
    jw_end(w);
    jw_arr(w, "files"); /* the kernel carries them in its image: what it holds */
    for (unsigned i = 0; i < CONF_FILE_COUNT; i++)
        if (conf_file_value(&kc->cfg, i)[0])
            show_file(kc, i, w);
    jw_end(w);
    return 0;
}

static int no_disk_store(char *err, size_t errlen)
{
    return fail(err, errlen,
                "no disk store: this broker keeps retained messages and sessions in RAM only");
}

static int backup_now(void *ctx, jw *w, char *err, size_t errlen)
{
    const struct kconsole *kc = ctx;
    if (kc->srv->store == NULL)
        return no_disk_store(err, errlen);
    struct kstore_backup_state st;
    kstore_backup_now(kc->srv->store, &st);
    jw_bool(w, "started", !st.running);
    jw_bool(w, "already_running", st.running); /* the request joins it */
    jw_u64(w, "backups_done", st.done);
    jw_u64(w, "backups_failed", st.failed);
    jw_str(w, "outcome", "$SYS/broker/store/backups/done or .../failed counts it");
    return 0;
}

static int scrub_now(void *ctx, jw *w, char *err, size_t errlen)
{
    const struct kconsole *kc = ctx;
    if (kc->srv->store == NULL)
        return no_disk_store(err, errlen);
    struct kscrub *sc = kdisk_store_scrubber();
    if (sc == NULL)
        return fail(err, errlen, "the scrubber is off (store.scrub_rate = 0)");
    int running = kscrub_request(sc, clock_mono_ns() / 1000u);
    broker_store_status bs;
    memset(&bs, 0, sizeof bs);
    kscrub_status(sc, &bs);
    jw_bool(w, "started", !running);
    jw_bool(w, "already_running", running); /* that pass goes on */
    jw_u64(w, "rate_kib_s", kc->cfg.store_scrub_rate_kib);
    jw_u64(w, "passes", bs.scrub_passes);
    jw_u64(w, "progress_pct", bs.scrub_progress_pct);
    jw_u64(w, "corrupt", bs.scrub_corrupt);
    jw_str(w, "outcome", "$SYS/broker/store/scrub/passes counts it");
    return 0;
}

/* The crypto and handshake measurements (src/diag), which hold the main
 * loop for about BROKER_CONSOLE_DIAG_BUDGET_MS: every connection waits that
 * long, once. The hardware report is not redone here: it is the
 * diagnostics mode's ($SYS/diag/report under diag-serve). */
static int diag(void *ctx, jw *w, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    const struct kconsole *kc = ctx;
    struct diag_clock clk = kdiag_clock(&kc->tsc);
    jw_u64(w, "budget_ms", BROKER_CONSOLE_DIAG_BUDGET_MS);
    kcontend_write(w, kc->srv->store); /* first: before the measurement's own */
    diag_crypto_write(w, &clk, BROKER_CONSOLE_DIAG_BUDGET_MS);
    jw_null(w, "hardware");
    jw_str(w, "hardware_why", "the diagnostics boot entries report it ($SYS/diag/report "
                              "under diag-serve)");
    return 0;
}

/* The kernel's filter of the core's and the connection layer's log lines
 * (serve.c core_log) and the layer's own; the core has changed its own
 * already. */
static int log_level(void *ctx, broker_log_level level, jw *w, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    struct kconsole *kc = ctx;
    kc->srv->log_level = level;
    conn_server_set_log_level(kc->srv->cs, level);
    jw_str(w, "kernel_log_level", broker_log_level_name(level));
    return 0;
}

void kconsole_install(broker *b, const tern_config *cfg, struct kserver *srv)
{
    kconsole.cfg = *cfg;
    kconsole.srv = srv;
    struct cpu_features f;
    cpu_features_read(&f);
    /* The same CPUID bit tsc_calibrate reads; diag's clock needs no rate. */
    kconsole.tsc = (struct tsc_info){.hz = 0, .invariant = f.invariant_tsc};
    broker_console_ops ops = {
        .ctx = &kconsole,
        .config_show = config_show,
        .backup_now = backup_now,
        .scrub_now = scrub_now,
        .diag = diag,
        .log_level = log_level,
    };
    broker_set_console_ops(b, &ops);
}
