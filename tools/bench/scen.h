/*
 * scen.h - the scenarios main.c can run; each prints one JSON line and
 * returns the process exit status.
 */
#ifndef TERN_BENCH_SCEN_H
#define TERN_BENCH_SCEN_H

#include "run.h"

int scen_handshake(const bench_opts *o);
int scen_idle(const bench_opts *o);
/* latency, fanout and flood share one implementation. */
int scen_traffic(const bench_opts *o);
/* Open-loop arrivals of new clients beside connected bystanders. */
int scen_storm(const bench_opts *o);

#endif
