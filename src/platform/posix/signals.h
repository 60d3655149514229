/*
 * signals.h - SIGTERM, SIGINT (stop) and SIGHUP (reload the ACL file and
 * the TLS certificates) as readable events instead of handlers: they are
 * blocked and delivered through a signalfd the event loop polls, so no
 * global flag or async-signal-safety concern exists.
 */
#ifndef TERN_SIGNALS_H
#define TERN_SIGNALS_H

/* Block SIGTERM/SIGINT/SIGHUP, ignore SIGPIPE (a peer closing mid-write
 * must be an error code, not the end of the process) and return a
 * non-blocking signalfd for the three, or -1 with errno. */
int tern_signals_open(void);

/* The next pending signal's number, 0 when none is pending, -1 on error. */
int tern_signals_read(int fd);

#endif
