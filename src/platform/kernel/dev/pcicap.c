/*
 * pcicap.c - walks a capability list in a configuration-space snapshot.
 * The device (or a hostile hypervisor) controls every byte: pointers may
 * loop, point into the header, or run off the end; lengths may overflow
 * their BAR. Each pointer is masked to a dword as the PCI spec requires,
 * must lie in 0x40..0xFF with the whole capability inside the 256 bytes,
 * and may be visited once; at most 48 capabilities fit, so the walk is
 * bounded either way. A malformed virtio capability is skipped (the spec
 * lets a device offer several of a type; the driver uses the first it can),
 * and the regions that are kept fit inside their BAR.
 */
#include "pcicap.h"

#include <string.h>

enum {
    PCI_STATUS = 0x06,
    PCI_STATUS_CAP_LIST = 0x10,
    PCI_CAP_PTR = 0x34,
    CAP_FIRST = 0x40,
    CAP_MAX_COUNT = (PCI_CFG_BYTES - CAP_FIRST) / 4,
    VIRTIO_CAP_LEN = 16,
    VIRTIO_NOTIFY_CAP_LEN = 20,
};

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Check one virtio capability at cfg[at] (cap_len bytes, already inside
 * cfg) and keep it if it is the first usable one of its type. */
static void take_virtio_cap(const uint8_t *cfg, unsigned at, unsigned cap_len,
                            const uint64_t bar_size[6], struct virtio_layout *out)
{
    uint8_t type = cfg[at + 3]; /* cap_len >= 4: inside */
    struct virtio_region *r;
    uint32_t min_len;
    switch (type) {
    case VIRTIO_CAP_COMMON: r = &out->common; min_len = VIRTIO_COMMON_CFG_MIN; break;
    case VIRTIO_CAP_NOTIFY: r = &out->notify; min_len = 2; break;
    case VIRTIO_CAP_ISR: r = &out->isr; min_len = 1; break;
    case VIRTIO_CAP_DEVICE: r = &out->device; min_len = 1; break;
    default: return; /* PCI-config access and vendor types: not used */
    }
    if (r->present)
        return;
    /* Only a capability long enough to hold them has a BAR, offset and
     * length (or a multiplier): read nothing beyond cap_len. */
    if (cap_len < VIRTIO_CAP_LEN ||
        (type == VIRTIO_CAP_NOTIFY && cap_len < VIRTIO_NOTIFY_CAP_LEN)) {
        out->ignored++;
        return;
    }
    uint8_t bar = cfg[at + 4];
    uint32_t off = le32(cfg + at + 8), len = le32(cfg + at + 12);
    if (bar > 5 || len < min_len || (uint64_t)off + len > bar_size[bar]) {
        out->ignored++;
        return;
    }
    if (type == VIRTIO_CAP_NOTIFY)
        out->notify_mult = le32(cfg + at + 16);
    *r = (struct virtio_region){.present = 1, .bar = bar, .offset = off, .length = len};
}

int pcicap_virtio_layout(const uint8_t cfg[PCI_CFG_BYTES], const uint64_t bar_size[6],
                         struct virtio_layout *out, const char **err)
{
    memset(out, 0, sizeof *out);
    if (!(cfg[PCI_STATUS] & PCI_STATUS_CAP_LIST)) {
        *err = "no capability list";
        return -1;
    }
    uint8_t seen[PCI_CFG_BYTES / 4] = {0};
    unsigned at = cfg[PCI_CAP_PTR] & 0xFCu;
    for (unsigned n = 0; at != 0; n++) {
        if (n >= CAP_MAX_COUNT || at < CAP_FIRST) {
            *err = "capability list runs into the header or is too long";
            return -1;
        }
        if (seen[at / 4]) {
            *err = "capability list loops";
            return -1;
        }
        seen[at / 4] = 1;
        uint8_t id = cfg[at];
        unsigned next = cfg[at + 1] & 0xFCu; /* at <= 0xFC, so at + 1 is inside */
        if (id == PCI_CAP_VENDOR) {
            /* cap_len counts the whole capability, header included. */
            unsigned cap_len = at + 2 < PCI_CFG_BYTES ? cfg[at + 2] : 0;
            if (cap_len < 4 || at + cap_len > PCI_CFG_BYTES)
                out->ignored++;
            else
                take_virtio_cap(cfg, at, cap_len, bar_size, out);
        } else if (id == PCI_CAP_MSIX && !out->msix_cap) {
            out->msix_cap = (uint8_t)at;
        }
        at = next;
    }
    if (!out->common.present || !out->notify.present || !out->isr.present) {
        *err = "virtio common, notify or ISR region missing or malformed";
        return -1;
    }
    return 0;
}

int pcicap_msix(const uint8_t cfg[PCI_CFG_BYTES], unsigned cap, const uint64_t bar_size[6],
                struct msix_layout *out, const char **err)
{
    if (cap < CAP_FIRST || cap % 4 || cap + MSIX_CAP_LEN > PCI_CFG_BYTES ||
        cfg[cap] != PCI_CAP_MSIX) {
        *err = "no MSI-X capability there";
        return -1;
    }
    uint16_t ctrl = (uint16_t)(cfg[cap + MSIX_CTRL] | cfg[cap + MSIX_CTRL + 1] << 8);
    uint32_t table = le32(cfg + cap + 4), pba = le32(cfg + cap + 8);
    struct msix_layout m = {
        .entries = (uint16_t)((ctrl & 0x7FF) + 1),
        .table_bar = table & 7, .table_offset = table & ~7u,
        .pba_bar = pba & 7, .pba_offset = pba & ~7u,
    };
    uint64_t table_len = (uint64_t)m.entries * MSIX_ENTRY_LEN;
    uint64_t pba_len = ((uint64_t)m.entries + 63) / 64 * 8;
    if (m.table_bar > 5 || m.pba_bar > 5) {
        *err = "MSI-X table or PBA in a reserved BAR";
        return -1;
    }
    if (m.table_offset + table_len > bar_size[m.table_bar]) {
        *err = "MSI-X table outside its BAR";
        return -1;
    }
    if (m.pba_offset + pba_len > bar_size[m.pba_bar]) {
        *err = "MSI-X pending-bit array outside its BAR";
        return -1;
    }
    if (m.table_bar == m.pba_bar && m.table_offset < m.pba_offset + pba_len &&
        m.pba_offset < m.table_offset + table_len) {
        *err = "MSI-X table and pending-bit array overlap";
        return -1;
    }
    *out = m;
    return 0;
}
