/*
 * madt.c - the MADT parser (rules in acpi/madt.h). Reads little-endian
 * fields byte by byte: the table is a byte copy, with no alignment.
 */
#include "madt.h"

#include <string.h>

static uint16_t madt_le16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }

static uint32_t madt_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t madt_le64(const uint8_t *p) { return madt_le32(p) | (uint64_t)madt_le32(p + 4) << 32; }

/* Minimum length of each known entry type; 0 for unknown types. */
static unsigned madt_entry_min(uint8_t type)
{
    switch (type) {
    case MADT_T_LAPIC: return 8;
    case MADT_T_IOAPIC: return 12;
    case MADT_T_OVERRIDE: return 10;
    case MADT_T_NMI_SOURCE: return 8;
    case MADT_T_LAPIC_NMI: return 6;
    case MADT_T_LAPIC_ADDR: return 12;
    case MADT_T_X2APIC: return 16;
    case MADT_T_X2APIC_NMI: return 12;
    default: return 0;
    }
}

static void madt_add_cpu(struct madt_info *m, uint32_t apic_id, uint32_t uid, uint32_t flags, int x2)
{
    int enabled = (flags & MADT_CPU_ENABLED) != 0;
    int capable = !enabled && (flags & MADT_CPU_ONLINE_CAPABLE);
    if (!enabled && !capable) {
        m->cpus_disabled++;
        return;
    }
    /* Firmware lists some processors twice (an xAPIC and an x2APIC entry
     * with the same id): the second one is the same processor. */
    for (unsigned i = 0; i < m->ncpus; i++)
        if (m->cpu[i].apic_id == apic_id) {
            m->cpus_duplicate++;
            return;
        }
    if (enabled)
        m->cpus_enabled++;
    else
        m->cpus_online_capable++;
    if (m->ncpus >= MADT_MAX_CPUS) {
        m->cpus_dropped++;
        return;
    }
    struct madt_cpu *c = &m->cpu[m->ncpus++];
    c->apic_id = apic_id;
    c->uid = uid;
    c->x2apic = (uint8_t)(x2 != 0);
    c->enabled = (uint8_t)enabled;
    c->online_capable = (uint8_t)capable;
}

int madt_parse(const uint8_t *t, size_t len, struct madt_info *m, const char **err)
{
    memset(m, 0, sizeof *m);
    if (!t || len < MADT_FIXED_LEN) {
        *err = "shorter than the MADT's fixed part";
        return -1;
    }
    if (memcmp(t, "APIC", 4) != 0) {
        *err = "signature is not APIC";
        return -1;
    }
    uint32_t tlen = madt_le32(t + 4);
    if (tlen < MADT_FIXED_LEN || tlen > len) {
        *err = "length field outside the table copy";
        return -1;
    }
    m->lapic_addr = madt_le32(t + 36);
    m->flags = madt_le32(t + 40);
    for (size_t off = MADT_FIXED_LEN; off < tlen;) {
        if (tlen - off < 2) {
            *err = "entry header cut off at the table's end";
            return -1;
        }
        const uint8_t *e = t + off;
        uint8_t type = e[0], elen = e[1];
        if (elen < 2) {
            *err = "entry length below 2";
            return -1;
        }
        if (elen > tlen - off) {
            *err = "entry runs past the table's end";
            return -1;
        }
        off += elen;
        unsigned need = madt_entry_min(type);
        if (!need) {
            m->unknown++;
            continue;
        }
        if (elen < need) {
            m->malformed++;
            continue;
        }
        switch (type) {
        case MADT_T_LAPIC:
            madt_add_cpu(m, e[3], e[2], madt_le32(e + 4), 0);
            break;
        case MADT_T_X2APIC:
            if (madt_le32(e + 4) == MADT_X2APIC_NONE) {
                m->malformed++;
                break;
            }
            madt_add_cpu(m, madt_le32(e + 4), madt_le32(e + 12), madt_le32(e + 8), 1);
            break;
        case MADT_T_IOAPIC:
            if (m->nioapics < MADT_MAX_IOAPICS) {
                struct madt_ioapic *io = &m->ioapic[m->nioapics];
                io->id = e[2];
                io->addr = madt_le32(e + 4);
                io->gsi_base = madt_le32(e + 8);
            }
            m->nioapics++;
            break;
        case MADT_T_OVERRIDE:
            if (m->noverrides < MADT_MAX_OVERRIDES) {
                struct madt_override *o = &m->override[m->noverrides];
                o->bus = e[2];
                o->source = e[3];
                o->gsi = madt_le32(e + 4);
                o->flags = madt_le16(e + 8);
            }
            m->noverrides++;
            break;
        case MADT_T_NMI_SOURCE:
            m->nmi_sources++;
            break;
        case MADT_T_LAPIC_NMI:
        case MADT_T_X2APIC_NMI:
            m->lapic_nmis++;
            break;
        case MADT_T_LAPIC_ADDR:
            m->lapic_addr = madt_le64(e + 4);
            break;
        }
    }
    return 0;
}
