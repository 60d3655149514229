/*
 * lapic.h - what device interrupt code needs from the boot CPU's local
 * APIC (set up by lapic_timer_init in lapic.c): its ID, as the destination
 * of MSI/MSI-X messages, and end-of-interrupt; and what smp.c needs:
 * an AP's own APIC and timer, and IPIs.
 */
#ifndef TERN_ARCH_LAPIC_H
#define TERN_ARCH_LAPIC_H

#include <stdint.h>

enum { LAPIC_MSI_ADDRESS = 0xFEE00000u };

/* The boot CPU's local APIC ID (xAPIC: 8 bits). */
uint8_t lapic_id(void);
/* Signal end of interrupt; every handler of an APIC-delivered vector calls it. */
void lapic_eoi(void);
/* On an application processor: enable its APIC and start its timer at
 * the boot CPU's rate (lapic_timer_init has run on CPU 0). */
void lapic_ap_init(void);
/* Send an IPI to one APIC id; icr is the command's low word (delivery
 * mode, level, vector). Waits for the previous one to leave first. */
void lapic_send_ipi(uint32_t apic_id, uint32_t icr);
/* An NMI to one APIC id (the fatal path's stop, sent to each online CPU:
 * smp.c says why not the all-but-self shorthand); nothing before the
 * APIC is mapped. */
void lapic_send_nmi(uint32_t apic_id);

#endif
