/*
 * model_store.h - an in-memory model of the durable store for unit tests:
 * applies journal batches as the SQLite store would (upserts and deletes by
 * key) and replays its contents into a fresh broker through the restore
 * calls. Lets the core's persistence be tested without SQLite.
 */
#ifndef TERN_TEST_MODEL_STORE_H
#define TERN_TEST_MODEL_STORE_H

#include "broker/journal.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct mrow {
    char table;          /* R retained, S session, B sub, M message, Q queue, I inqos2,
                            W will */
    char cid[128];       /* client id (S B Q I) */
    char key[256];       /* topic/filter (R B), decimal seq/msg id/packet id (Q M I) */
    uint8_t data[512];   /* payload or identity */
    uint32_t data_len;
    char topic[256];     /* message topic (M W) */
    uint8_t props[256];  /* MQTT 5.0 properties (R M W), sub_ids (Q) */
    uint32_t props_len;
    uint64_t msg_id, seq;
    uint64_t expiry_at, fire_at;  /* recorded times (journal.h) */
    uint32_t expiry_interval, sub_id;
    uint16_t packet_id;
    uint8_t qos, state, flags, options;
    bool used;
} mrow;

typedef struct mstore {
    mrow rows[512];
    uint64_t resets;
} mstore;

void ms_init(mstore *m);
/* Apply every record of a batch. False on a malformed batch. */
bool ms_apply(mstore *m, const uint8_t *data, size_t len);
/* Take every pending batch from b and commit it into m. */
void ms_commit_all(mstore *m, broker *b);
/* Restore m into b (a fresh broker). False if a restore call failed. */
bool ms_load(const mstore *m, broker *b);
int ms_count(const mstore *m, char table);

#endif
