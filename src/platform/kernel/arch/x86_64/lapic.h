/*
 * lapic.h - what device interrupt code needs from the boot CPU's local
 * APIC (set up by lapic_timer_init in lapic.c): its ID, as the destination
 * of MSI/MSI-X messages, and end-of-interrupt.
 */
#ifndef TERN_ARCH_LAPIC_H
#define TERN_ARCH_LAPIC_H

#include <stdint.h>

enum { LAPIC_MSI_ADDRESS = 0xFEE00000u };

/* The boot CPU's local APIC ID (xAPIC: 8 bits). */
uint8_t lapic_id(void);
/* Signal end of interrupt; every handler of an APIC-delivered vector calls it. */
void lapic_eoi(void);

#endif
