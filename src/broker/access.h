/*
 * access.h - the access checks the core makes on top of broker_acl_check
 * (acl.h): what a session may read or publish, and whether a readable
 * filter needs each delivery checked.
 */
#ifndef TERN_BROKER_ACCESS_H
#define TERN_BROKER_ACCESS_H

#include "broker/acl.h"
#include "broker/broker.h"
#include "broker/session-t.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The filter is readable but a deny rule overlaps part of it (acl.c). */
bool bk_acl_filter_partly_denied(const broker_acl *acl, const char *identity,
                                 const char *client_id, const char *filter, size_t len);
/* May session s receive / may it publish this topic? (session.c) */
bool bk_session_may(const broker *b, const session *s, const uint8_t *topic, size_t len,
                    broker_acl_access access);

#endif
