/*
 * loop.h - the Linux daemon's event loop: one thread, one epoll instance,
 * non-blocking sockets, driving one broker core (see broker/broker.h for
 * the turn it implements) and, on the TLS listener, one TLS adapter
 * session per connection (tls/tls.h). SIGTERM/SIGINT arrive as events and
 * end it; SIGHUP reloads the ACL file and the TLS certificates.
 */
#ifndef TERN_LOOP_H
#define TERN_LOOP_H

#include "config/config.h"
#include "platform/posix/load.h"
#include "platform/posix/log.h"

typedef struct tern_loop tern_loop;

/*
 * Create the core (with the ACL of assets), the signal descriptor and the
 * listeners of cfg, and log "tern VERSION listening on ADDR (KIND)" for
 * each listener. Takes the assets over in every case (they are left NULL).
 * config_path is where cfg came from: reloads read the files it names
 * again, relative to it. log must outlive the loop. On failure logs why
 * and returns NULL.
 */
tern_loop *tern_loop_create(const tern_config *cfg, const char *config_path, tern_assets *assets,
                            tern_log *log);

/* Serve until SIGTERM or SIGINT, then stop accepting, write what the
 * sockets take at once and return 0; 1 after a fatal error. */
int tern_loop_run(tern_loop *l);

/* Close every socket and free the core and the loop (NULL is fine). */
void tern_loop_destroy(tern_loop *l);

#endif
