/*
 * tern-disk-out.c - where tern-disk's findings go (tern-disk.h, struct
 * tdisk_out): info lines only when verbose (inspect), notes, problems and
 * read errors always, each counted where verify's exit code needs it.
 */
#include "tern-disk.h"

#include <stdarg.h>

static void out_line(struct tdisk_out *o, const char *prefix, const char *fmt, va_list ap)
{
    fputs(prefix, o->f);
    vfprintf(o->f, fmt, ap);
    fputc('\n', o->f);
}

void tdisk_info(struct tdisk_out *o, const char *fmt, ...)
{
    if (!o->verbose)
        return;
    va_list ap;
    va_start(ap, fmt);
    out_line(o, "", fmt, ap);
    va_end(ap);
}

void tdisk_note(struct tdisk_out *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    out_line(o, "note: ", fmt, ap);
    va_end(ap);
}

void tdisk_problem(struct tdisk_out *o, const char *fmt, ...)
{
    va_list ap;
    o->problems++;
    va_start(ap, fmt);
    out_line(o, "problem: ", fmt, ap);
    va_end(ap);
}

void tdisk_io_error(struct tdisk_out *o, const char *fmt, ...)
{
    va_list ap;
    o->io_errors++;
    va_start(ap, fmt);
    out_line(o, "cannot read: ", fmt, ap);
    va_end(ap);
}

