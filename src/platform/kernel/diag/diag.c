/*
 * diag.c - the diagnostics report's outputs (diag.h): the JSON on the
 * serial port between marker lines, as raw bytes (no console line limit:
 * kprintf's buffer is 256 bytes, the report several KiB), and the
 * dashboard on the framebuffer (dash.c).
 */
#include "diag/diag.h"

#include "console.h"
#include "diag/dash.h"
#include "dev/serial.h"

void diag_show(const char *report, size_t len)
{
    /* The dashboard first: from here on the framebuffer is the
     * dashboard's, and the markers and the JSON go to serial only. */
    diag_dash_show(report, len);
    kprintf("tern: diag: report (%u bytes) follows on serial as one line\n", (unsigned)len);
    static const char begin[] = "tern: diag: report begin\n";
    static const char end[] = "\ntern: diag: report end\n";
    serial_write(begin, sizeof begin - 1);
    serial_write(report, len);
    serial_write(end, sizeof end - 1);
}
