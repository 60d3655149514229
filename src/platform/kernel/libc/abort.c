/*
 * abort.c - abort() for portable code: the MQTT codec calls it when an
 * encoder invariant breaks (it would otherwise put a malformed packet on
 * the wire). In the kernel that is a fatal error like any other (SPEC A5).
 */
#include <stdlib.h>

#include "panic.h"

void abort(void)
{
    panic("abort() called: a broken invariant in portable code");
}
