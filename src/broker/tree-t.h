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
typedef struct sgroup sgroup;

/* One subscription: a session's filter, linked into the node of that filter
 * (a shared one, `$share/GROUP/FILTER`, into its group's members instead),
 * into the session's own list, and into the session's index by node (a
 * hash table: session-t.h), so subscribing, unsubscribing and teardown
 * never walk the session's other subscriptions. */
typedef struct sub {
    struct sub *node_prev, *node_next; /* the node's subs, or the group's members */
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
    sgroup *group;    /* shared subscription: its group; NULL = not shared */
} sub;

/* A shared subscription group: the sessions subscribed to one
 * `$share/GROUP/FILTER`, hanging off FILTER's node. Each message matching
 * FILTER goes to one member (deliver.c says which). */
struct sgroup {
    sgroup *next;             /* the node's other groups */
    tnode *node;              /* FILTER's node */
    sub *members;             /* through sub.node_prev / node_next */
    sub *cursor;              /* the member the next message is offered first */
    uint32_t count;
    /* Names the group in the queue entries delivered through it
     * (qentry.shared), so a departing member's are found; never 0. */
    uint32_t serial;
    uint16_t name_len;
    char name[];              /* GROUP, not terminated */
};

struct tnode {
    tnode *parent;
    tnode *first_child, *next_sibling, *prev_sibling; /* ordinary levels */
    tnode *plus, *hash;       /* the '+' and '#' children */
    tnode *hnext;             /* chain in the tree's child hash table */
    sub *subs;                /* subscriptions whose filter ends here */
    sgroup *groups;           /* shared subscription groups whose FILTER ends here */
    msg *retained;            /* retained message whose topic ends here */
    /* Keyed hash of (parent, level): the slot in the tree's table, and the
     * node's slot in a session's index of subscriptions ('+' and '#' nodes
     * have one too, though the table does not hold them). */
    uint32_t hashv;
    uint16_t seg_len;
    char seg[];               /* this level's text, not terminated */
};

/* A match result: one entry per session, merging every matching
 * (non-shared) subscription of it: one copy at the highest granted QoS
 * [MQTT-3.3.4-2], carrying each one's Subscription Identifier
 * [MQTT-3.3.4-4]. No Local depends on who publishes, and a result is
 * reused for the next message on the same topic, so what the
 * subscriptions without No Local give is kept beside the whole. */
typedef struct match {
    session *sess;
    uint8_t qos;      /* highest granted QoS of the matching subscriptions */
    bool acl_check;   /* every matching subscription needs a per-message check */
    uint8_t flags;    /* MATCH_* */
    uint8_t qos_local;/* highest of those without No Local (MATCH_LOCAL) */
    uint32_t ids;     /* 1 + index of the first identifier in tree.ids; 0 = none */
} match;

#define MATCH_LOCAL 0x01u     /* a subscription without No Local matches */
#define MATCH_RAP 0x02u       /* one has Retain As Published */
#define MATCH_RAP_LOCAL 0x04u /* one without No Local has it */
/* An identifier in tree.ids from a subscription with No Local. */
#define MATCH_ID_NO_LOCAL 0x80000000u

/* Identifiers of a match, chained per session (they arrive interleaved). */
typedef struct match_id {
    uint32_t id;      /* | MATCH_ID_NO_LOCAL */
    uint32_t next;    /* 1 + index of the next; 0 = last */
} match_id;

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
    match_id *ids;            /* Subscription Identifiers of `matches` */
    size_t ids_count, ids_cap;
    sgroup **groups;          /* shared groups matched */
    size_t groups_count, groups_cap;
    uint32_t next_serial;     /* sgroup.serial of the next group */
    uint32_t *idbuf;          /* routing's: one delivery's identifiers beyond
                                 the first, [count, id...] (bk_via.more) */
    size_t idbuf_cap;
    uint64_t epoch;           /* stamps sessions during one match */
    /* The last topic matched, whose result is still in `matches`: a
     * publisher's messages arrive in batches on one topic, so most matches
     * repeat the previous one. Any change to subscriptions clears it. */
    bool last_valid;
    uint16_t last_len;
    size_t last_count;
    uint8_t last_topic[TREE_LAST_TOPIC_MAX];
    /* Expired retained messages leave the tree when a subscribe's walk
     * meets them and by a sweep a slice at a time (bk_tree_sweep): the
     * retained messages with an expiry, the node the sweep goes on from
     * (NULL: a new pass from the root), when its next slice runs, and
     * whether a walk left empty nodes behind for it to free (husks: seen
     * since the current pass began; husks_pass: during it). */
    size_t retained_expiring;
    tnode *sweep_at;
    uint64_t sweep_next_ms;
    bool husks, husks_pass;
} tree;

/* Called for each retained message a walk finds. */
typedef void (*retained_fn)(broker *b, void *ctx, msg *m);

#endif
