/*
 * test_tls_pair.c - see test_tls_pair.h. Not a test file itself: the
 * helpers every test_tls_*.c uses.
 */
#include "test_tls_pair.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

tern_tls_bytes tls_test_file(const char *name)
{
    const char *dir = getenv("TERN_TEST_DATA");
    tern_tls_bytes b = {NULL, 0};
    char path[512];
    uint8_t *data = NULL;
    FILE *f;
    long size;

    if (snprintf(path, sizeof path, "%s/tls/%s", dir ? dir : "tests/unit/data", name) >=
        (int)sizeof path)
        return b;
    f = fopen(path, "rb");
    if (f == NULL) {
        fprintf(stderr, "  cannot open %s (run the unit tests from the repository root)\n",
                path);
        return b;
    }
    if (fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (data = malloc((size_t)size)) != NULL && fread(data, 1, (size_t)size, f) == (size_t)size) {
        b.data = data;
        b.len = (size_t)size;
        data = NULL;
    }
    free(data);
    fclose(f);
    return b;
}

static void free_bytes(tern_tls_bytes *b)
{
    free((void *)b->data);
    b->data = NULL;
    b->len = 0;
}

tern_tls_server *tls_test_server(const tls_test_server_opts *o, char *err, size_t err_size)
{
    static const tls_test_server_opts defaults = {0};
    tern_tls_server_config cfg;
    tern_tls_server *s;
    char local_err[TERN_TLS_ERR_SIZE];

    if (o == NULL)
        o = &defaults;
    memset(&cfg, 0, sizeof cfg);
    cfg.cert_chain = tls_test_file(o->cert ? o->cert : "server.crt");
    cfg.key = tls_test_file(o->key ? o->key : "server.key");
    if (o->client_ca == NULL || o->client_ca[0] != '\0')
        cfg.client_ca = tls_test_file(o->client_ca ? o->client_ca : "ca.crt");
    if (o->operator_ca != NULL)
        cfg.operator_ca = tls_test_file(o->operator_ca);
    cfg.operators = o->operators;
    cfg.min_version = o->min_version ? o->min_version : TERN_TLS_1_3;
    cfg.require_client_cert = !o->optional_client_cert;
    cfg.identity = o->identity;
    s = tern_tls_server_create(&cfg, err ? err : local_err, err ? err_size : sizeof local_err);
    free_bytes(&cfg.cert_chain);
    free_bytes(&cfg.key);
    free_bytes(&cfg.client_ca);
    free_bytes(&cfg.operator_ca);
    return s;
}

tern_tls_client *tls_test_client(const char *ca_name, const char *cert, tern_tls_version min,
                                 tern_tls_version max)
{
    tern_tls_client_config cfg;
    tern_tls_client *cl;
    char name[128], err[TERN_TLS_ERR_SIZE];

    memset(&cfg, 0, sizeof cfg);
    cfg.ca = tls_test_file(ca_name);
    if (cert != NULL) {
        snprintf(name, sizeof name, "%s.crt", cert);
        cfg.cert_chain = tls_test_file(name);
        snprintf(name, sizeof name, "%s.key", cert);
        cfg.key = tls_test_file(name);
    }
    cfg.min_version = min;
    cfg.max_version = max;
    cl = tern_tls_client_create(&cfg, err, sizeof err);
    if (cl == NULL)
        fprintf(stderr, "  test client: %s\n", err);
    free_bytes(&cfg.ca);
    free_bytes(&cfg.cert_chain);
    free_bytes(&cfg.key);
    return cl;
}

bool tls_test_pair_open(tls_test_pair *p, tern_tls_server *s, tern_tls_client *cl)
{
    memset(p, 0, sizeof *p);
    p->client = tern_tls_client_conn(cl);
    p->server = tern_tls_server_conn(s);
    p->client_plain = malloc(TLS_TEST_PLAIN_CAP);
    p->server_plain = malloc(TLS_TEST_PLAIN_CAP);
    if (p->client == NULL || p->server == NULL || p->client_plain == NULL ||
        p->server_plain == NULL) {
        tls_test_pair_close(p);
        return false;
    }
    return true;
}

void tls_test_pair_close(tls_test_pair *p)
{
    tern_tls_conn_free(p->client);
    tern_tls_conn_free(p->server);
    free(p->client_plain);
    free(p->server_plain);
    memset(p, 0, sizeof *p);
}

/* Hand everything `from` has queued to `to`; true when bytes moved. */
static bool move(tern_tls_conn *from, tern_tls_conn *to, uint8_t *plain, size_t *plain_len,
                 size_t read_cap)
{
    size_t len, got = 0, room = TLS_TEST_PLAIN_CAP - *plain_len;
    const uint8_t *out = tern_tls_out_peek(from, &len);
    size_t cap = read_cap != 0 && read_cap < room ? read_cap : room;

    (void)tern_tls_read(to, out, len, plain + *plain_len, cap, &got);
    *plain_len += got;
    tern_tls_out_consume(from, len);
    /* Drain what a small read_cap left buffered. */
    while (tern_tls_has_input(to) && *plain_len < TLS_TEST_PLAIN_CAP) {
        room = TLS_TEST_PLAIN_CAP - *plain_len;
        cap = read_cap != 0 && read_cap < room ? read_cap : room;
        (void)tern_tls_read(to, NULL, 0, plain + *plain_len, cap, &got);
        if (got == 0)
            break;
        *plain_len += got;
    }
    return len > 0;
}

int tls_test_pump(tls_test_pair *p)
{
    int rounds = 0;
    size_t got = 0;

    /* A client's first call sends its ClientHello. */
    if (tern_tls_state_of(p->client) == TERN_TLS_HANDSHAKING)
        (void)tern_tls_read(p->client, NULL, 0, p->client_plain, 0, &got);
    for (int i = 0; i < 64; i++) {
        bool a = move(p->client, p->server, p->server_plain, &p->server_plain_len, p->read_cap);
        bool b = move(p->server, p->client, p->client_plain, &p->client_plain_len, p->read_cap);

        if (!a && !b)
            break;
        rounds++;
    }
    return rounds;
}

tern_tls_state tls_test_handshake(tls_test_pair *p, tern_tls_server *s, tern_tls_client *cl)
{
    bool opened = s != NULL && cl != NULL && tls_test_pair_open(p, s, cl);

    /* The connections hold the contexts now (or nothing does). */
    tern_tls_server_release(s);
    tern_tls_client_release(cl);
    if (!opened) {
        memset(p, 0, sizeof *p);
        return TERN_TLS_FAILED;
    }
    tls_test_pump(p);
    return tern_tls_state_of(p->server);
}
