/*
 * config_internal.h - what the files of the config parser share (config.c
 * reads lines and keys, config_value.c stores one value, config_check.c
 * checks rules across keys, config_text.c builds messages): the view into
 * the caller's text and the message buffer. Internal to src/config/
 * (config.h is its public face).
 */
#ifndef TERN_CONFIG_INTERNAL_H
#define TERN_CONFIG_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "config/keys.h"

/* A view into the caller's text. */
typedef struct span {
    const char *p;
    size_t n;
} span;

/* Message under construction in the caller's buffer; always NUL-terminated,
 * silently cut at the end. */
typedef struct msgbuf {
    char *buf;
    size_t size, len;
} msgbuf;

/* config_text.c: messages, cut at the buffer's end, and blanks. */
void msg_putc(msgbuf *m, char ch);
void msg_str(msgbuf *m, const char *s);
void msg_uint(msgbuf *m, uint64_t v);
/* Untrusted text between quotes, control and non-ASCII bytes as '?'. */
void msg_quoted(msgbuf *m, span s);
/* Starts every message: "FILE:LINE: ". */
void msg_begin(msgbuf *m, const char *file, size_t line);
bool is_blank(char ch);
span trim(span s);
bool span_is(span s, const char *word);

/* config_value.c: what a key's value looks like, for messages; store a
 * value that parsed, or say why it did not. */
void msg_expected(msgbuf *m, const key_def *def);
bool set_value(tern_config *cfg, const key_def *def, span value, msgbuf *m);

/* config_check.c: rules across keys, after the whole file, each false with
 * its message; line_of is a key's line, 0 when it was not set. */
size_t line_of(const size_t *key_lines, const char *name);
bool check_tls(const tern_config *cfg, const size_t *key_lines, const char *file, msgbuf *m);
bool check_input_budget(tern_config *cfg, const size_t *key_lines, const char *file,
                        msgbuf *m);
bool check_limits(const tern_config *cfg, const size_t *key_lines, const char *file, msgbuf *m);
bool check_net(const tern_config *cfg, const size_t *key_lines, const char *file, msgbuf *m);
bool check_time(const tern_config *cfg, const size_t *key_lines, const char *file, msgbuf *m);

#endif
