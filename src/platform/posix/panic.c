/*
 * panic.c - the hosted daemon's tern_panic(): a broken invariant in the core
 * is a bug; say where on stderr and abort so a core dump keeps the state.
 */
#include "broker/broker.h"

#include <stdio.h>
#include <stdlib.h>

_Noreturn void tern_panic(const char *file, int line, const char *what)
{
    fprintf(stderr, "tern: internal error at %s:%d: invariant '%s' failed\n", file, line, what);
    fflush(stderr);
    abort();
}
