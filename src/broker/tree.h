/*
 * tree.h - the topic tree's calls (tree.c): subscribing, matching a topic
 * to the sessions subscribed to it, and retained messages by topic.
 */
#ifndef TERN_BROKER_TREE_H
#define TERN_BROKER_TREE_H

#include "broker/broker.h"
#include "broker/tree-t.h"
#include "mqtt/mqtt.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

int bk_tree_init(broker *b, tree *t);
void bk_tree_free(broker *b, tree *t);
/* Add or update sess's subscription to filter f (a shared one joins its
 * group, created on first use; mqtt_share_split() must have accepted
 * it). *is_new tells if it was added. Returns the sub, or NULL on
 * allocation failure. The cost depends on f, not on how many
 * subscriptions sess has (so do the calls below). */
sub *bk_tree_subscribe(broker *b, tree *t, session *sess, const uint8_t *f, size_t flen,
                       uint8_t qos, bool *is_new);
/* sess's subscription to exactly f, or NULL. */
sub *bk_tree_find_sub(const tree *t, const session *sess, const uint8_t *f, size_t flen);
/* Remove one subscription, from its session too. */
void bk_tree_remove_sub(broker *b, tree *t, sub *s);
/* Remove every subscription of sess (session teardown). */
void bk_tree_remove_all(broker *b, tree *t, session *sess);
/* Sessions subscribed to topic, deduplicated, each at its highest QoS.
 * Returns the count; *out points into tree scratch valid until the next
 * call (callers must not change it). -1 on allocation failure. The shared
 * groups matched are left in t->groups[0..t->groups_count), the
 * identifiers in t->ids (match.ids). */
long bk_tree_match(broker *b, tree *t, const uint8_t *topic, size_t tlen, match **out);
/* Set (m != NULL) or clear (m == NULL) the retained message of a topic.
 * Takes a reference on m. Returns 0, or -1 on allocation failure. */
int bk_tree_set_retained(broker *b, tree *t, const uint8_t *topic, size_t tlen, msg *m);
/* The filter text of node n written to buf (not terminated); 0 when it does
 * not fit in cap. */
size_t bk_tree_filter_text(const tnode *n, char *buf, size_t cap);
/* The filter a subscription was made with, `$share/GROUP/` included,
 * written to buf (not terminated); 0 when it does not fit in cap. */
size_t bk_sub_filter_text(const sub *x, char *buf, size_t cap);
/* Topic + payload bytes of the message retained on topic (0 = none). */
uint64_t bk_tree_retained_size(const tree *t, const uint8_t *topic, size_t tlen);
/* Call fn for every retained message matching filter f (a subscribe's
 * walk). One whose Message Expiry Interval has passed is removed after
 * fn saw it (journaled, counts updated); fn must not change the tree. */
int bk_tree_for_retained(broker *b, tree *t, const uint8_t *f, size_t flen, retained_fn fn,
                         void *ctx);
/* Something a match result depends on changed outside tree.c: forget the
 * last result. bk_tree_subscribe and every removal do it themselves, so
 * setting acl_check on the sub bk_tree_subscribe just returned needs nothing
 * more; changing it later (a new ACL) does. */
static inline void bk_tree_forget_last(tree *t) { t->last_valid = false; }
/* Call fn for every retained message, '$' topics included. */
int bk_tree_for_all_retained(broker *b, tree *t, retained_fn fn, void *ctx);
/* When the next slice of the expired retained messages' sweep is due
 * (UINT64_MAX: nothing to sweep). */
uint64_t bk_tree_sweep_deadline(const tree *t);
/* One slice of the sweep: a bounded number of nodes visited, each expired
 * retained message met removed (journaled, counts updated), empty nodes
 * freed. The next slice goes on from there. */
void bk_tree_sweep(broker *b, tree *t, uint64_t now_ms);

#endif
