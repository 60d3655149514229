/*
 * echo.h - a TCP echo service (RFC 862) on port 7, in test builds only:
 * tests/kernel/run.py pushes data through it to test the network path.
 */
#ifndef TERN_NET_ECHO_H
#define TERN_NET_ECHO_H

/* Listen on port 7; 0 or -1. */
int echo_start(void);

#endif
