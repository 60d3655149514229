/*
 * tern-disk-detect.c - the pure parts of tern-disk (tern-disk.h): what an
 * image is from its first and last bytes, and the verdicts on a region's
 * two kvfs header copies. No I/O: tests/fuzz/fuzz_tdisk.c drives both
 * with arbitrary bytes.
 */
#include "tern-disk.h"

#include "platform/kernel/disk/super.h"

#include <string.h>

static const uint8_t gpt_sig[8] = {'E', 'F', 'I', ' ', 'P', 'A', 'R', 'T'};

static int has_sig(const uint8_t *p, size_t len, size_t off, const uint8_t *sig, size_t n)
{
    return p != NULL && len >= off + n && memcmp(p + off, sig, n) == 0;
}

/* An MBR with the 55 AA signature and a record of type 0xEE (protective
 * or hybrid): the disk is meant to be a GPT disk even when both GPT
 * headers are damaged (gpt_read then says why). */
static int has_protective_mbr(const uint8_t *head, size_t len)
{
    if (len < 512 || head[510] != 0x55 || head[511] != 0xAA)
        return 0;
    for (unsigned i = 0; i < 4; i++)
        if (head[446 + 16 * i + 4] == 0xEE)
            return 1;
    return 0;
}

enum tdisk_kind tdisk_detect(const uint8_t *head, size_t head_len, const uint8_t *slot_b,
                             size_t slot_b_len, const uint8_t *tail, size_t tail_len,
                             uint32_t *logical_block)
{
    *logical_block = 512;
    if (head == NULL)
        head_len = 0;
    if (tail == NULL)
        tail_len = 0;
    /* A primary GPT header names the block size: LBA 1 is byte 512 or 4096. */
    if (has_sig(head, head_len, 512, gpt_sig, sizeof gpt_sig))
        return TDISK_WHOLE_DISK;
    if (has_sig(head, head_len, 4096, gpt_sig, sizeof gpt_sig)) {
        *logical_block = 4096;
        return TDISK_WHOLE_DISK;
    }
    /* tern's superblock magic at slot A or B: the data partition alone.
     * Checked before the backup GPT: a partition image ends with region
     * data, which may hold anything. */
    if (has_sig(head, head_len, 0, (const uint8_t *)KSUPER_MAGIC, KSUPER_MAGIC_LEN) ||
        has_sig(slot_b, slot_b_len, 0, (const uint8_t *)KSUPER_MAGIC, KSUPER_MAGIC_LEN))
        return TDISK_PARTITION;
    if (head_len > 0 && has_protective_mbr(head, head_len)) {
        /* The primary is gone: the backup header in the last block says
         * the size (the last 4096 bytes hold the last 512-byte block too). */
        if (tail_len >= 4096 && has_sig(tail, tail_len, tail_len - 4096, gpt_sig, 8) &&
            !has_sig(tail, tail_len, tail_len - 512, gpt_sig, 8))
            *logical_block = 4096;
        return TDISK_WHOLE_DISK;
    }
    if (kdisk_is_zero(head, head_len) &&
        (slot_b == NULL || kdisk_is_zero(slot_b, slot_b_len)))
        return TDISK_BLANK;
    return TDISK_UNKNOWN;
}

const char *tdisk_kind_text(enum tdisk_kind k)
{
    switch (k) {
    case TDISK_BLANK:
        return "blank (all zero)";
    case TDISK_WHOLE_DISK:
        return "a whole disk (GPT)";
    case TDISK_PARTITION:
        return "a tern data partition alone";
    default:
        return "neither a GPT disk nor a tern data partition";
    }
}

uint32_t tdisk_rgn_role(uint32_t kind)
{
    switch (kind) {
    case KDISK_REGION_DB:
        return RGN_ROLE_DB;
    case KDISK_REGION_WAL:
        return RGN_ROLE_LOG;
    case KDISK_REGION_BACKUP_A:
    case KDISK_REGION_BACKUP_B:
        return RGN_ROLE_BACKUP;
    default:
        return 0;
    }
}

int tdisk_rgn_examine(const uint8_t *c0, const uint8_t *c1, uint32_t lb, uint32_t pb,
                      uint32_t kind, uint64_t lba, uint64_t blocks, struct tdisk_rgn_view *out)
{
    memset(out, 0, sizeof *out);
    uint32_t role = tdisk_rgn_role(kind);
    if (role == 0 || lb == 0 || pb < lb || pb % lb)
        return -1;
    /* kvfs needs two header blocks and data (kvfs.c, region_fits). */
    uint64_t hdr_blocks = (uint64_t)RGN_HDR_COPIES * (pb / lb);
    if (blocks / (pb / lb) < 3)
        return -1;
    out->capacity = (blocks - hdr_blocks) * lb;
    struct rgn_hdr h[RGN_HDR_COPIES], pick;
    const uint8_t *copy[RGN_HDR_COPIES] = {c0, c1};
    for (unsigned i = 0; i < RGN_HDR_COPIES; i++) {
        out->copy_rc[i] = rgn_hdr_parse(copy[i], pb, role, lba, blocks, out->capacity, &h[i]);
        out->copy_seq[i] = out->copy_rc[i] == RGN_OK ? h[i].seq : 0;
    }
    out->pick_rc = rgn_hdr_pick(h, out->copy_rc, role, lba, blocks, &pick, &out->slot);
    if (out->pick_rc == RGN_OK) {
        out->owner = pick.owner;
        out->seq = pick.seq;
        out->size = pick.size;
    }
    return 0;
}

int tdisk_partition_base(const uint8_t *copy, size_t len, uint32_t kind, uint64_t rel_lba,
                         uint64_t *base)
{
    struct rgn_hdr h;
    uint32_t role = tdisk_rgn_role(kind);
    if (role == 0)
        return -1;
    /* Parsed against an impossible region: a header whose checksum holds
     * comes back as RGN_FOREIGN with its fields filled in. */
    int rc = rgn_hdr_parse(copy, len, role, UINT64_MAX, 0, 0, &h);
    if ((rc != RGN_OK && rc != RGN_FOREIGN) || h.role != role || h.lba < rel_lba)
        return -1;
    *base = h.lba - rel_lba;
    return 0;
}
