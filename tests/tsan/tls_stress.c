/*
 * tls_stress.c - one TLS server context shared by several threads, as the
 * daemon's I/O threads share it (ADR-065), under ThreadSanitizer
 * (`make tsan-test`): each thread runs mutual-TLS handshakes and records
 * in memory (tests/unit/test_tls_pair.c) with connections of the context
 * it holds, while the main thread "reloads": it builds a new context every
 * few milliseconds and hands each thread a reference through an SPSC ring
 * (src/ring/spsc.h); a thread swaps at its next round and drops its old
 * reference, and connections of the old context stay open across the
 * swap, so an old context is freed on whichever thread closes its last
 * connection. What it checks: the reference counts and the signature
 * cache (src/tls/sigcache.c, the same client certificates on every
 * thread, so the same slots) are race-free (TSan, halt_on_error), every
 * handshake gives the right identity and operator flag, a certificate
 * from an unknown CA fails on its own connection only, records carry the
 * bytes both ways, and the cache answered some verifications from memory.
 *
 * wolfSSL itself is prebuilt and not instrumented (its WOLFSSL_CTX counts
 * and certificate store are under its own locks in a threaded build).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "test_tls_pair.h"

#include "ring/spsc.h"
#include "tls/internal.h" /* the sigcache's counters */

enum {
    THREADS = 4,
    ROUNDS = 48,       /* handshakes per thread */
    RELOADS = 6,       /* new contexts during the run */
    RING = 16,         /* contexts in flight to one thread (> RELOADS) */
};

typedef struct worker {
    pthread_t thread;
    unsigned index;
    struct spsc_ring ring;          /* main -> this thread: new contexts */
    void *slots[RING];
    tern_tls_server *server;        /* the reference this thread holds */
    tern_tls_client *client, *operator, *intruder; /* shared by all threads */
    unsigned ok, refused, swaps;
    const char *failure;            /* NULL: all as expected */
} worker;

static _Atomic unsigned running;

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

    nanosleep(&ts, NULL);
}

/* Move records both ways and check the bytes arrived. */
static bool exchange(tls_test_pair *p, unsigned round)
{
    char msg[64];
    size_t n = (size_t)snprintf(msg, sizeof msg, "round %u", round);
    size_t before_s = p->server_plain_len, before_c = p->client_plain_len;

    if (!tern_tls_write(p->client, (const uint8_t *)msg, n) ||
        !tern_tls_write(p->server, (const uint8_t *)msg, n))
        return false;
    tls_test_pump(p);
    return p->server_plain_len == before_s + n && p->client_plain_len == before_c + n &&
           memcmp(p->server_plain + before_s, msg, n) == 0 &&
           memcmp(p->client_plain + before_c, msg, n) == 0;
}

static void *run(void *arg)
{
    worker *w = arg;
    tls_test_pair kept; /* the previous round's pair, open across a swap */
    bool have_kept = false;

    for (unsigned r = 0; r < ROUNDS && w->failure == NULL; r++) {
        void *next;
        tls_test_pair p;
        tern_tls_client *cl;
        unsigned kind = (r + w->index) % 5; /* 0: intruder, 1-2: operator, 3-4: client */

        while (spsc_pop(&w->ring, &next)) { /* a reload: the newest context wins */
            tern_tls_server_release(w->server);
            w->server = next;
            w->swaps++;
        }
        cl = kind == 0 ? w->intruder : kind <= 2 ? w->operator : w->client;
        if (!tls_test_pair_open(&p, w->server, cl)) {
            w->failure = "out of memory";
            break;
        }
        tls_test_pump(&p);
        if (kind == 0) {
            if (tern_tls_state_of(p.server) != TERN_TLS_FAILED ||
                tern_tls_failure_of(p.server) != TERN_TLS_FAIL_UNKNOWN_CA)
                w->failure = "a certificate from an unknown CA was not refused as such";
            w->refused++;
            tls_test_pair_close(&p);
            continue;
        }
        if (tern_tls_state_of(p.server) != TERN_TLS_ESTABLISHED)
            w->failure = "handshake failed";
        else if (strcmp(tern_tls_identity(p.server) ? tern_tls_identity(p.server) : "",
                        kind <= 2 ? "dev-operator" : "dev-client") != 0)
            w->failure = "wrong identity";
        else if (tern_tls_is_operator(p.server) != (kind <= 2))
            w->failure = "wrong operator flag";
        else if (!exchange(&p, r))
            w->failure = "records did not carry the bytes";
        else
            w->ok++;
        if (have_kept) {
            if (w->failure == NULL && !exchange(&kept, r))
                w->failure = "a connection kept across a reload stopped working";
            tls_test_pair_close(&kept);
        }
        kept = p;
        have_kept = true;
    }
    if (have_kept)
        tls_test_pair_close(&kept);
    atomic_fetch_sub(&running, 1);
    return NULL;
}

static tern_tls_server *server(void)
{
    tls_test_server_opts o = {0};
    char err[TERN_TLS_ERR_SIZE];
    tern_tls_server *s;

    o.operator_ca = "operator-ca.crt";
    s = tls_test_server(&o, err, sizeof err);
    if (s == NULL) {
        fprintf(stderr, "tls_stress: server context: %s\n", err);
        exit(1);
    }
    return s;
}

int main(void)
{
    static worker ws[THREADS];
    tern_tls_server *first = server(), *last;
    tern_tls_client *client = tls_test_client("ca.crt", "dev-client", TERN_TLS_1_3, TERN_TLS_1_3);
    tern_tls_client *op = tls_test_client("ca.crt", "dev-operator", TERN_TLS_1_3, TERN_TLS_1_3);
    tern_tls_client *intruder = tls_test_client("ca.crt", "intruder", TERN_TLS_1_3, TERN_TLS_1_3);
    unsigned ok = 0, refused = 0, swaps = 0, reloads = 0;
    uint64_t hits, misses;
    int rc = 0;

    if (client == NULL || op == NULL || intruder == NULL)
        return 1;
    atomic_store(&running, THREADS);
    for (unsigned i = 0; i < THREADS; i++) {
        worker *w = &ws[i];

        w->index = i;
        (void)spsc_init(&w->ring, w->slots, RING);
        w->server = tern_tls_server_retain(first);
        w->client = client;
        w->operator = op;
        w->intruder = intruder;
        if (pthread_create(&w->thread, NULL, run, w) != 0) {
            fprintf(stderr, "tls_stress: pthread_create failed\n");
            return 1;
        }
    }
    tern_tls_server_release(first); /* the threads hold it now */
    /* Reloads while the threads work: a reference for each, then ours goes. */
    while (atomic_load(&running) > 0 && reloads < RELOADS) {
        tern_tls_server *s;

        sleep_ms(15);
        s = server();
        for (unsigned i = 0; i < THREADS; i++)
            if (!spsc_push(&ws[i].ring, tern_tls_server_retain(s)))
                tern_tls_server_release(s); /* cannot happen: RING > RELOADS */
        tern_tls_server_release(s);
        reloads++;
    }
    for (unsigned i = 0; i < THREADS; i++) {
        void *next;

        (void)pthread_join(ws[i].thread, NULL);
        while (spsc_pop(&ws[i].ring, &next)) { /* never taken: posted after its end */
            tern_tls_server_release(ws[i].server);
            ws[i].server = next;
        }
        if (ws[i].failure != NULL) {
            fprintf(stderr, "tls_stress: thread %u: %s\n", i, ws[i].failure);
            rc = 1;
        }
        ok += ws[i].ok;
        refused += ws[i].refused;
        swaps += ws[i].swaps;
    }
    /* Every thread ends holding the newest context: its table was shared. */
    last = ws[0].server;
    hits = atomic_load(&last->sigcache.hits);
    misses = atomic_load(&last->sigcache.misses);
    for (unsigned i = 0; i < THREADS; i++)
        tern_tls_server_release(ws[i].server);
    tern_tls_client_release(client);
    tern_tls_client_release(op);
    tern_tls_client_release(intruder);
    printf("tls_stress: %u threads, %u handshakes ok, %u refused (unknown CA), %u reloads, "
           "%u swaps; newest context's cache: %llu hits, %llu misses\n",
           THREADS, ok, refused, reloads, swaps, (unsigned long long)hits,
           (unsigned long long)misses);
    if (ok + refused != THREADS * ROUNDS) {
        fprintf(stderr, "tls_stress: %u of %u handshakes ran\n", ok + refused, THREADS * ROUNDS);
        rc = 1;
    }
    return rc;
}
