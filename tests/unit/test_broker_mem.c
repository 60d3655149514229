/*
 * test_broker_mem.c - the core's accounted allocator (src/broker/mem.c):
 * an 8-byte header per block (ADR-062), exact accounting through alloc,
 * realloc and free, 8-byte alignment, and sizes beyond the header's range
 * refused without reaching the platform's allocator.
 */
#include "broker/broker-t.h"
#include "broker/mem.h"
#include "test.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct rec_alloc {
    size_t last_size; /* the size the platform was last asked for */
    unsigned calls;
} rec_alloc;

static void *rec_malloc(void *ctx, size_t size)
{
    rec_alloc *r = ctx;
    r->last_size = size;
    r->calls++;
    return malloc(size);
}

static void *rec_realloc(void *ctx, void *p, size_t size)
{
    rec_alloc *r = ctx;
    r->last_size = size;
    r->calls++;
    return realloc(p, size);
}

static void rec_free(void *ctx, void *p)
{
    (void)ctx;
    free(p);
}

static broker *mem_broker(rec_alloc *r)
{
    broker_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.limits.sys_interval_s = UINT32_MAX;
    cfg.version = "tern-test";
    cfg.allocator.ctx = r;
    cfg.allocator.alloc = rec_malloc;
    cfg.allocator.realloc = rec_realloc;
    cfg.allocator.free = rec_free;
    return broker_create(&cfg, 0);
}

static uint64_t used(broker *b)
{
    broker_stats st;
    broker_get_stats(b, &st);
    return st.memory_used;
}

TEST(mem_block_costs_its_size_plus_an_8_byte_header)
{
    rec_alloc r = {0, 0};
    broker *b = mem_broker(&r);
    CHECK(b != NULL);
    uint64_t base = used(b);
    void *p = bk_mem_alloc(b, 240); /* a broker_conn's size: 248, within a 256 class */
    CHECK(p != NULL);
    CHECK_EQ(r.last_size, 248u);
    CHECK_EQ(used(b), base + 248u);
    CHECK_EQ((uintptr_t)p % 8u, 0u);
    bk_mem_free(b, p);
    CHECK_EQ(used(b), base);
    broker_destroy(b);
}

TEST(mem_realloc_keeps_the_bytes_and_the_account)
{
    rec_alloc r = {0, 0};
    broker *b = mem_broker(&r);
    CHECK(b != NULL);
    uint64_t base = used(b);
    char *p = bk_mem_alloc(b, 10);
    CHECK(p != NULL);
    memcpy(p, "0123456789", 10);
    p = bk_mem_realloc(b, p, 5000);
    CHECK(p != NULL);
    CHECK_EQ(r.last_size, 5008u);
    CHECK_MEM(p, "0123456789", 10);
    CHECK_EQ(used(b), base + 5008u);
    p = bk_mem_realloc(b, p, 3);
    CHECK(p != NULL);
    CHECK_MEM(p, "012", 3);
    CHECK_EQ(used(b), base + 11u);
    bk_mem_free(b, p);
    CHECK_EQ(used(b), base);
    broker_destroy(b);
}

TEST(mem_sizes_beyond_the_header_range_fail_without_asking_the_platform)
{
    rec_alloc r = {0, 0};
    broker *b = mem_broker(&r);
    CHECK(b != NULL);
    uint64_t base = used(b);
    unsigned calls = r.calls;
    CHECK(bk_mem_alloc(b, (size_t)UINT32_MAX) == NULL);
    CHECK(bk_mem_alloc(b, SIZE_MAX) == NULL);
    CHECK_EQ(r.calls, calls);
    char *p = bk_mem_alloc(b, 16);
    CHECK(p != NULL);
    calls = r.calls;
    CHECK(bk_mem_realloc(b, p, (size_t)UINT32_MAX - 7u) == NULL);
    CHECK_EQ(r.calls, calls); /* refused before the platform */
    CHECK_EQ(used(b), base + 24u); /* the old block stays, accounted */
    bk_mem_free(b, p);
    CHECK_EQ(used(b), base);
    broker_destroy(b);
}
