/*
 * ident.h - the calls of ident.c: what all sessions of one TLS identity
 * hold together, for the per-identity limits (limits.
 * max_sessions_per_identity, max_queued_bytes_per_identity). Each session
 * with an identity references one record, shared by the identity's
 * sessions and found through a table keyed by the identity; the record
 * goes with its last session. Anonymous sessions (no identity) have none
 * and are bounded by the per-session limits only.
 */
#ifndef TERN_BROKER_IDENT_H
#define TERN_BROKER_IDENT_H

#include "broker/broker.h"
#include "broker/session-t.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

void bk_idents_free(broker *b);
/* Give s (no identity yet) the identity name[0..len), counting it in the
 * identity's record (created on first use); s->identity then points into
 * the record. -1 on allocation failure (s unchanged). No limit is checked:
 * restored sessions count but are never refused. */
int bk_ident_attach(broker *b, session *s, const char *name, size_t len);
/* Take s out of its identity's record (its queued bytes with it); the
 * record is freed with its last session. */
void bk_ident_detach(broker *b, session *s);
/* Persistent sessions the identity holds (0 for one with no session). */
uint32_t bk_ident_persistent(broker *b, const char *name);

#endif
