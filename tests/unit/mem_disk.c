/*
 * mem_disk.c - the layout tests' memory disk (mem_disk.h).
 */
#include "mem_disk.h"

#include <stdlib.h>
#include <string.h>

enum { MD_EIO = -1 };

static int md_read(void *ctx, uint64_t lba, uint32_t count, void *buf)
{
    struct mem_disk *m = ctx;
    m->reads++;
    if (m->fail_read_lba >= lba && m->fail_read_lba - lba < count)
        return MD_EIO;
    memcpy(buf, m->data + lba * m->disk.logical_block, (size_t)count * m->disk.logical_block);
    return 0;
}

static int md_write(void *ctx, uint64_t lba, uint32_t count, const void *buf)
{
    struct mem_disk *m = ctx;
    size_t len = (size_t)count * m->disk.logical_block;
    int n = (int)++m->writes;
    if (m->dead || n == m->fail_write)
        return MD_EIO;
    if (n == m->tear_write) {
        memcpy(m->data + lba * m->disk.logical_block, buf, m->tear_bytes < len ? m->tear_bytes : len);
        m->dead = 1;
        return MD_EIO;
    }
    memcpy(m->data + lba * m->disk.logical_block, buf, len);
    return 0;
}

static int md_flush(void *ctx)
{
    struct mem_disk *m = ctx;
    m->flushes++;
    return m->dead ? MD_EIO : 0;
}

static const char *md_text(int status) { return status == MD_EIO ? "I/O error" : NULL; }

int mem_disk_init(struct mem_disk *m, uint32_t logical, uint32_t physical, uint64_t capacity)
{
    memset(m, 0, sizeof *m);
    m->bytes = (size_t)(capacity * logical);
    m->data = calloc(1, m->bytes);
    uint8_t *io = aligned_alloc(512, KDISK_IO_BYTES);
    if (!m->data || !io) {
        free(m->data);
        free(io);
        return -1;
    }
    m->fail_read_lba = UINT64_MAX;
    m->disk = (struct kdisk){
        .read = md_read,
        .write = md_write,
        .flush = md_flush,
        .status_text = md_text,
        .ctx = m,
        .logical_block = logical,
        .physical_block = physical,
        .capacity = capacity,
        .io = io,
    };
    return 0;
}

void mem_disk_free(struct mem_disk *m)
{
    free(m->data);
    free(m->disk.io);
    memset(m, 0, sizeof *m);
}

void mem_disk_read_only(struct mem_disk *m)
{
    m->disk.write = NULL;
    m->disk.flush = NULL;
}

uint8_t *mem_disk_at(struct mem_disk *m, uint64_t off) { return m->data + off; }
