/*
 * tree-t.h - the types of the topic tree (tree.c): one node per topic
 * level, holding the subscriptions whose filter ends there and the
 * retained message whose topic ends there. Types only; the calls are in
 * tree.h.
 */
#ifndef TERN_BROKER_TREE_T_H
#define TERN_BROKER_TREE_T_H

#include "broker/broker.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct msg msg;
typedef struct session session;
typedef struct tnode tnode;

/* One subscription: a session's filter, linked into the node of that filter,
 * into the session's own list, and into the session's index by node (a
 * hash table: session-t.h), so subscribing, unsubscribing and teardown
 * never walk the session's other subscriptions. */
typedef struct sub {
    struct sub *node_prev, *node_next;
    struct sub *sess_prev, *sess_next;
    struct sub *hnext;        /* chain in the session's index */
    tnode *node;
    session *sess;
    uint8_t qos;
    bool acl_check;   /* a deny rule overlaps the filter: check each message */
    /* MQTT 5.0 subscription options (MQTT_SUBOPT_* bits above the QoS:
     * No Local, Retain As Published, Retain Handling); 0 for 3.1.1. */
    uint8_t options;
    uint32_t sub_id;  /* Subscription Identifier, 0 = none */
} sub;

struct tnode {
    tnode *parent;
    tnode *first_child, *next_sibling, *prev_sibling; /* ordinary levels */
    tnode *plus, *hash;       /* the '+' and '#' children */
    tnode *hnext;             /* chain in the tree's child hash table */
    sub *subs;                /* subscriptions whose filter ends here */
    msg *retained;            /* retained message whose topic ends here */
    /* Keyed hash of (parent, level): the slot in the tree's table, and the
     * node's slot in a session's index of subscriptions ('+' and '#' nodes
     * have one too, though the table does not hold them). */
    uint32_t hashv;
    uint16_t seg_len;
    char seg[];               /* this level's text, not terminated */
};

/* A match result: one entry per session, at the highest granted QoS. */
typedef struct match {
    session *sess;
    uint8_t qos;
    bool acl_check;   /* every matching subscription needs a per-message check */
} match;

#define TREE_LAST_TOPIC_MAX 128u

/* Longest filter the tree holds: an MQTT string has a 2-byte length, and
 * restore refuses longer ones. A buffer of this size takes any filter. */
#define TREE_FILTER_MAX ((size_t)UINT16_MAX)

typedef struct tree {
    uint64_t key[2];          /* hash key (broker_config.hash_key) */
    tnode *root;
    tnode **table;            /* child lookup: hash(parent, segment) */
    size_t table_size;        /* power of two */
    size_t node_count;
    /* Scratch owned by the tree and reused across calls, so matching
     * allocates only while it grows to the largest fan-out seen. */
    match *matches;
    size_t matches_cap;
    struct tstack { tnode *node; size_t pos; } *stack;
    size_t stack_cap;
    uint64_t epoch;           /* stamps sessions during one match */
    /* The last topic matched, whose result is still in `matches`: a
     * publisher's messages arrive in batches on one topic, so most matches
     * repeat the previous one. Any change to subscriptions clears it. */
    bool last_valid;
    uint16_t last_len;
    size_t last_count;
    uint8_t last_topic[TREE_LAST_TOPIC_MAX];
} tree;

/* Called for each retained message a walk finds. */
typedef void (*retained_fn)(broker *b, void *ctx, msg *m);

#endif
