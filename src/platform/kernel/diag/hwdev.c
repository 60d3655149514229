/*
 * hwdev.c - the hardware report's device half (hwdev.h): every PCI
 * function found at boot (name, class, MSI-X from its configuration
 * space through hwpci.c), the network interfaces (the virtio-net driver's
 * read-outs when the network was started) and the disks (dev/blk.h's
 * topology, as the drivers negotiated it).
 */
#include "diag/hwdev.h"

#include "dev/blk.h"
#include "dev/virtio_net.h"
#include "dev/virtio_pci.h"
#include "diag/hwpci.h"
#include "diag/hwtext.h"
#include "net/net.h"

#include <stdio.h>
#include <string.h>

enum { NAME_MAX_LEN = 64 };

static void bdf(char *out, size_t n, const struct pci_dev *d)
{
    snprintf(out, n, "%02x:%02x.%u", d->bus, d->dev, d->fn);
}

static void read_cfg(const struct pci_dev *d, uint8_t cfg[256])
{
    for (unsigned off = 0; off < 256; off += 4) {
        uint32_t v = pci_read32(d->bus, d->dev, d->fn, (uint16_t)off);
        memcpy(cfg + off, &v, 4);
    }
}

static void write_pci(jw *w, const struct diag_env *env)
{
    jw_arr(w, "pci");
    for (unsigned i = 0; i < env->pci_count && i < PCI_MAX_DEVICES; i++) {
        const struct pci_dev *d = &env->pci[i];
        char s[24];
        jw_obj(w, NULL);
        bdf(s, sizeof s, d);
        jw_str(w, "bdf", s);
        snprintf(s, sizeof s, "%04x:%04x", d->vendor, d->device);
        jw_str(w, "id", s);
        snprintf(s, sizeof s, "%02x%02x%02x", d->class_code, d->subclass, d->prog_if);
        jw_str(w, "class", s);
        const char *name = hw_pci_name(d->vendor, d->device, d->class_code, d->subclass);
        if (name)
            jw_str(w, "name", name);
        else {
            jw_null(w, "name");
            jw_str(w, "name_why", "not in tern's list");
        }
        uint8_t cfg[256];
        read_cfg(d, cfg);
        unsigned entries = 0;
        int enabled = 0;
        const char *err = NULL;
        if (hw_pci_msix(cfg, &entries, &enabled, &err)) {
            jw_u64(w, "msix_entries", entries);
            jw_bool(w, "msix_enabled", enabled);
        } else {
            jw_null(w, "msix_entries");
            jw_str(w, "msix_entries_why", err ? err : "no MSI-X capability");
        }
        jw_end(w);
    }
    jw_end(w);
}

static void write_nics(jw *w, const struct diag_env *env)
{
    jw_arr(w, "nics");
    int driven_seen = 0;
    for (unsigned i = 0; i < env->pci_count && i < PCI_MAX_DEVICES; i++) {
        const struct pci_dev *d = &env->pci[i];
        int virtio = virtio_pci_type(d) == VIRTIO_ID_NET;
        if (!virtio && d->class_code != 0x02)
            continue;
        char s[NAME_MAX_LEN];
        jw_obj(w, NULL);
        bdf(s, sizeof s, d);
        jw_str(w, "bdf", s);
        const char *name = hw_pci_name(d->vendor, d->device, d->class_code, d->subclass);
        jw_str(w, "device", name ? name : "network controller");
        /* net_init drives the first virtio-net function it finds. */
        int driven = virtio && !driven_seen && virtio_net_present();
        driven_seen |= virtio;
        if (!driven) {
            const char *why = !virtio ? "tern has no driver for this device"
                              : driven_seen && virtio_net_present()
                                  ? "tern drives only the first virtio-net device"
                                  : "the network is not started in this mode";
            static const char *const keys[] = {"mac", "link_up", "interrupts", "ipv4"};
            for (unsigned k = 0; k < 4; k++) {
                char key[24];
                jw_null(w, keys[k]);
                snprintf(key, sizeof key, "%s_why", keys[k]);
                jw_str(w, key, why);
            }
            jw_end(w);
            continue;
        }
        uint8_t mac[6];
        virtio_net_mac(mac);
        snprintf(s, sizeof s, "%02x:%02x:%02x:%02x:%02x:%02x", mac[0], mac[1], mac[2], mac[3],
                 mac[4], mac[5]);
        jw_str(w, "mac", s);
        jw_bool(w, "link_up", virtio_net_link_up());
        virtio_net_irq_describe(s, sizeof s);
        jw_str(w, "interrupts", s);
        char ip[20];
        unsigned prefix = 0;
        int dhcp = 0;
        if (net_ipv4(ip, sizeof ip, &prefix, &dhcp)) {
            snprintf(s, sizeof s, "%s/%u", ip, prefix);
            jw_str(w, "ipv4", s);
            jw_str(w, "ipv4_from", dhcp ? "dhcp" : "configuration");
        } else {
            jw_null(w, "ipv4");
            jw_str(w, "ipv4_why", "no address yet (DHCP pending)");
        }
        jw_end(w);
    }
    jw_end(w);
}

static void write_disk(jw *w, const struct blk_dev *b)
{
    const struct blk_topology *t = &b->topo;
    char s[NAME_MAX_LEN];
    jw_obj(w, NULL);
    hw_printable(s, sizeof s, b->name);
    jw_str(w, "name", s);
    /* Drivers name a disk "BUS BDF" ("virtio-blk 00:04.0"). */
    const char *sp = strchr(b->name, ' ');
    size_t buslen = sp ? (size_t)(sp - b->name) : strlen(b->name);
    jw_strn(w, "bus", s, buslen < sizeof s ? buslen : sizeof s - 1);
    if (sp && sp[1]) {
        hw_printable(s, sizeof s, sp + 1);
        jw_str(w, "pci", s);
    } else {
        jw_null(w, "pci");
        jw_str(w, "pci_why", "not a PCI device");
    }
    if (b->model[0]) {
        hw_printable(s, sizeof s, b->model);
        jw_str(w, "model", s);
    } else {
        jw_null(w, "model");
        jw_str(w, "model_why", "the device gives no serial or model");
    }
    jw_u64(w, "capacity_bytes", t->capacity * t->logical_block);
    jw_u64(w, "logical_block_bytes", t->logical_block);
    jw_u64(w, "physical_block_bytes", t->physical_block);
    if (t->optimal_io)
        jw_u64(w, "optimal_io_bytes", t->optimal_io);
    else {
        jw_null(w, "optimal_io_bytes");
        jw_str(w, "optimal_io_bytes_why", "the device does not say");
    }
    jw_u64(w, "max_transfer_bytes", t->max_transfer);
    jw_str(w, "write_cache", t->write_cache ? "volatile" : "write-through");
    jw_bool(w, "flush", t->flush);
    jw_bool(w, "fua", t->fua);
    jw_bool(w, "discard", t->discard);
    if (t->discard)
        jw_u64(w, "max_discard_bytes", (uint64_t)t->max_discard * t->logical_block);
    jw_bool(w, "write_zeroes", t->write_zeroes);
    if (t->write_zeroes)
        jw_u64(w, "max_write_zeroes_bytes", (uint64_t)t->max_write_zeroes * t->logical_block);
    jw_bool(w, "read_only", t->read_only);
    jw_str(w, "completions", b->irq ? "msi-x" : "polled");
    jw_bool(w, "failed", b->failed);
    const char *why = NULL;
    jw_bool(w, "durable_ok", blk_durable_ok(b, &why));
    if (why)
        jw_str(w, "durable_ok_why", why);
    jw_end(w);
}

void diag_hw_write_devices(jw *w, const struct diag_env *env)
{
    write_pci(w, env);
    write_nics(w, env);
    jw_arr(w, "disks");
    for (unsigned i = 0; i < blk_count(); i++)
        write_disk(w, blk_get(i));
    jw_end(w);
}
