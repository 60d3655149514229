/*
 * gen_record_seeds.c - writes fuzz_record's seeds: streams of records a
 * client sealed with the fixed keys of record_keys.h (tls_rec_seal), so the
 * fuzzer starts from records that authenticate and reaches what follows
 * (padding, KeyUpdate in both forms, alerts, a full-size record, records
 * without a content type, a handshake message other than KeyUpdate, a
 * record cut short) instead of stopping at the tag. Each file: the suite
 * byte, the split byte, the stream (fuzz_record.c).
 *
 *   gen_record_seeds DIR     writes DIR/record/seed-*
 */
#include "fuzz/record_keys.h"
#include "tls/record.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { STREAM_MAX = 2 + 4 * (TLS_REC_HEADER + TLS_REC_PLAIN_MAX + 1 + TLS_REC_TAG) };

typedef struct stream {
    uint8_t b[STREAM_MAX];
    size_t len;
    tls_rec client; /* writes what the server reads */
} stream;

static void fail(const char *what)
{
    fprintf(stderr, "gen_record_seeds: %s\n", what);
    exit(1);
}

static void start(stream *st, tls_rec_suite s, uint8_t split)
{
    if (!fuzz_record_end(&st->client, s, false))
        fail("cannot set the traffic secrets");
    st->b[0] = (uint8_t)(s - TLS_REC_AES128_GCM_SHA256);
    st->b[1] = split;
    st->len = 2;
}

/* One record of content type `type` (0: `in` is the whole inner plaintext
 * but its last byte, so it may carry padding). */
static void seal(stream *st, uint8_t type, const void *in, size_t len)
{
    if (st->len + tls_rec_sealed_size(len) > sizeof st->b ||
        tls_rec_seal(&st->client, type, in, len, st->b + st->len) != TLS_REC_OK)
        fail("cannot seal a record");
    st->len += tls_rec_sealed_size(len);
}

static void data(stream *st, const char *text)
{
    seal(st, TLS_CT_APPLICATION_DATA, text, strlen(text));
}

static void alert(stream *st, uint8_t level, uint8_t what)
{
    const uint8_t a[2] = {level, what};

    seal(st, TLS_CT_ALERT, a, sizeof a);
}

/* KeyUpdate (RFC 8446 4.6.3); the client's write key moves on after it. */
static void key_update(stream *st, uint8_t requested)
{
    const uint8_t m[5] = {24, 0, 0, 1, requested};

    seal(st, TLS_CT_HANDSHAKE, m, sizeof m);
    if (!tls_rec_update(&st->client.wr, (tls_rec_suite)st->client.suite))
        fail("cannot update the key");
}

static void save(const stream *st, const char *dir, const char *name)
{
    char path[512];
    FILE *f;

    snprintf(path, sizeof path, "%s/record/seed-%u-%s", dir, (unsigned)st->b[0], name);
    f = fopen(path, "wb");
    if (f == NULL || fwrite(st->b, 1, st->len, f) != st->len || fclose(f) != 0)
        fail(path);
}

static void seeds(tls_rec_suite s, const char *dir)
{
    static uint8_t big[TLS_REC_PLAIN_MAX];
    static const uint8_t padded[] = {'p', 'a', 'd', 'd', 'e', 'd', TLS_CT_APPLICATION_DATA,
                                     0,   0,   0,   0,   0,   0,   0,
                                     0,   0,   0,   0,   0,   0,   0};
    static const uint8_t zeros[12] = {0};
    static const uint8_t ticket[8] = {4, 0, 0, 4, 0, 0, 0, 0};
    stream *st = malloc(sizeof *st);

    if (st == NULL)
        fail("out of memory");
    start(st, s, 0);
    data(st, "hello");
    save(st, dir, "hello");

    start(st, s, 7);
    data(st, "first");
    seal(st, TLS_CT_APPLICATION_DATA, "", 0);
    seal(st, 0, padded, sizeof padded);
    data(st, "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
             "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef");
    save(st, dir, "data-padding");

    start(st, s, 11);
    data(st, "before");
    key_update(st, 0);
    data(st, "after");
    key_update(st, 1);
    data(st, "answered");
    alert(st, 1, 0); /* close_notify */
    save(st, dir, "key-update-close");

    start(st, s, 3);
    data(st, "then");
    alert(st, 1, 90); /* user_canceled: ignored */
    data(st, "more");
    alert(st, 2, 40); /* handshake_failure: fatal */
    data(st, "never read");
    save(st, dir, "alerts");

    start(st, s, 200);
    for (size_t i = 0; i < sizeof big; i++)
        big[i] = (uint8_t)(i * 13u + 1u);
    seal(st, TLS_CT_APPLICATION_DATA, big, sizeof big);
    data(st, "tail");
    save(st, dir, "full-size");

    start(st, s, 1);
    data(st, "ok");
    seal(st, 0, zeros, sizeof zeros); /* no content type at all */
    save(st, dir, "no-type");

    start(st, s, 5);
    seal(st, TLS_CT_HANDSHAKE, ticket, sizeof ticket); /* NewSessionTicket */
    save(st, dir, "handshake");

    start(st, s, 9);
    data(st, "whole");
    data(st, "cut short");
    st->len -= 7;
    save(st, dir, "truncated");
    tls_rec_wipe(&st->client);
    free(st);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: gen_record_seeds DIR\n");
        return 2;
    }
    seeds(TLS_REC_AES128_GCM_SHA256, argv[1]);
    seeds(TLS_REC_AES256_GCM_SHA384, argv[1]);
    seeds(TLS_REC_CHACHA20_POLY1305_SHA256, argv[1]);
    return 0;
}
