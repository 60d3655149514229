/*
 * rtc.c - reads the CMOS RTC. The registers can change mid-read, so the
 * clock is read until two consecutive reads agree, each taken while no
 * update is in progress. Handles BCD and binary, 12- and 24-hour modes.
 * The century is assumed to be 20xx (the ACPI century register comes later).
 */
#include "dev/rtc.h"

#include "arch/x86_64/cpu.h"

enum { CMOS_ADDR = 0x70, CMOS_DATA = 0x71, NMI_DISABLE = 0x80 };

static uint8_t cmos(uint8_t reg)
{
    outb(CMOS_ADDR, NMI_DISABLE | reg);
    return inb(CMOS_DATA);
}

static int updating(void) { return cmos(0x0A) & 0x80; }

static void read_raw(uint8_t r[6])
{
    static const uint8_t regs[6] = { 0x00, 0x02, 0x04, 0x07, 0x08, 0x09 };
    for (int i = 0; i < 100000 && updating(); i++)
        cpu_relax();
    for (int i = 0; i < 6; i++)
        r[i] = cmos(regs[i]);
}

static int bcd(int v) { return (v & 0x0F) + (v >> 4) * 10; }

int rtc_read(struct rtc_time *t)
{
    uint8_t a[6], b[6];
    int tries = 0;
    read_raw(a);
    do {
        for (int i = 0; i < 6; i++)
            b[i] = a[i];
        read_raw(a);
        if (++tries > 10)
            return -1;
    } while (a[0] != b[0] || a[1] != b[1] || a[2] != b[2] || a[3] != b[3] || a[4] != b[4] ||
             a[5] != b[5]);

    uint8_t status_b = cmos(0x0B);
    int pm = a[2] & 0x80;
    int v[6];
    for (int i = 0; i < 6; i++)
        v[i] = i == 2 ? (a[2] & 0x7F) : a[i];
    if (!(status_b & 0x04))
        for (int i = 0; i < 6; i++)
            v[i] = bcd(v[i]);
    if (!(status_b & 0x02)) {
        v[2] %= 12;
        if (pm)
            v[2] += 12;
    }
    *t = (struct rtc_time){ 2000 + v[5], v[4], v[3], v[2], v[1], v[0] };
    if (t->month < 1 || t->month > 12 || t->day < 1 || t->day > 31 || t->hour > 23 ||
        t->minute > 59 || t->second > 60)
        return -1;
    return 0;
}
