/*
 * targets.h - what the constant-time tests time (targets.c): each piece
 * of tern's own code that computes on secret data, and two controls.
 */
#ifndef TERN_CT_TARGETS_H
#define TERN_CT_TARGETS_H

#include "dudect.h"

extern const struct ct_target ct_targets[];
extern const size_t ct_ntargets;

#endif
