/*
 * diskask.c - the WIPE line editor (diskask.h).
 */
#include "diskask.h"

#include <string.h>

static const char ERASE[] = "\b \b";

void diskask_init(struct diskask *a)
{
    memset(a, 0, sizeof *a);
    a->state = DISKASK_MORE;
}

enum diskask_state diskask_feed(struct diskask *a, int c, const char **echo)
{
    *echo = NULL;
    if (a->state != DISKASK_MORE)
        return a->state;
    if (c == '\n') {
        a->line[a->len] = '\0';
        a->state = strcmp(a->line, "WIPE") ? DISKASK_REFUSED : DISKASK_WIPE;
        return a->state;
    }
    if (c == '\b' || c == 0x7F) {
        if (a->len) {
            a->len--;
            *echo = ERASE;
        }
        return a->state;
    }
    if (c < 0x20 || c > 0x7E || a->len + 1 >= sizeof a->line) {
        a->state = DISKASK_REFUSED;
        return a->state;
    }
    a->line[a->len++] = (char)c;
    a->echo[0] = (char)c;
    a->echo[1] = '\0';
    *echo = a->echo;
    return a->state;
}
