/*
 * gen_seeds.h - what the seed generator's files share (gen_seeds.c: the
 * codec's seeds, the seed buffer, packets and property blocks;
 * gen_core_seeds.c: fuzz_core's scripts; gen_journal_seeds.c:
 * fuzz_journal's records).
 */
#ifndef TERN_FUZZ_GEN_SEEDS_H
#define TERN_FUZZ_GEN_SEEDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mqtt/mqtt.h"

enum { SEED_MAX = 8192 };

/* A seed being assembled. */
typedef struct seed {
    uint8_t b[SEED_MAX];
    size_t len;
} seed;

/* An MQTT 5.0 property block, assembled with the codec's writers. */
typedef struct pblock {
    uint8_t b[256];
    size_t n;
} pblock;
#define PB_CAP(p) ((p)->b + (p)->n), (sizeof (p)->b - (p)->n)

/* The seed buffer; exits on overflow or a failed encoder (n == 0). */
void put(seed *s, const void *p, size_t n);
void put_u8(seed *s, uint8_t v);
/* dir/target/name, or exit. */
void write_seed(const char *dir, const char *target, const char *name, const seed *s);
mqtt_bytes str(const char *s);

/* Packets from the codec's encoders into o; their length. */
size_t pk_connect(uint8_t *o, uint8_t level, const char *id, bool clean, bool will, bool user);
size_t pk_publish(uint8_t *o, uint8_t level, const char *topic, const char *payload, uint8_t qos,
                  bool retain, uint16_t id);
size_t pk_subscribe(uint8_t *o, uint16_t id, const char *f1, uint8_t q1, const char *f2,
                    uint8_t q2);
size_t pk_subscribe_n(uint8_t *o, uint16_t id, const char *const *fl, uint8_t qos, size_t n);
size_t pk_unsubscribe_n(uint8_t *o, uint16_t id, const char *const *fl, size_t n);
size_t pk_unsubscribe(uint8_t *o, uint16_t id, const char *f1);

/* Property blocks: add what a writer wrote (exit if it did not fit). */
void pb_add(pblock *p, size_t n);
mqtt_bytes pb_view(const pblock *p);
void pb_user(pblock *p, const char *k, const char *v);
void pb_str(pblock *p, uint8_t id, const char *v);

/* gen_core_seeds.c, gen_journal_seeds.c. */
void gen_core(const char *dir);
void gen_core5(const char *dir);
void gen_journal(const char *dir);

#endif
