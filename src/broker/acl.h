/*
 * acl.h - access control lists for the broker core (SPEC C3): the whole
 * public face of src/broker/acl.c.
 *
 * The text format is Mosquitto's acl_file, so operators can bring theirs:
 *
 *     # rules before any "user" line apply to every client
 *     topic read public/#
 *     user alice                    # rules below apply to identity "alice"
 *     topic readwrite alice/#
 *     topic deny alice/secret
 *     pattern write devices/%u/%c/# # %u = identity, %c = client id; any user
 *
 * In pattern lines %c is the client id, %u the identity and %% a '%'; any
 * other '%' there (a typo such as %x, or one at the end) refuses the file.
 * Prefer %u: a %c-only pattern lets another identity that takes over an
 * ended clean session's client id read and write what the rule allows.
 *
 * Access words: read, write, readwrite (the default when omitted), deny.
 * Matching order, per access check:
 *   1. $SYS: operators read it, nobody else does, nobody writes it but
 *      operators publishing to $SYS/console/request (the operator console,
 *      docs/CONSOLE.md: the broker answers them, nobody receives them); no
 *      rule changes that.
 *   2. No ACL loaded: everything else is allowed.
 *   3. A deny rule that matches (general, the identity's, or a pattern)
 *      refuses, whatever else would allow.
 *   4. Otherwise an allow rule that matches grants; none matching refuses.
 * Anonymous clients (no identity) get only the general rules and patterns
 * without %u.
 *
 * Parsing is I/O-free like the rest of the core: the platform reads the file
 * and hands over its text, at start and again on reload (SIGHUP).
 */
#ifndef TERN_BROKER_ACL_H
#define TERN_BROKER_ACL_H

#include "broker/broker.h"

#include <stdbool.h>
#include <stddef.h>

typedef struct broker_acl broker_acl;

/* Parse acl_file text of len bytes (need not be NUL-terminated). `file`
 * names the source in errors. Returns NULL on error with "FILE:LINE:
 * message" in err (NUL-terminated, cut to err_size), or on allocation
 * failure ("out of memory"). The allocator is used for the whole life of
 * the ACL (NULL members = malloc/free). */
broker_acl *broker_acl_parse(const broker_allocator *alloc, const char *file, const char *text,
                             size_t len, char *err, size_t err_size);
void broker_acl_free(broker_acl *acl);

/* Install an ACL in the broker, replacing (and freeing) the previous one;
 * NULL removes it (only the $SYS rules remain). The broker owns acl from now
 * on. Existing subscriptions are checked again under the new rules:
 * subscriptions the new ACL no longer allows stop receiving. */
void broker_set_acl(broker *b, broker_acl *acl);

/* Access being checked. */
typedef enum broker_acl_access {
    BROKER_ACL_READ = 1,   /* subscribe / receive */
    BROKER_ACL_WRITE = 2,  /* publish */
} broker_acl_access;

/* Is `identity` (NULL = anonymous) with client id `client_id` allowed this
 * access to `topic`? For READ, topic may be a subscription filter: the
 * answer is then whether the whole filter is readable. Without an ACL,
 * everything but $SYS is allowed. */
bool broker_acl_check(const broker_acl *acl, const char *identity, const char *client_id,
                      bool is_operator, const char *topic, size_t topic_len,
                      broker_acl_access access);

#endif
