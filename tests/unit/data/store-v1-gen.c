/*
 * store-v1-gen.c - writes tests/unit/data/store-v1.db, the version-1
 * database fixture the schema-2 migration test opens
 * (test_store_migrate.c). Kept to say exactly how the fixture was made;
 * it builds only against the version-1 store (commit 6ceab90, the last
 * one before schema version 2), where it was run as:
 *
 *   git worktree add /tmp/tern-v1 6ceab90 && cd /tmp/tern-v1
 *   mkdir -p build && ln -s ~/.cache/tern/deps-HASH build/deps
 *   cc -std=c17 -Isrc -isystem build/deps/sqlite tests/unit/data/store-v1-gen.c \
 *      src/store/*.c src/broker/*.c src/mqtt/*.c src/platform/posix/panic.c \
 *      build/deps/sqlite/libsqlite3.a -pthread -lm -o /tmp/store-v1-gen
 *   /tmp/store-v1-gen tests/unit/data/store-v1.db && rm tests/unit/data/store-v1.db-wal
 *
 * It drives the real version-1 store (store_open, store_apply, store_close)
 * with batches in the version-1 record encoding, so the file is what that
 * release leaves on disk: retained messages, three persistent sessions
 * (with and without an identity, one operator), their subscriptions,
 * messages and queue rows in every state (queued, waiting for PUBACK,
 * PUBREC, PUBCOMP - whose message row is already gone), inbound QoS 2 ids,
 * and a second commit that deletes a few rows so the file is not just one
 * transaction's image. Closing checkpoints the WAL into the file, so the
 * .db alone holds everything. The test lists what it must contain.
 */
#include "broker/journal.h"
#include "store/store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct enc {
    uint8_t data[8192];
    size_t len;
    uint32_t records;
} enc;

static void put_uint(enc *e, uint64_t v, unsigned width)
{
    for (unsigned i = width; i-- > 0;)
        e->data[e->len++] = (uint8_t)(v >> (8 * i));
}

static void put_str(enc *e, const char *s)
{
    size_t n = strlen(s);

    put_uint(e, n, 4);
    memcpy(e->data + e->len, s, n);
    e->len += n;
}

static void rec(enc *e, journal_type t)
{
    put_uint(e, (uint64_t)t, 1);
    e->records++;
}

static void commit(store *s, enc *e, uint64_t seq)
{
    broker_store_batch b = {seq, e->data, e->len, e->records};

    if (store_apply(s, &b, 1) != STORE_OK) {
        fprintf(stderr, "store_apply failed\n");
        exit(1);
    }
    memset(e, 0, sizeof *e);
}

int main(int argc, char **argv)
{
    static enc e;
    store_open_info info;
    store_options opt;
    char err[STORE_ERR_SIZE];
    store *s;

    if (argc != 2) {
        fprintf(stderr, "usage: %s OUT.db\n", argv[0]);
        return 2;
    }
    memset(&opt, 0, sizeof opt);
    opt.path = argv[1];
    s = store_open(&opt, &info, err, sizeof err);
    if (s == NULL) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }

    /* Retained messages (one to be deleted below). */
    rec(&e, J_RETAIN_SET), put_str(&e, "fx/retained/a"), put_str(&e, "ra"), put_uint(&e, 1, 1);
    rec(&e, J_RETAIN_SET), put_str(&e, "fx/retained/b"), put_str(&e, "rb"), put_uint(&e, 0, 1);
    rec(&e, J_RETAIN_SET), put_str(&e, "fx/retained/gone"), put_str(&e, "x"), put_uint(&e, 2, 1);
    /* Sessions: identity, flags bit 0 operator. */
    rec(&e, J_SESSION_PUT), put_str(&e, "fx-sub"), put_str(&e, "dev-client"), put_uint(&e, 0, 1);
    rec(&e, J_SESSION_PUT), put_str(&e, "fx-op"), put_str(&e, "dev-operator"), put_uint(&e, 1, 1);
    rec(&e, J_SESSION_PUT), put_str(&e, "fx-anon"), put_str(&e, ""), put_uint(&e, 0, 1);
    rec(&e, J_SESSION_PUT), put_str(&e, "fx-gone"), put_str(&e, ""), put_uint(&e, 0, 1);
    /* Subscriptions. */
    rec(&e, J_SUB_PUT), put_str(&e, "fx-sub"), put_str(&e, "fx/q/#"), put_uint(&e, 2, 1);
    rec(&e, J_SUB_PUT), put_str(&e, "fx-sub"), put_str(&e, "fx/one"), put_uint(&e, 1, 1);
    rec(&e, J_SUB_PUT), put_str(&e, "fx-op"), put_str(&e, "$SYS/#"), put_uint(&e, 0, 1);
    rec(&e, J_SUB_PUT), put_str(&e, "fx-anon"), put_str(&e, "fx/+/x"), put_uint(&e, 1, 1);
    rec(&e, J_SUB_PUT), put_str(&e, "fx-gone"), put_str(&e, "fx/gone"), put_uint(&e, 1, 1);
    /* Messages: id, topic, payload, qos, flags bit 0 retain. */
    for (unsigned i = 1; i <= 4; i++) {
        char topic[16], payload[16];

        snprintf(topic, sizeof topic, "fx/q/%u", i);
        snprintf(payload, sizeof payload, "m%u", i);
        rec(&e, J_MSG_PUT), put_uint(&e, i, 8), put_str(&e, topic), put_str(&e, payload);
        put_uint(&e, i == 1 ? 1 : 2, 1), put_uint(&e, i == 4 ? 1 : 0, 1);
    }
    /* fx-sub's queue: seq 1 sent QoS 1, 2 sent QoS 2, 3 released QoS 2
     * (its message row deleted, as the core does), 4 queued. */
    rec(&e, J_QUEUE_PUT), put_str(&e, "fx-sub"), put_uint(&e, 1, 8), put_uint(&e, 1, 8);
    put_uint(&e, 1, 1), put_uint(&e, 0, 1);
    rec(&e, J_QUEUE_STATE), put_str(&e, "fx-sub"), put_uint(&e, 1, 8), put_uint(&e, 1, 1);
    put_uint(&e, 11, 2);
    rec(&e, J_QUEUE_PUT), put_str(&e, "fx-sub"), put_uint(&e, 2, 8), put_uint(&e, 2, 8);
    put_uint(&e, 2, 1), put_uint(&e, 0, 1);
    rec(&e, J_QUEUE_STATE), put_str(&e, "fx-sub"), put_uint(&e, 2, 8), put_uint(&e, 2, 1);
    put_uint(&e, 12, 2);
    rec(&e, J_QUEUE_PUT), put_str(&e, "fx-sub"), put_uint(&e, 3, 8), put_uint(&e, 3, 8);
    put_uint(&e, 2, 1), put_uint(&e, 0, 1);
    rec(&e, J_QUEUE_STATE), put_str(&e, "fx-sub"), put_uint(&e, 3, 8), put_uint(&e, 3, 1);
    put_uint(&e, 13, 2);
    rec(&e, J_MSG_DEL), put_uint(&e, 3, 8);
    rec(&e, J_QUEUE_PUT), put_str(&e, "fx-sub"), put_uint(&e, 4, 8), put_uint(&e, 4, 8);
    put_uint(&e, 2, 1), put_uint(&e, 1, 1);
    /* fx-anon shares message 2, queued. */
    rec(&e, J_QUEUE_PUT), put_str(&e, "fx-anon"), put_uint(&e, 1, 8), put_uint(&e, 2, 8);
    put_uint(&e, 1, 1), put_uint(&e, 0, 1);
    /* Inbound QoS 2 ids awaiting PUBREL. */
    rec(&e, J_INQOS2_PUT), put_str(&e, "fx-sub"), put_uint(&e, 7, 2);
    rec(&e, J_INQOS2_PUT), put_str(&e, "fx-anon"), put_uint(&e, 9, 2);
    rec(&e, J_INQOS2_PUT), put_str(&e, "fx-gone"), put_uint(&e, 5, 2);
    commit(s, &e, 1);

    /* A second transaction: deletions. */
    rec(&e, J_RETAIN_DEL), put_str(&e, "fx/retained/gone");
    rec(&e, J_SESSION_DEL), put_str(&e, "fx-gone");
    commit(s, &e, 2);

    store_close(s);
    return 0;
}
