/*
 * conin.h - console input for the installer (SPEC A1): the serial console
 * (COM1's receiver) and the PS/2 keyboard (the i8042 controller), both
 * polled - nothing else in the kernel reads a console, and polling needs
 * no interrupt routing. The framebuffer shows what is typed through
 * kprintf, like every other console line.
 */
#ifndef TERN_DEV_CONIN_H
#define TERN_DEV_CONIN_H

/* Drop whatever is waiting (keys pressed at the boot menu). */
void conin_drain(void);
/* The next character typed on either console, or -1 when none is waiting.
 * Serial bytes come as they are ('\r' becomes '\n'); keyboard keys as
 * ps2kbd_feed returns them (PS2KBD_OTHER for keys without a character). */
int conin_getc(void);

#endif
