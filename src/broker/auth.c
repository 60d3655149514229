/*
 * auth.c - the Authentication Methods the broker supports (auth.h). The
 * table is empty today: TLS client certificates are tern's authentication,
 * and a method (SCRAM, a token check) is added here with its handlers.
 */
#include "broker/auth.h"

#include <string.h>

/* NULL-terminated (C has no empty arrays). */
static const bk_auth_method *const methods[] = {NULL};

const bk_auth_method *bk_auth_find(const uint8_t *name, size_t len)
{
    for (size_t i = 0; methods[i]; i++)
        if (strlen(methods[i]->name) == len && memcmp(methods[i]->name, name, len) == 0)
            return methods[i];
    return NULL;
}
