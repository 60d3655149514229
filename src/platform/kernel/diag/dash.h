/*
 * dash.h - the diagnostics dashboard on the framebuffer (SPEC E4): the
 * report laid out by src/diag/layout.c and drawn with the console's 8x8
 * font, replacing the scrolling console for good (the console carries on
 * on serial only).
 */
#ifndef TERN_DIAG_DASH_H
#define TERN_DIAG_DASH_H

#include <stddef.h>

/* Draw the report's dashboard; says on the console when there is no
 * framebuffer to draw on (serial-only machines) and draws nothing. */
void diag_dash_show(const char *report, size_t len);

#endif
