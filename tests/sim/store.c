/*
 * store.c - the durable store for durable seeds (SPEC H5, issue 7). The
 * core's batches are taken after every step and committed late, in random
 * prefixes, into the in-memory store model of the unit tests; now and then
 * one fails (the core then closes the publishers waiting on it and rewrites
 * its state in its next batch). A crash loses every batch not yet committed
 * (unsynced writes), destroys the broker with every connection, and restores
 * a new one from the store; model_crash() then makes the oracle's view what
 * the store kept. The broker stays down up to SIM_DOWN_MS first: its wall
 * clock (SIM_WALL_MS + simulator time) journals an offline session's
 * expiry and a message's as wall-clock times, so they run on while it is
 * down, and the restore ends the sessions and drops the queued and
 * retained messages whose time passed (issue 15: expiry across crashes).
 *
 * Known failing (a core issue, reported, not fixed here): a QoS 2 PUBLISH
 * the core sends before the record of its packet id is committed is, after
 * a crash, re-sent under another id (the receiver delivers it twice, e.g.
 * seed 1927 --durable) or its id is reused for another message (which the
 * receiver drops as a duplicate, e.g. seed 13 --durable). Default-mode
 * seeds 567 and 1035 hit it; the 200 seeds of make sim-test do not.
 *
 * To know which session incarnation a stored session is, each batch is
 * tagged when taken with the model's live incarnations: the records of a
 * batch describe the core's state up to that moment.
 */
#include "sim.h"

#include "../unit/model_store.h"

#include <stdlib.h>
#include <string.h>

void store_init(world *w)
{
    for (int i = 0; i < SIM_ALL; i++)
        w->store_inc[i] = -1;
    if (!w->durable)
        return;
    w->ms = malloc(sizeof *w->ms);
    if (!w->ms)
        abort();
    ms_init(w->ms);
}

void store_free(world *w)
{
    free(w->ms);
    w->ms = NULL;
}

int store_rows(const world *w)
{
    if (!w->durable)
        return 0;
    int n = 0;
    for (const char *t = "RSBMQIW"; *t; t++)
        n += ms_count(w->ms, *t);
    return n;
}

void store_take(world *w)
{
    if (!w->durable)
        return;
    broker_store_batch b;
    while (broker_store_take(w->b, &b)) {
        if (w->npend == SIM_MAX_PEND)
            store_commit(w, 1);
        w->pend[w->npend] = b;
        memcpy(w->pend_tag[w->npend], w->cur_inc, sizeof w->cur_inc);
        w->npend++;
    }
}

/* Which client a stored client id belongs to, or -1. */
static int client_index(const world *w, const uint8_t *p, size_t len)
{
    for (int i = 0; i < SIM_ALL; i++)
        if (strlen(w->cl[i].id) == len && memcmp(w->cl[i].id, p, len) == 0)
            return i;
    return -1;
}

/* Follow the sessions of a committed batch (tag: its incarnations). */
static void track_sessions(world *w, const broker_store_batch *b, const int *tag)
{
    size_t pos = 0;
    journal_rec rec;
    int rc;
    /* A session put and removed within one batch (say a snapshot after a
     * failure, then an expiry) has no incarnation when the batch is
     * taken: only a put left standing at the end of the batch needs one. */
    bool dangling[SIM_ALL] = {false};
    while ((rc = journal_next(b->data, b->len, &pos, &rec)) == 1) {
        int i;
        switch (rec.type) {
        case J_RESET:
            for (i = 0; i < SIM_ALL; i++)
                w->store_inc[i] = -1;
            break;
        case J_SESSION_PUT:
        case J_SESSION_DEL:
            i = client_index(w, rec.client_id.p, rec.client_id.len);
            if (i < 0) {
                sim_fail(w, "store: a session record for an unknown client id");
                return;
            }
            w->store_inc[i] = rec.type == J_SESSION_PUT ? tag[i] : -1;
            dangling[i] = rec.type == J_SESSION_PUT && tag[i] < 0;
            break;
        default:
            break;
        }
    }
    if (rc < 0)
        sim_fail(w, "store: batch %llu is malformed", (unsigned long long)b->seq);
    for (int i = 0; i < SIM_ALL; i++)
        if (dangling[i])
            sim_fail(w, "store: batch %llu keeps a session of %s, which has none",
                     (unsigned long long)b->seq, w->cl[i].id);
}

static void drop_oldest(world *w, int n)
{
    memmove(w->pend, w->pend + n, (size_t)(w->npend - n) * sizeof w->pend[0]);
    memmove(w->pend_tag, w->pend_tag + n, (size_t)(w->npend - n) * sizeof w->pend_tag[0]);
    w->npend -= n;
}

int store_commit(world *w, int n)
{
    if (!w->durable || n <= 0)
        return 0;
    if (n > w->npend)
        n = w->npend;
    for (int j = 0; j < n && !w->failed; j++) {
        const broker_store_batch *b = &w->pend[j];
        track_sessions(w, b, w->pend_tag[j]);
        if (!ms_apply(w->ms, b->data, b->len))
            sim_fail(w, "store: batch %llu is malformed", (unsigned long long)b->seq);
        sim_trace(w, "store: batch %llu committed (%u records)", (unsigned long long)b->seq,
                  b->records);
        broker_store_done(w->b, b->seq, true);
        w->n_commits++;
    }
    drop_oldest(w, n);
    return n; /* the answers it released go out at the end of the turn */
}

void store_fail(world *w)
{
    if (!w->durable || w->npend == 0)
        return;
    /* A failing disk fails what follows too: a later batch committed on
     * top of a lost one would leave the store inconsistent. */
    for (int j = 0; j < w->npend; j++) {
        sim_trace(w, "store: batch %llu failed", (unsigned long long)w->pend[j].seq);
        broker_store_done(w->b, w->pend[j].seq, false);
        w->n_failed++;
    }
    drop_oldest(w, w->npend);
    /* The core closes the publishers whose acknowledgements it dropped;
     * for it their sessions are offline from now (the expiry clock runs),
     * though the transport closes only once their output is flushed. */
    for (int k = 0; k < w->nconns; k++) {
        if (net_closing(&w->conns[k])) {
            w->conns[k].expect_close = true;
            model_conn_end(w, k);
        }
    }
}

void store_crash(world *w)
{
    if (!w->durable)
        return;
    sim_trace(w, "CRASH: %d batches lost", w->npend);
    w->npend = 0;
    net_stop(w); /* every link dropped, the layer destroyed */
    broker_stats st;
    broker_get_stats(w->b, &st);
    w->dropped_before += st.publish_dropped; /* the core's count starts afresh */
    broker_destroy(w->b);
    w->b = NULL;
    if (w->at.live_bytes != 0 || w->at.live_blocks != 0) {
        sim_fail(w, "crash: %llu bytes in %llu blocks left after broker_destroy",
                 (unsigned long long)w->at.live_bytes, (unsigned long long)w->at.live_blocks);
        return;
    }
    /* Down a while: expiries run on (the store records them as wall
     * times), the clients wait. */
    uint64_t down = rng_below(&w->r, SIM_DOWN_MS);
    sim_trace(w, "CRASH: down for %llu ms", (unsigned long long)down);
    w->now += down;
    w->n_downtimes += down > 0;
    w->b = broker_create(&w->cfg, w->now);
    if (!w->b)
        abort();
    broker_set_wall_clock(w->b, SIM_WALL_MS + w->now, w->now);
    net_start(w);
    if (!ms_load(w->ms, w->b)) {
        sim_fail(w, "crash: restoring from the store failed");
        return;
    }
    w->n_crashes++;
    model_crash(w);
    /* Restoring records only what it drops because it expired while the
     * broker was down: sessions (model_crash ended them too), unsent
     * queue entries, retained messages, and the messages only they
     * referenced. */
    store_take(w);
    for (int j = 0; j < w->npend && !w->failed; j++) {
        size_t pos = 0;
        journal_rec rec;
        int rc;
        while ((rc = journal_next(w->pend[j].data, w->pend[j].len, &pos, &rec)) == 1) {
            if (rec.type == J_MSG_DEL || rec.type == J_QUEUE_DEL || rec.type == J_RETAIN_DEL)
                continue;
            int i = client_index(w, rec.client_id.p, rec.client_id.len);
            if (rec.type != J_SESSION_DEL || i < 0 || w->cur_inc[i] >= 0) {
                sim_fail(w, "crash: restore recorded a type %d record, not the end of an "
                            "expired session or message", (int)rec.type);
                break;
            }
        }
        if (rc < 0)
            sim_fail(w, "crash: restore produced a malformed batch");
    }
}
