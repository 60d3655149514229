/*
 * diskask.h - the operator's answer to the write test's question (SPEC
 * E2): the characters typed on a console, fed one at a time, make a
 * confirmation only when they are exactly "WIPE" then Enter. Pure, so the
 * host unit tests check every way of not saying WIPE; diskwrite.c feeds it
 * from dev/conin.c and handles the timeout.
 */
#ifndef TERN_DIAG_DISKASK_H
#define TERN_DIAG_DISKASK_H

#include <stddef.h>

enum { DISKASK_MAX = 16 };

enum diskask_state {
    DISKASK_MORE = 0, /* keep reading */
    DISKASK_WIPE,     /* "WIPE" and Enter: confirmed */
    DISKASK_REFUSED,  /* anything else (why() says what) */
};

struct diskask {
    char line[DISKASK_MAX];
    size_t len;
    char echo[2];     /* the last character, for *echo */
    enum diskask_state state;
};

void diskask_init(struct diskask *a);
/* Feed one character as conin_getc gives it ('\n' ends the line; '\b' and
 * DEL erase one). Returns the new state; once not MORE it stays. *echo is
 * what to show on the console (NULL: nothing): the character, "\b \b"
 * for an erase. A character that is not printable ASCII, or a line longer
 * than any answer could be, refuses at once: nothing waits for Enter. */
enum diskask_state diskask_feed(struct diskask *a, int c, const char **echo);

#endif
