/*
 * arch/cc.h - what lwIP needs from the platform (lwip/arch.h): types from
 * the compiler's stdint.h, format macros and limits without a hosted libc,
 * diagnostics on the kernel console, assertions as kernel panics, and
 * random numbers for ports, sequence numbers and DHCP ids from the RNG.
 */
#ifndef TERN_NET_ARCH_CC_H
#define TERN_NET_ARCH_CC_H

#include "console.h"
#include "panic.h"
#include "rng/entropy.h"

#define LWIP_NO_INTTYPES_H 1
#define X8_F "02x"
#define U16_F "u"
#define S16_F "d"
#define X16_F "x"
#define U32_F "u"
#define S32_F "d"
#define X32_F "x"
#define SZT_F "zu"

#define LWIP_NO_CTYPE_H 1
#define LWIP_NO_LIMITS_H 1
#define INT_MAX __INT_MAX__

#define LWIP_PLATFORM_DIAG(x) do { kprintf x; } while (0)
#define LWIP_PLATFORM_ASSERT(x) panic(x)

#define LWIP_RAND() (rng_u32_nonkey())

#endif
