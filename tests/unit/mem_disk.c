/*
 * mem_disk.c - the layout tests' memory disk (mem_disk.h).
 */
#include "mem_disk.h"

#include <stdlib.h>
#include <string.h>

enum { MD_EIO = -1 };

/* What one unflushed write overwrote. */
struct mem_disk_undo {
    size_t off, len;
    uint8_t *old;
};

enum { MD_CHUNK = 65536 };

static void remember(struct mem_disk *m, size_t off, size_t len)
{
    if (m->dirty)
        for (size_t c = off / MD_CHUNK; c <= (off + len - 1) / MD_CHUNK; c++)
            m->dirty[c] = 1;
    if (!m->track_unflushed)
        return;
    if (!m->undo)
        m->undo = calloc(MEM_DISK_UNDO_MAX, sizeof *m->undo);
    if (!m->undo || m->unflushed >= MEM_DISK_UNDO_MAX)
        abort(); /* a test with more unflushed writes needs a larger log */
    struct mem_disk_undo *u = &m->undo[m->unflushed++];
    u->off = off;
    u->len = len;
    u->old = malloc(len);
    if (!u->old)
        abort();
    memcpy(u->old, m->data + off, len);
}

static void forget(struct mem_disk *m)
{
    for (unsigned i = 0; i < m->unflushed; i++)
        free(m->undo[i].old);
    m->unflushed = 0;
}

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
    remember(m, (size_t)(lba * m->disk.logical_block), len);
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
    if (m->dead)
        return MD_EIO;
    forget(m);
    return 0;
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
    forget(m);
    free(m->undo);
    free(m->dirty);
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

int mem_disk_grow(struct mem_disk *m, uint64_t capacity)
{
    size_t bytes = (size_t)(capacity * m->disk.logical_block);
    uint8_t *d = realloc(m->data, bytes);
    if (!d)
        return -1;
    if (bytes > m->bytes)
        memset(d + m->bytes, 0, bytes - m->bytes);
    m->data = d;
    m->bytes = bytes;
    m->disk.capacity = capacity;
    return 0;
}

void mem_disk_lose_unflushed(struct mem_disk *m, uint64_t keep)
{
    for (unsigned i = m->unflushed; i-- > 0;)
        if (!(i < 64 && (keep >> i & 1)))
            memcpy(m->data + m->undo[i].off, m->undo[i].old, m->undo[i].len);
    forget(m);
    m->dead = 0;
    m->fail_write = 0;
    m->tear_write = 0;
}

void mem_disk_restore(struct mem_disk *m, const uint8_t *image)
{
    const size_t chunks = (m->bytes + MD_CHUNK - 1) / MD_CHUNK;
    if (!m->dirty) {
        m->dirty = calloc(chunks, 1);
        if (!m->dirty)
            abort();
        memcpy(m->data, image, m->bytes);
        return;
    }
    for (size_t c = 0; c < chunks; c++)
        if (m->dirty[c]) {
            size_t off = c * MD_CHUNK, n = m->bytes - off < MD_CHUNK ? m->bytes - off : MD_CHUNK;
            memcpy(m->data + off, image + off, n);
            m->dirty[c] = 0;
        }
}
