/*
 * journal_decode.c - the reader of journal records: journal_next()
 * (journal.h), which the store uses to apply batches and the tests and the
 * journal fuzzer use to read them. Apart from the writer (journal.c)
 * because it shares nothing with it but the format, needs none of the
 * core's state, and is the half that reads bytes the core did not just
 * write (a batch read back, a fuzzer's input): everything is
 * bounds-checked, and a record that runs past the end is reported, never
 * read beyond.
 */
#include "broker/journal.h"

#include <string.h>

typedef struct jr_reader {
    const uint8_t *p;
    size_t len, pos;
    bool bad;
} jr_reader;

static uint64_t get_uint(jr_reader *r, unsigned n)
{
    uint64_t v = 0;
    if (r->bad || r->len - r->pos < n) {
        r->bad = true;
        return 0;
    }
    for (unsigned i = 0; i < n; i++)
        v = v << 8 | r->p[r->pos++];
    return v;
}

static journal_bytes get_bytes(jr_reader *r)
{
    journal_bytes out = {NULL, 0};
    uint32_t n = (uint32_t)get_uint(r, 4);
    if (r->bad || r->len - r->pos < n) {
        r->bad = true;
        return out;
    }
    out.p = r->p + r->pos;
    out.len = n;
    r->pos += n;
    return out;
}

int journal_next(const uint8_t *data, size_t len, size_t *pos, journal_rec *out)
{
    if (*pos >= len)
        return 0;
    jr_reader r = {data, len, *pos, false};
    memset(out, 0, sizeof *out);
    out->type = (journal_type)get_uint(&r, 1);
    switch (out->type) {
    case J_RETAIN_SET:
        out->topic = get_bytes(&r);
        out->payload = get_bytes(&r);
        out->qos = (uint8_t)get_uint(&r, 1);
        out->props = get_bytes(&r);
        out->expiry_at = get_uint(&r, 8);
        break;
    case J_RETAIN_DEL:
        out->topic = get_bytes(&r);
        break;
    case J_SESSION_PUT:
        out->client_id = get_bytes(&r);
        out->identity = get_bytes(&r);
        out->flags = (uint8_t)get_uint(&r, 1);
        out->expiry_interval = (uint32_t)get_uint(&r, 4);
        out->expiry_at = get_uint(&r, 8);
        break;
    case J_SESSION_DEL:
    case J_WILL_DEL:
        out->client_id = get_bytes(&r);
        break;
    case J_SUB_PUT:
    case J_SUB_DEL:
        out->client_id = get_bytes(&r);
        out->topic = get_bytes(&r);
        if (out->type == J_SUB_PUT) {
            out->qos = (uint8_t)get_uint(&r, 1);
            out->options = (uint8_t)get_uint(&r, 1);
            out->sub_id = (uint32_t)get_uint(&r, 4);
        }
        break;
    case J_MSG_PUT:
        out->msg_id = get_uint(&r, 8);
        out->topic = get_bytes(&r);
        out->payload = get_bytes(&r);
        out->qos = (uint8_t)get_uint(&r, 1);
        out->flags = (uint8_t)get_uint(&r, 1);
        out->props = get_bytes(&r);
        out->expiry_at = get_uint(&r, 8);
        break;
    case J_MSG_DEL:
        out->msg_id = get_uint(&r, 8);
        break;
    case J_QUEUE_PUT:
        out->client_id = get_bytes(&r);
        out->seq = get_uint(&r, 8);
        out->msg_id = get_uint(&r, 8);
        out->qos = (uint8_t)get_uint(&r, 1);
        out->flags = (uint8_t)get_uint(&r, 1);
        out->sub_id = (uint32_t)get_uint(&r, 4);
        out->sub_ids = get_bytes(&r);
        if (out->sub_ids.len % 4 != 0)
            r.bad = true; /* whole u32 identifiers only */
        break;
    case J_QUEUE_STATE:
        out->client_id = get_bytes(&r);
        out->seq = get_uint(&r, 8);
        out->state = (uint8_t)get_uint(&r, 1);
        out->packet_id = (uint16_t)get_uint(&r, 2);
        break;
    case J_QUEUE_DEL:
        out->client_id = get_bytes(&r);
        out->seq = get_uint(&r, 8);
        break;
    case J_INQOS2_PUT:
    case J_INQOS2_DEL:
        out->client_id = get_bytes(&r);
        out->packet_id = (uint16_t)get_uint(&r, 2);
        break;
    case J_RESET:
        break;
    case J_WILL_PUT:
        out->client_id = get_bytes(&r);
        out->topic = get_bytes(&r);
        out->payload = get_bytes(&r);
        out->qos = (uint8_t)get_uint(&r, 1);
        out->flags = (uint8_t)get_uint(&r, 1);
        out->props = get_bytes(&r);
        out->expiry_at = get_uint(&r, 8);
        out->fire_at = get_uint(&r, 8);
        break;
    default:
        return -1;
    }
    if (r.bad)
        return -1;
    *pos = r.pos;
    return 1;
}
