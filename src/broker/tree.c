/*
 * tree.c - the topic tree: one node per topic level, shared by subscription
 * filters and retained messages (a topic name never contains '+' or '#', so
 * both live in the same tree without clashing).
 *
 * A node's ordinary children are found through one hash table for the whole
 * tree, keyed by (parent, level text), so a level with a million children
 * costs no more to search than one with three. The '+' and '#' children hang
 * off dedicated pointers. Children are also linked as siblings, which is
 * what wildcard walks over retained messages need.
 *
 * Matching and walks are iterative with an explicit stack kept in the tree:
 * a topic may have thousands of levels and the kernel's stacks are small.
 *
 * Each session indexes its own subscriptions by node (session-t.h), so a
 * subscription is found, added or removed in constant time however many
 * the session holds.
 *
 * A shared subscription `$share/GROUP/FILTER` lives at FILTER's node, as
 * a member of the node's group named GROUP: matching collects the groups
 * beside the sessions, and routing (deliver.c) gives each message one
 * member of each group, chosen per message (a match result is reused
 * for the next message on the same topic). The tree's table and every session's index shrink as
 * they empty: memory a client made the broker allocate goes back when its
 * subscriptions and retained topics go.
 */
#include "broker/base.h"
#include "broker/broker-t.h"
#include "broker/hash.h"
#include "broker/mem.h"
#include "broker/msg.h"
#include "broker/persist.h"
#include "broker/session-t.h"
#include "broker/tree.h"

#include <string.h>

#define TABLE_MIN 64u
#define INDEX_MIN 4u      /* slots of a session's smallest index */
#define STACK_KEEP 1024u  /* walk stack entries kept between calls */
#define DONE ((size_t)-1) /* stack position: every level consumed */
/* The expired retained messages' sweep: nodes one slice visits, and the
 * time between slices. A pass over a large tree takes many slices; each
 * stays short however large the tree is. */
#define SWEEP_NODES 1024u
#define SWEEP_EVERY_MS 1000u

static uint32_t seg_hash(const tree *t, const tnode *parent, const uint8_t *s, size_t len)
{
    /* Keyed (hash.h): a client cannot pick levels that share a bucket. The
     * parent's address keeps equal levels under different parents apart. */
    return table_hash(t->key, (uint64_t)(uintptr_t)parent, s, len);
}

static tnode *node_new(broker *b, tnode *parent, const uint8_t *s, size_t len, uint32_t h)
{
    tnode *n = bk_mem_calloc(b, sizeof *n + len);
    if (!n)
        return NULL;
    n->parent = parent;
    n->hashv = h;
    n->seg_len = (uint16_t)len;
    if (len)
        memcpy(n->seg, s, len);
    return n;
}

int bk_tree_init(broker *b, tree *t)
{
    memset(t, 0, sizeof *t);
    t->key[0] = b->hash_key[0];
    t->key[1] = b->hash_key[1];
    t->root = node_new(b, NULL, NULL, 0, 0);
    t->table = bk_mem_calloc(b, TABLE_MIN * sizeof *t->table);
    if (!t->root || !t->table) {
        /* The caller still runs bk_tree_free() (broker_destroy): leave nothing
         * dangling for it to free a second time. */
        bk_mem_free(b, t->root);
        bk_mem_free(b, t->table);
        t->root = NULL;
        t->table = NULL;
        return -1;
    }
    t->table_size = TABLE_MIN;
    return 0;
}

static tnode *child_find(const tree *t, const tnode *parent, const uint8_t *s, size_t len,
                         uint32_t h)
{
    for (tnode *n = t->table[h & (t->table_size - 1)]; n; n = n->hnext)
        if (n->hashv == h && n->parent == parent && n->seg_len == len &&
            memcmp(n->seg, s, len) == 0)
            return n;
    return NULL;
}

/* Rehash the child table into size slots (a power of two). */
static void table_resize(broker *b, tree *t, size_t size)
{
    tnode **table = bk_mem_calloc(b, size * sizeof *table);
    if (!table)
        return; /* keep the old table: slower chains, still correct */
    for (size_t i = 0; i < t->table_size; i++) {
        tnode *n = t->table[i];
        while (n) {
            tnode *next = n->hnext;
            size_t slot = n->hashv & (size - 1);
            n->hnext = table[slot];
            table[slot] = n;
            n = next;
        }
    }
    bk_mem_free(b, t->table);
    t->table = table;
    t->table_size = size;
}

/* Find or create the child of parent for one level. */
static tnode *child_get(broker *b, tree *t, tnode *parent, const uint8_t *s, size_t len)
{
    if (len == 1 && (s[0] == '+' || s[0] == '#')) {
        tnode **slot = s[0] == '+' ? &parent->plus : &parent->hash;
        if (!*slot) /* hashed like any level: sessions index their subs by it */
            *slot = node_new(b, parent, s, 1, seg_hash(t, parent, s, 1));
        return *slot;
    }
    uint32_t h = seg_hash(t, parent, s, len);
    tnode *n = child_find(t, parent, s, len, h);
    if (n)
        return n;
    n = node_new(b, parent, s, len, h);
    if (!n)
        return NULL;
    size_t slot = h & (t->table_size - 1);
    n->hnext = t->table[slot];
    t->table[slot] = n;
    n->next_sibling = parent->first_child;
    if (parent->first_child)
        parent->first_child->prev_sibling = n;
    parent->first_child = n;
    t->node_count++;
    if (t->node_count > t->table_size)
        table_resize(b, t, t->table_size * 2);
    return n;
}

static bool node_is_wild(const tnode *n)
{
    return n->parent && (n->parent->plus == n || n->parent->hash == n);
}

/* The ordinary node after n in a depth-first walk from the root, NULL at
 * the end ('+' and '#' nodes hold no retained message: never visited). */
static tnode *preorder_next(const tree *t, const tnode *n)
{
    if (n->first_child)
        return n->first_child;
    while (n != t->root && !n->next_sibling)
        n = n->parent;
    return n == t->root ? NULL : n->next_sibling;
}

/* Nothing hangs on n: no subscription, retained message or child. */
static bool node_empty(const tnode *n)
{
    return !n->subs && !n->groups && !n->retained && !n->first_child && !n->plus && !n->hash;
}

/* Free empty nodes from n upwards. */
static void prune(broker *b, tree *t, tnode *n)
{
    while (n && n != t->root && node_empty(n)) {
        tnode *parent = n->parent;
        /* The sweep goes on from the node after (a leaf's successor is no
         * ancestor of it: never one this loop frees). */
        if (t->sweep_at == n)
            t->sweep_at = preorder_next(t, n);
        if (node_is_wild(n)) {
            if (parent->plus == n)
                parent->plus = NULL;
            else
                parent->hash = NULL;
        } else {
            tnode **pp = &t->table[n->hashv & (t->table_size - 1)];
            while (*pp != n)
                pp = &(*pp)->hnext;
            *pp = n->hnext;
            if (n->prev_sibling)
                n->prev_sibling->next_sibling = n->next_sibling;
            else
                parent->first_child = n->next_sibling;
            if (n->next_sibling)
                n->next_sibling->prev_sibling = n->prev_sibling;
            t->node_count--;
        }
        bk_mem_free(b, n);
        n = parent;
    }
    /* Shrink the table once it is less than a quarter full, to between a
     * quarter and a half: growing again takes twice as many nodes, so a
     * count moving around one size does not rehash every time. */
    size_t size = t->table_size;
    while (size > TABLE_MIN && t->node_count < size / 4)
        size /= 2;
    if (size != t->table_size)
        table_resize(b, t, size);
}

/* Walk the levels of a filter or topic, creating nodes. NULL on failure;
 * whatever was created is pruned again. */
static tnode *path_get(broker *b, tree *t, const uint8_t *s, size_t len)
{
    tnode *n = t->root;
    size_t start = 0;
    for (;;) {
        size_t end = start;
        while (end < len && s[end] != '/')
            end++;
        tnode *c = child_get(b, t, n, s + start, end - start);
        if (!c) {
            prune(b, t, n);
            return NULL;
        }
        n = c;
        if (end >= len)
            return n;
        start = end + 1;
    }
}

/* Find an existing node for a filter or topic without creating any. */
static tnode *path_find(const tree *t, const uint8_t *s, size_t len)
{
    tnode *n = t->root;
    size_t start = 0;
    for (;;) {
        size_t end = start;
        while (end < len && s[end] != '/')
            end++;
        size_t seg = end - start;
        if (seg == 1 && s[start] == '+')
            n = n->plus;
        else if (seg == 1 && s[start] == '#')
            n = n->hash;
        else
            n = child_find(t, n, s + start, seg, seg_hash(t, n, s + start, seg));
        if (!n || end >= len)
            return n;
        start = end + 1;
    }
}

/* ---- a session's subscriptions: list and index ----------------------- */

static bool group_is(const sgroup *g, const mqtt_bytes *name)
{
    if (!name || !name->p)
        return g == NULL;
    return g && g->name_len == name->len && memcmp(g->name, name->p, name->len) == 0;
}

/* sess's subscription at node n: its non-shared one (group NULL or
 * empty), or its shared one of that group. */
static sub *index_find(const session *sess, const tnode *n, const mqtt_bytes *group)
{
    if (!sess->sub_index)
        return NULL;
    for (sub *x = sess->sub_index[n->hashv & (sess->sub_index_size - 1)]; x; x = x->hnext)
        if (x->node == n && group_is(x->group, group))
            return x;
    return NULL;
}

/* Rebuild the session's index with size slots (a power of two) from its
 * list; false on allocation failure, the old index staying in place. */
static bool index_resize(broker *b, session *sess, uint32_t size)
{
    sub **idx = bk_mem_calloc(b, (size_t)size * sizeof *idx);
    if (!idx)
        return false;
    for (sub *x = sess->subs; x; x = x->sess_next) {
        uint32_t slot = x->node->hashv & (size - 1);
        x->hnext = idx[slot];
        idx[slot] = x;
    }
    bk_mem_free(b, sess->sub_index);
    sess->sub_index = idx;
    sess->sub_index_size = size;
    return true;
}

/* Take x out of its session's list and index. */
static void sess_unlink(broker *b, sub *x)
{
    session *sess = x->sess;
    sub **pp = &sess->sub_index[x->node->hashv & (sess->sub_index_size - 1)];
    while (*pp != x)
        pp = &(*pp)->hnext;
    *pp = x->hnext;
    if (x->sess_prev)
        x->sess_prev->sess_next = x->sess_next;
    else
        sess->subs = x->sess_next;
    if (x->sess_next)
        x->sess_next->sess_prev = x->sess_prev;
    ALWAYS(sess->sub_count > 0);
    sess->sub_count--;
    if (sess->sub_count == 0) {
        bk_mem_free(b, sess->sub_index);
        sess->sub_index = NULL;
        sess->sub_index_size = 0;
    } else if (sess->sub_index_size > INDEX_MIN && sess->sub_count < sess->sub_index_size / 4) {
        (void)index_resize(b, sess, sess->sub_index_size / 2); /* else keep the larger one */
    }
}

sub *bk_tree_find_sub(const tree *t, const session *sess, const uint8_t *f, size_t flen)
{
    if (!sess->sub_count)
        return NULL;
    mqtt_bytes group = {0}, inner = {f, flen};
    if (mqtt_share_split(f, flen, &group, &inner) < 0)
        return NULL;
    const tnode *n = path_find(t, inner.p, inner.len);
    return n ? index_find(sess, n, &group) : NULL;
}

/* The group called name at node n, created when missing (NULL on
 * allocation failure). */
static sgroup *group_get(broker *b, tree *t, tnode *n, const mqtt_bytes *name)
{
    for (sgroup *g = n->groups; g; g = g->next)
        if (group_is(g, name))
            return g;
    sgroup *g = bk_mem_calloc(b, sizeof *g + name->len);
    if (!g)
        return NULL;
    g->node = n;
    if (++t->next_serial == 0)
        t->next_serial = 1;
    g->serial = t->next_serial;
    g->name_len = (uint16_t)name->len;
    memcpy(g->name, name->p, name->len);
    g->next = n->groups;
    n->groups = g;
    return g;
}

/* Free g once it has no members. */
static void group_release(broker *b, sgroup *g)
{
    if (g->members)
        return;
    sgroup **pp = &g->node->groups;
    while (*pp != g)
        pp = &(*pp)->next;
    *pp = g->next;
    bk_mem_free(b, g);
}

sub *bk_tree_subscribe(broker *b, tree *t, session *sess, const uint8_t *f, size_t flen,
                       uint8_t qos, bool *is_new)
{
    mqtt_bytes group = {0}, inner = {f, flen};
    if (mqtt_share_split(f, flen, &group, &inner) < 0)
        return NULL; /* callers check it first */
    tnode *n = path_get(b, t, inner.p, inner.len);
    if (!n)
        return NULL;
    bk_tree_forget_last(t);
    sub *s = index_find(sess, n, &group);
    if (s) {
        s->qos = qos;
        *is_new = false;
        return s;
    }
    sgroup *g = NULL;
    if (group.p && !(g = group_get(b, t, n, &group))) {
        prune(b, t, n);
        return NULL;
    }
    if (!sess->sub_index && !index_resize(b, sess, INDEX_MIN)) {
        if (g)
            group_release(b, g);
        prune(b, t, n);
        return NULL;
    }
    s = bk_mem_calloc(b, sizeof *s);
    if (!s) {
        if (g)
            group_release(b, g);
        if (sess->sub_count == 0) {
            bk_mem_free(b, sess->sub_index);
            sess->sub_index = NULL;
            sess->sub_index_size = 0;
        }
        prune(b, t, n);
        return NULL;
    }
    s->node = n;
    s->sess = sess;
    s->qos = qos;
    s->group = g;
    sub **head = g ? &g->members : &n->subs;
    s->node_next = *head;
    if (*head)
        (*head)->node_prev = s;
    *head = s;
    if (g) {
        g->count++;
        if (!g->cursor)
            g->cursor = s;
    }
    s->sess_next = sess->subs;
    if (sess->subs)
        sess->subs->sess_prev = s;
    sess->subs = s;
    uint32_t slot = n->hashv & (sess->sub_index_size - 1);
    s->hnext = sess->sub_index[slot];
    sess->sub_index[slot] = s;
    sess->sub_count++;
    if (sess->sub_count > sess->sub_index_size && sess->sub_index_size <= UINT32_MAX / 2)
        (void)index_resize(b, sess, sess->sub_index_size * 2); /* else longer chains */
    b->stats.subscriptions_count++;
    *is_new = true;
    return s;
}

/* Take s out of its node, free it, and free the nodes left empty. */
static void unlink_sub(broker *b, tree *t, sub *s)
{
    tnode *n = s->node;
    sgroup *g = s->group;
    bk_tree_forget_last(t);
    if (g && g->cursor == s) /* the next member in line takes its turn */
        g->cursor = s->node_next;
    if (s->node_prev)
        s->node_prev->node_next = s->node_next;
    else if (g)
        g->members = s->node_next;
    else
        n->subs = s->node_next;
    if (s->node_next)
        s->node_next->node_prev = s->node_prev;
    if (g) {
        g->count--;
        if (!g->cursor) /* it was the last in line: back to the first */
            g->cursor = g->members;
        group_release(b, g);
    }
    ALWAYS(b->stats.subscriptions_count > 0);
    b->stats.subscriptions_count--;
    bk_mem_free(b, s);
    prune(b, t, n);
}

void bk_tree_remove_sub(broker *b, tree *t, sub *s)
{
    sess_unlink(b, s);
    unlink_sub(b, t, s);
}

void bk_tree_remove_all(broker *b, tree *t, session *sess)
{
    /* The index goes first, whole: nothing is looked up from here on. */
    bk_mem_free(b, sess->sub_index);
    sess->sub_index = NULL;
    sess->sub_index_size = 0;
    while (sess->subs) {
        sub *x = sess->subs;
        sess->subs = x->sess_next;
        unlink_sub(b, t, x);
    }
    sess->sub_count = 0;
}

static int stack_push(broker *b, tree *t, size_t *depth, tnode *n, size_t pos)
{
    if (*depth == t->stack_cap) {
        size_t cap = t->stack_cap ? t->stack_cap * 2 : 64;
        struct tstack *s = bk_mem_realloc(b, t->stack, cap * sizeof *s);
        if (!s)
            return -1;
        t->stack = s;
        t->stack_cap = cap;
    }
    t->stack[*depth].node = n;
    t->stack[*depth].pos = pos;
    (*depth)++;
    return 0;
}

/* Chain a Subscription Identifier onto m (order is not significant
 * [MQTT-3.3.4-4]). */
static int add_id(broker *b, tree *t, match *m, uint32_t id)
{
    if (t->ids_count == t->ids_cap) {
        size_t cap = t->ids_cap ? t->ids_cap * 2 : 16;
        match_id *a = bk_mem_realloc(b, t->ids, cap * sizeof *a);
        if (!a)
            return -1;
        t->ids = a;
        t->ids_cap = cap;
    }
    t->ids[t->ids_count] = (match_id){id, m->ids};
    m->ids = (uint32_t)++t->ids_count;
    return 0;
}

static int add_groups(broker *b, tree *t, const tnode *n)
{
    for (sgroup *g = n->groups; g; g = g->next) {
        if (t->groups_count == t->groups_cap) {
            size_t cap = t->groups_cap ? t->groups_cap * 2 : 8;
            sgroup **a = bk_mem_realloc(b, t->groups, cap * sizeof *a);
            if (!a)
                return -1;
            t->groups = a;
            t->groups_cap = cap;
        }
        t->groups[t->groups_count++] = g;
    }
    return 0;
}

static int add_subs(broker *b, tree *t, const tnode *n, size_t *count)
{
    for (const sub *s = n->subs; s; s = s->node_next) {
        session *sess = s->sess;
        /* 3.1.1 subscriptions have no options: always "local". */
        bool local = !(s->options & MQTT_SUBOPT_NO_LOCAL);
        match *m;
        if (sess->match_epoch == t->epoch) {
            m = &t->matches[sess->match_idx];
            if (s->qos > m->qos)
                m->qos = s->qos;
            /* One subscription no deny rule touches proves the topic is
             * not denied to this session. */
            m->acl_check = m->acl_check && s->acl_check;
            if (local && (!(m->flags & MATCH_LOCAL) || s->qos > m->qos_local))
                m->qos_local = s->qos;
        } else {
            if (*count == t->matches_cap) {
                size_t cap = t->matches_cap ? t->matches_cap * 2 : 64;
                match *nm = bk_mem_realloc(b, t->matches, cap * sizeof *nm);
                if (!nm)
                    return -1;
                t->matches = nm;
                t->matches_cap = cap;
            }
            sess->match_epoch = t->epoch;
            sess->match_idx = (uint32_t)*count;
            m = &t->matches[*count];
            m->sess = sess;
            m->qos = s->qos;
            m->acl_check = s->acl_check;
            m->flags = 0;
            m->qos_local = s->qos;
            m->ids = 0;
            (*count)++;
        }
        if (local)
            m->flags |= MATCH_LOCAL;
        if (s->options & MQTT_SUBOPT_RETAIN_AS_PUBLISHED)
            m->flags |= local ? MATCH_RAP | MATCH_RAP_LOCAL : MATCH_RAP;
        if (s->sub_id && add_id(b, t, m, s->sub_id | (local ? 0 : MATCH_ID_NO_LOCAL)) != 0)
            return -1;
    }
    return n->groups ? add_groups(b, t, n) : 0;
}

long bk_tree_match(broker *b, tree *t, const uint8_t *topic, size_t tlen, match **out)
{
    size_t count = 0, depth = 0;
    bool dollar = tlen > 0 && topic[0] == '$';
    if (t->last_valid && tlen == t->last_len && memcmp(topic, t->last_topic, tlen) == 0) {
        *out = t->matches;
        return (long)t->last_count;
    }
    t->last_valid = false;
    t->epoch++;
    t->ids_count = 0;
    t->groups_count = 0;
    if (stack_push(b, t, &depth, t->root, 0) != 0)
        return -1;
    while (depth > 0) {
        depth--;
        tnode *n = t->stack[depth].node;
        size_t pos = t->stack[depth].pos;
        /* Top-level wildcards never match topics starting with '$'. */
        bool wild_ok = !(n == t->root && dollar);
        if (wild_ok && n->hash && add_subs(b, t, n->hash, &count) != 0)
            return -1;
        if (pos == DONE) {
            if (add_subs(b, t, n, &count) != 0)
                return -1;
            continue;
        }
        size_t end = pos;
        while (end < tlen && topic[end] != '/')
            end++;
        size_t next = end < tlen ? end + 1 : DONE;
        if (n->first_child) {
            tnode *c = child_find(t, n, topic + pos, end - pos,
                                  seg_hash(t, n, topic + pos, end - pos));
            if (c && stack_push(b, t, &depth, c, next) != 0)
                return -1;
        }
        if (wild_ok && n->plus && stack_push(b, t, &depth, n->plus, next) != 0)
            return -1;
    }
    if (tlen <= TREE_LAST_TOPIC_MAX) {
        memcpy(t->last_topic, topic, tlen);
        t->last_len = (uint16_t)tlen;
        t->last_count = count;
        t->last_valid = true;
    }
    *out = t->matches;
    return (long)count;
}

/* n's retained message leaves the tree and its counts (the node stays). */
static void retained_unset(broker *b, tree *t, tnode *n)
{
    msg *m = n->retained;
    b->stats.retained_bytes -= m->topic_len + m->payload_len;
    ALWAYS(b->stats.retained_count > 0);
    b->stats.retained_count--;
    if (m->expiry_ms) {
        ALWAYS(t->retained_expiring > 0);
        t->retained_expiring--;
    }
    n->retained = NULL;
    bk_msg_unref(b, m);
}

/* n's retained message expired: removed, and the store told, so the
 * counts, $SYS and the disk agree [MQTT-3.3.2-5]. The node stays (a walk
 * may be on it): the caller prunes it, or marks it for the sweep. */
static void retained_expire(broker *b, tree *t, tnode *n)
{
    const msg *m = n->retained;
    bk_journal_retain_del(b, bk_msg_topic(m), m->topic_len);
    retained_unset(b, t, n);
}

int bk_tree_set_retained(broker *b, tree *t, const uint8_t *topic, size_t tlen, msg *m)
{
    tnode *n;
    if (!m) {
        n = path_find(t, topic, tlen);
        if (!n || !n->retained)
            return 0;
        retained_unset(b, t, n);
        prune(b, t, n);
        return 0;
    }
    n = path_get(b, t, topic, tlen);
    if (!n)
        return -1;
    if (n->retained)
        retained_unset(b, t, n);
    b->stats.retained_count++;
    b->stats.retained_bytes += m->topic_len + m->payload_len;
    if (m->expiry_ms)
        t->retained_expiring++;
    n->retained = bk_msg_ref(m);
    return 0;
}

uint64_t bk_tree_retained_size(const tree *t, const uint8_t *topic, size_t tlen)
{
    const tnode *n = path_find(t, topic, tlen);
    return n && n->retained ? (uint64_t)n->retained->topic_len + n->retained->payload_len : 0;
}

/* Next ordinary sibling, skipping '$' levels directly under the root. */
static tnode *sibling_skip(const tree *t, tnode *n, bool skip_dollar)
{
    while (n && skip_dollar && n->parent == t->root && n->seg_len > 0 && n->seg[0] == '$')
        n = n->next_sibling;
    return n;
}

/* fn on n's retained message, if any; with expire, one whose expiry
 * passed then leaves the tree (fn saw it: a subscribe counts the copy it
 * does not send). The node is not freed here, the walk being on it: an
 * empty one is left to the sweep. */
static void visit(broker *b, tree *t, tnode *n, bool expire, retained_fn fn, void *ctx)
{
    msg *m = n->retained;
    if (!m)
        return;
    fn(b, ctx, m);
    if (expire && bk_msg_expired(m, b->now_ms)) {
        retained_expire(b, t, n);
        t->husks = true;
    }
}

/* Every retained message at or below start ('#' walk). */
static void walk_subtree(broker *b, tree *t, tnode *start, bool skip_dollar, bool expire,
                         retained_fn fn, void *ctx)
{
    if (start != t->root)
        visit(b, t, start, expire, fn, ctx);
    tnode *cur = sibling_skip(t, start->first_child, skip_dollar);
    while (cur) {
        visit(b, t, cur, expire, fn, ctx);
        if (cur->first_child) {
            cur = cur->first_child;
            continue;
        }
        while (cur != start && !cur->next_sibling)
            cur = cur->parent;
        if (cur == start)
            break;
        /* Skipping can only exhaust the root's own children: the end. */
        cur = sibling_skip(t, cur->next_sibling, skip_dollar);
    }
}

int bk_tree_for_retained(broker *b, tree *t, const uint8_t *f, size_t flen, retained_fn fn,
                         void *ctx)
{
    size_t depth = 0;
    if (stack_push(b, t, &depth, t->root, 0) != 0)
        return -1;
    while (depth > 0) {
        depth--;
        tnode *n = t->stack[depth].node;
        size_t pos = t->stack[depth].pos;
        if (pos == DONE) {
            visit(b, t, n, true, fn, ctx);
            continue;
        }
        size_t end = pos;
        while (end < flen && f[end] != '/')
            end++;
        size_t next = end < flen ? end + 1 : DONE;
        bool at_root = n == t->root;
        if (end - pos == 1 && f[pos] == '#') {
            walk_subtree(b, t, n, at_root, true, fn, ctx);
        } else if (end - pos == 1 && f[pos] == '+') {
            for (tnode *c = sibling_skip(t, n->first_child, at_root); c;
                 c = sibling_skip(t, c->next_sibling, at_root))
                if (stack_push(b, t, &depth, c, next) != 0)
                    return -1;
        } else {
            tnode *c = child_find(t, n, f + pos, end - pos, seg_hash(t, n, f + pos, end - pos));
            if (c && stack_push(b, t, &depth, c, next) != 0)
                return -1;
        }
    }
    if (t->stack_cap > STACK_KEEP) {
        /* A '+' over a level with many children pushed them all: do not
         * keep that much scratch for the next walk. */
        bk_mem_free(b, t->stack);
        t->stack = NULL;
        t->stack_cap = 0;
    }
    return 0;
}

size_t bk_tree_filter_text(const tnode *n, char *buf, size_t cap)
{
    /* Measure first, then fill from the end backwards. */
    size_t len = 0;
    for (const tnode *x = n; x->parent; x = x->parent)
        len += x->seg_len + (x->parent->parent ? 1u : 0u);
    if (len == 0 || len > cap)
        return 0;
    size_t pos = len;
    for (const tnode *x = n; x->parent; x = x->parent) {
        pos -= x->seg_len;
        memcpy(buf + pos, x->seg, x->seg_len);
        if (x->parent->parent)
            buf[--pos] = '/';
    }
    return len;
}

size_t bk_sub_filter_text(const sub *x, char *buf, size_t cap)
{
    static const char prefix[] = "$share/";
    const size_t plen = sizeof prefix - 1;
    const sgroup *g = x->group;
    if (!g)
        return bk_tree_filter_text(x->node, buf, cap);
    size_t head = plen + g->name_len + 1;
    if (cap <= head)
        return 0;
    size_t n = bk_tree_filter_text(x->node, buf + head, cap - head);
    if (n == 0)
        return 0;
    memcpy(buf, prefix, plen);
    memcpy(buf + plen, g->name, g->name_len);
    buf[head - 1] = '/';
    return head + n;
}

int bk_tree_for_all_retained(broker *b, tree *t, retained_fn fn, void *ctx)
{
    walk_subtree(b, t, t->root, false, false, fn, ctx);
    return 0;
}

uint64_t bk_tree_sweep_deadline(const tree *t)
{
    bool work = t->retained_expiring > 0 || t->husks || t->husks_pass;
    return work ? t->sweep_next_ms : UINT64_MAX;
}

void bk_tree_sweep(broker *b, tree *t, uint64_t now_ms)
{
    t->sweep_next_ms = now_ms + SWEEP_EVERY_MS;
    for (unsigned i = 0; i < SWEEP_NODES; i++) {
        tnode *n = t->sweep_at;
        if (!n) {
            /* A new pass: it frees the empty nodes left so far. */
            t->husks_pass = t->husks;
            t->husks = false;
            n = t->root;
        }
        /* The next node first: pruning n frees no node after it. */
        t->sweep_at = preorder_next(t, n);
        if (n->retained && bk_msg_expired(n->retained, now_ms))
            retained_expire(b, t, n);
        if (n != t->root && node_empty(n))
            prune(b, t, n); /* an expired message's, or one a walk emptied */
        if (!t->sweep_at) {
            t->husks_pass = false; /* the pass is over: at most one a slice */
            return;
        }
    }
}

static void free_subtree(broker *b, tnode *n)
{
    /* Post-order without recursion: detach children as we descend. */
    while (n) {
        tnode *c = n->first_child ? n->first_child : n->plus ? n->plus : n->hash;
        if (c) {
            if (c == n->first_child)
                n->first_child = c->next_sibling;
            else if (c == n->plus)
                n->plus = NULL;
            else
                n->hash = NULL;
            n = c;
            continue;
        }
        tnode *parent = n->parent;
        bk_msg_unref(b, n->retained);
        while (n->subs) {
            sub *s = n->subs;
            n->subs = s->node_next;
            bk_mem_free(b, s);
        }
        while (n->groups) {
            sgroup *g = n->groups;
            n->groups = g->next;
            while (g->members) {
                sub *s = g->members;
                g->members = s->node_next;
                bk_mem_free(b, s);
            }
            bk_mem_free(b, g);
        }
        bk_mem_free(b, n);
        n = parent;
    }
}

void bk_tree_free(broker *b, tree *t)
{
    /* Sessions (and their subscription lists) are freed before the tree. */
    free_subtree(b, t->root);
    bk_mem_free(b, t->table);
    bk_mem_free(b, t->matches);
    bk_mem_free(b, t->stack);
    bk_mem_free(b, t->ids);
    bk_mem_free(b, t->groups);
    bk_mem_free(b, t->idbuf);
    memset(t, 0, sizeof *t);
}
