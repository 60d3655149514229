#!/usr/bin/env python3
"""Kernel boot tests under QEMU (TCG): tern boots, reports readiness, and
turns every fatal fault into a clear report followed by a reset; its
network, broker (plaintext and mutual TLS) and configuration checks work
as they do in the Linux daemon.

Each VM's serial console is read until the expected lines appear or a
deadline passes; a reset is proven by the kernel's boot banner appearing a
second time (QEMU restarts the VM). This file is the entry point; the
tests live in modules grouped by subject, each opening with what it tests:

  harness.py            QEMU, serial, ports, paths, PKI and bundles, screen
                        readback, the registry and runner (no tests)
  clients.py            the host's MQTT clients and shared broker checks
                        (no tests)
  test_boot.py          PVH boots, boot modes, the heap self-test
  test_smp.py           the boot matrix: -smp 1, 2 and 4 under PVH, SeaBIOS
                        and OVMF (the ISO, with the screen at -smp 1), each
                        with the MADT's count, roles and an mTLS round
                        trip; a fault on an AP (PVH, and on serial and
                        screen under SeaBIOS and OVMF) and on CPU 0 stops
                        every CPU; an AP arriving after its start window
                        halts itself and its reused slot is intact
  test_faults.py        fatal reports and resets, the debug register dump,
                        the report on the framebuffer
  test_kaslr.py         randomised placement: two boots' bases differ (test
                        build), the production log states entropy bits and
                        no address (PVH, SeaBIOS, OVMF); a page-table write
                        faults
  test_halloc.py        the hardened heap: a write after free, a double
                        free, a corrupted free-list pointer each halt with
                        a report; the alloc/free bench under TCG
  test_pci_acpi.py      PCI enumeration through ECAM and legacy ports, RSDP
  test_crypto.py        forced crypto self-test failures, jitter-only seeding,
                        the diagnostics crypto measurements in the kernel
  test_diag_hw.py       the diagnostics report's hardware sections (test hook)
  test_net.py           DHCP, echo, MSI-X and polling, static addresses
  test_broker_plain.py  the plaintext broker with mosquitto, Paho, sockets
  test_broker_mtls.py   the broker over mutual TLS from an image's bundle
  test_mqtt5.py         MQTT 5.0 over mutual TLS with Paho MQTTv5
                        (paho5_check.py) and a takeover's DISCONNECT
  test_broker_limits.py limits against one client over mutual TLS (input
                        budget, handshakes per address, sessions per
                        identity, their $SYS counters)
  test_kvfs.py          the store on SQLite through the kernel's VFS (RAM disk)
  test_config.py        configurations and bundles refused (halts), and the
                        image builder's refusals
  test_disk.py          virtio-blk and virtio-scsi disks: topology, pattern
                        writes surviving a reboot, refusals
  test_disk_image.py    the disk image tool's GPT (sgdisk, fdisk), no VM
  test_disk_readonly.py the disk image on a read-only virtio-blk and
                        virtio-scsi drive: halts with the reason on serial
                        and screen, never resets
  test_disk_size.py     boot time with a 1 GiB and a 64 GiB data disk
  test_store.py         the store thread: commits that wait or compute do
                        not stop the network (also on CPU 1, the storage
                        core, at -smp 2); RAM only without a disk; an
                        unmap once CPU 1 runs halts
  test_store_full.py    a full database region: acknowledgements withheld,
                        $SYS says full, the next boot serves every
                        acknowledged message
  test_store_restore.py the disk store restores its newest backup at boot
                        (an emptied or a damaged database), $SYS says so
  test_store_grow.py    disk growth at boot (qemu-img resize) and live (QMP
                        block_resize): $SYS, retained messages, sgdisk -v;
                        live also at -smp 2 (the storage core's interrupt)
  test_store_disk.py    the store on the machine's own disk over mutual TLS:
                        retained and queued QoS 1/2 messages survive a quit
                        and a kill on virtio-blk and virtio-scsi, QoS 2
                        exactly once; the disk image under SeaBIOS and
                        OVMF; refusals halt and leave the image unchanged;
                        a damaged database replaced by its backup; the
                        virtio-blk survival again at -smp 2 (storage core)
  test_tele.py          the telemetry journal: boot and power-cut records
                        survive kills in order (read with tern-tele); a
                        thin qcow2 gets expired segments back (discard)
  test_scrub.py         the disk scrubber: a live store passes clean; a
                        byte flipped in each region kind is found and
                        named on the console and in $SYS
  test_diag_disk.py     the disk measurements alone (tern.test.diag=disk):
                        reads' figures; the write test refused without
                        WIPE (image unchanged), with WIPE only the free
                        span outside the partition changes
  test_sntp.py          trusted time: SNTP servers on the host agree and set
                        the clock, a liar is outvoted, a step beyond the
                        maximum and no agreement leave the RTC floor
  test_storm.py         a handshake storm at ten times the guest's closed-loop
                        peak (tern-bench), on a tap network in a namespace of
                        its own and on QEMU's user network: completions,
                        bystanders' latency, no drops after CONNACK, SYNs
                        dropped rather than reset
  test_ws.py            MQTT over WebSocket: MQTT.js over wss with a client
                        certificate (QoS 0/1/2, retained, will, a message over
                        frames), an unmasked frame closing only its own
                        connection (1002), a client over ws
  test_passwd.py        password files (mosquitto_passwd) in the bundle: right
                        password in with the user name as ACL identity, wrong
                        and unknown refused after a second, a password over
                        plaintext refused; a bad file halts naming its line
  test_console.py       the operator console over mutual TLS: every command
                        by an operator (Paho MQTTv5, mosquitto), each
                        refused for a non-operator (no answer, nothing done)
  test_install.py       install mode from the ISO: an empty disk installed,
                        powered off, then booted alone (SeaBIOS, OVMF) into
                        the broker; WIPE asked for a disk with data; an
                        aborted countdown writes nothing
  test_diag.py          the diagnostics modes from the ISO (SeaBIOS, OVMF): the
                        report's JSON on serial, the dashboard equal to
                        tern-diag-png's PNG; diag-serve publishes it on
                        $SYS/diag/report to operators only

Usage: run.py [--build DIR] [-k SUBSTRING] [-j JOBS]
"""
import sys

import harness
import test_boot
import test_broker_limits
import test_broker_mtls
import test_broker_plain
import test_config
import test_console
import test_crypto
import test_diag
import test_diag_disk
import test_diag_hw
import test_disk
import test_disk_image
import test_disk_readonly
import test_disk_size
import test_faults
import test_halloc
import test_install
import test_kaslr
import test_kvfs
import test_mqtt5
import test_net
import test_passwd
import test_pci_acpi
import test_scrub
import test_smp
import test_sntp
import test_store
import test_store_disk
import test_store_grow
import test_store_full
import test_store_restore
import test_storm
import test_tele
import test_ws

# The order tests are started and reported in: after the quick boots, the
# longest (mqtt-mtls, about a minute under TCG) starts early so that it
# does not run on alone at the end while the other job is idle.
MODULES = (test_boot, test_broker_mtls, test_store_disk, test_install, test_diag, test_broker_limits, test_broker_plain,
           test_mqtt5, test_net, test_faults, test_kaslr, test_halloc, test_pci_acpi, test_crypto, test_config, test_disk,
           test_disk_image, test_disk_readonly, test_disk_size, test_kvfs, test_store, test_diag_hw,
           test_store_full, test_store_restore, test_tele, test_scrub, test_store_grow, test_diag_disk,
           test_console, test_sntp, test_storm, test_smp, test_ws, test_passwd)

if __name__ == "__main__":
    sys.exit(harness.main(MODULES))
