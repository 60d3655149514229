/*
 * fuzz_record.c - libFuzzer target for tern's TLS 1.3 record layer: the
 * open path of src/tls/record.c, and the reading of records by a server
 * connection after the handover from wolfSSL (src/tls/conn.c), with the
 * fixed keys of record_keys.h.
 *
 * Input: a suite byte, a split byte, then the bytes a client sent.
 *
 * Record by record (tls_rec_open on exact-size copies, so ASan sees any
 * read or write past either buffer): a record that does not authenticate
 * changes nothing of the state; one that does moves the read sequence
 * number by one and nothing else, and is one the key's holder sealed:
 * sealing what it decrypted to again, with the same key and sequence
 * number, gives back the record byte for byte. An accepted forgery fails
 * that comparison. Only tls_rec_seal makes the seeds, so no authentic
 * record holds more than 2^14 + 1 bytes of TLSInnerPlaintext.
 *
 * As a stream, through a handed-over server connection (tern_tls_read):
 * once in one piece with room for all its plaintext, once in pieces with
 * small output buffers (sizes drawn from the split byte), so that records
 * arrive fragmented and plaintext waits in the connection. Both must give
 * the same plaintext, end state, failure, alert and output (alerts,
 * KeyUpdate answers), and leave nothing unread.
 */
#include "fuzz/record_keys.h"
#include "tls/internal.h"
#include "tls/record.h"
#include "tls/tls.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_ASSERT(c) ((c) ? (void)0 : abort())

/* Every connection's server: only its allocator (malloc's) is used. The
 * creator's reference is never dropped, so it is never freed. */
static tern_tls_server server = {.refs = 1};

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);

    FUZZ_ASSERT(p != NULL);
    return p;
}

/* One record rec[0..size) (size = its tls_rec_size) opened with r. */
static void open_one(tls_rec *r, const uint8_t *rec, size_t size)
{
    size_t room = size >= TLS_REC_HEADER + TLS_REC_TAG ? size - TLS_REC_HEADER - TLS_REC_TAG : 0;
    uint8_t *copy = xmalloc(size), *out = xmalloc(room), type = 0;
    size_t len = 0;
    tls_rec before;
    tls_rec_result res;

    memcpy(copy, rec, size);
    memcpy(&before, r, sizeof before);
    res = tls_rec_open(r, copy, size, out, &type, &len);
    if (r->rd.seq == before.rd.seq) { /* did not authenticate */
        FUZZ_ASSERT(res != TLS_REC_OK);
        FUZZ_ASSERT(memcmp(r, &before, sizeof before) == 0);
    } else {
        tls_rec again;
        uint8_t *sealed = xmalloc(size);

        FUZZ_ASSERT(r->rd.seq == before.rd.seq + 1);
        r->rd.seq--;
        FUZZ_ASSERT(memcmp(r, &before, sizeof before) == 0);
        r->rd.seq++;
        /* What authenticated was sealed by us (see above): at most
         * 2^14 + 1 bytes of content, type and padding. */
        FUZZ_ASSERT(room >= 1 && room <= TLS_REC_PLAIN_MAX + 1);
        /* Content type 0 to seal: the "content" is then the whole
         * TLSInnerPlaintext but its last byte, padding included. */
        memcpy(&again, &before, sizeof again);
        again.wr = before.rd;
        FUZZ_ASSERT(tls_rec_seal(&again, out[room - 1], out, room - 1, sealed) == TLS_REC_OK);
        FUZZ_ASSERT(memcmp(sealed, copy, size) == 0);
        if (res == TLS_REC_OK) {
            FUZZ_ASSERT(type != 0 && len < room && out[len] == type);
            for (size_t i = len + 1; i < room; i++)
                FUZZ_ASSERT(out[i] == 0);
        } else {
            FUZZ_ASSERT(res == TLS_REC_UNEXPECTED || res == TLS_REC_OVERFLOW);
        }
        tls_rec_wipe(&again);
        free(sealed);
    }
    free(copy);
    free(out);
}

/* Every whole record of p[0..n) in turn, as a server reads them. */
static void open_records(tls_rec_suite s, const uint8_t *p, size_t n)
{
    tls_rec r;
    size_t off = 0;

    FUZZ_ASSERT(fuzz_record_end(&r, s, true));
    while (n - off >= TLS_REC_HEADER) {
        size_t size = tls_rec_size(p + off, n - off);

        if (size > n - off)
            break;
        open_one(&r, p + off, size);
        off += size;
    }
    tls_rec_wipe(&r);
}

/* A server connection right after the handover: wolfSSL gone, the record
 * layer's keys in place, sequence numbers 0. */
static tern_tls_conn *conn_new(tls_rec_suite s)
{
    tern_tls_conn *c = tls_mem_zalloc(NULL, sizeof *c);
    tls_rec r;

    FUZZ_ASSERT(c != NULL);
    atomic_fetch_add(&server.refs, 1);
    c->server = &server;
    c->state = TERN_TLS_ESTABLISHED;
    c->peer_alert = -1;
    c->suite = (uint8_t)s;
    c->keys = tls_mem_zalloc(NULL, tls_conn_keys_size(s));
    FUZZ_ASSERT(c->keys != NULL);
    FUZZ_ASSERT(fuzz_record_end(&r, s, true));
    tls_conn_rec_store(c, &r);
    return c;
}

/* What a connection made of the stream. */
typedef struct outcome {
    uint8_t *plain; /* the plaintext read, in order */
    size_t len, cap; /* cap: the ciphertext's length, which plaintext never exceeds */
    tern_tls_state state;
    tern_tls_failure failure;
    int alert;
    uint8_t *out; /* what it queued for the transport */
    size_t out_len;
} outcome;

/* The next size in 1..max from a small generator (xorshift). */
static size_t draw(uint32_t *x, size_t max)
{
    *x ^= *x << 13;
    *x ^= *x >> 17;
    *x ^= *x << 5;
    return 1 + *x % max;
}

/* One tern_tls_read of in[0..n) into a buffer of exactly cap bytes. */
static void read_into(tern_tls_conn *c, const uint8_t *in, size_t n, size_t cap, outcome *o)
{
    uint8_t *buf = xmalloc(cap);
    size_t got = 0;

    (void)tern_tls_read(c, in, n, buf, cap, &got);
    FUZZ_ASSERT(got <= cap && got <= o->cap - o->len);
    memcpy(o->plain + o->len, buf, got);
    o->len += got;
    free(buf);
}

/* Feed p[0..n) to a fresh connection: whole (seed 0) or in pieces. */
static void run(tls_rec_suite s, const uint8_t *p, size_t n, uint32_t seed, outcome *o)
{
    tern_tls_conn *c = conn_new(s);
    const uint8_t *q;
    uint32_t x = seed;
    size_t off = 0;

    memset(o, 0, sizeof *o);
    o->plain = xmalloc(n);
    o->cap = n;
    if (seed == 0)
        read_into(c, p, n, n + 1, o);
    while (seed != 0 && off < n) {
        size_t k = draw(&x, 96);

        if (k > n - off)
            k = n - off;
        read_into(c, p + off, k, draw(&x, 48), o);
        off += k;
    }
    /* What is left: queued plaintext, whole records waiting. Each read
     * either hands over a byte or takes a record of 5 bytes or more. */
    for (size_t i = 0; i < 2 * n + 2 && tern_tls_has_input(c); i++)
        read_into(c, NULL, 0, seed == 0 ? n + 1 : draw(&x, 48), o);
    FUZZ_ASSERT(!tern_tls_has_input(c));
    o->state = tern_tls_state_of(c);
    o->failure = tern_tls_failure_of(c);
    o->alert = tern_tls_peer_alert(c);
    q = tern_tls_out_peek(c, &o->out_len);
    o->out = xmalloc(o->out_len);
    if (o->out_len > 0)
        memcpy(o->out, q, o->out_len);
    tern_tls_conn_free(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tls_rec_suite s;
    outcome whole, pieces;

    if (size < 2)
        return 0;
    s = fuzz_record_suite(data[0]);
    open_records(s, data + 2, size - 2);
    run(s, data + 2, size - 2, 0, &whole);
    run(s, data + 2, size - 2, data[1] | 0x100u, &pieces);
    FUZZ_ASSERT(whole.len == pieces.len);
    FUZZ_ASSERT(whole.len == 0 || memcmp(whole.plain, pieces.plain, whole.len) == 0);
    FUZZ_ASSERT(whole.state == pieces.state && whole.failure == pieces.failure);
    FUZZ_ASSERT(whole.alert == pieces.alert);
    FUZZ_ASSERT(whole.out_len == pieces.out_len);
    FUZZ_ASSERT(whole.out_len == 0 || memcmp(whole.out, pieces.out, whole.out_len) == 0);
    free(whole.plain);
    free(whole.out);
    free(pieces.plain);
    free(pieces.out);
    return 0;
}
