/*
 * queue_store.c - the store queue's squeue_store over an open SQLite store
 * (store.h): what both platforms' store workers call once the store exists.
 * Kept apart from queue.c so the queue itself needs no SQLite.
 */
#include "store/queue.h"

static store_rc apply(void *ctx, const broker_store_batch *batches, size_t n)
{
    return store_apply(ctx, batches, n);
}

static store_rc backup_begin(void *ctx)
{
    return store_backup_begin(ctx);
}

static store_rc backup_step(void *ctx, bool *done)
{
    return store_backup_step(ctx, done);
}

static void get_stats(void *ctx, store_stats *out)
{
    store_get_stats(ctx, out);
}

static store_rc load(void *ctx, broker *b, char *err, size_t err_size)
{
    return store_load(ctx, b, err, err_size);
}

void squeue_store_of(squeue_store *out, store *s)
{
    out->apply = apply;
    out->backup_begin = backup_begin;
    out->backup_step = backup_step;
    out->get_stats = get_stats;
    out->upkeep_due = NULL;
    out->upkeep = NULL;
    out->take_backup_wish = NULL;
    out->load = load;
    out->ctx = s;
}
