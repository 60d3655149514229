/*
 * bootconf.c - reads the configuration module the loader passed (GRUB
 * "module2", or QEMU's -initrd for a direct PVH boot), parses it with the
 * same strict parser as the Linux daemon, and refuses what this kernel
 * cannot do yet rather than silently ignoring it: the TLS listener, the
 * ACL file and the store need the next stages (wolfSSL, the disk). A
 * refused configuration halts the kernel with the parser's message.
 */
#include "bootconf.h"

#include "arch/x86_64/cpu.h"
#include "console.h"

#include <stdio.h>
#include <string.h>

#ifdef TERN_TEST_HOOKS
/* Test builds serve plaintext to anyone when booted without a module, so
 * `qemu -kernel tern-test.elf` is a broker at once. Never in production. */
static const char builtin_test_config[] =
    "config_version = 1\n"
    "listener.plain = 0.0.0.0:1883\n"
    "auth.allow_anonymous = true\n"
    "sys.public = true\n";
#endif

static _Noreturn void refuse(const char *why)
{
    /* Written in pieces: the parser's message may fill kprintf's line. */
    console_write("tern: config: ", 14);
    console_write(why, strlen(why));
    console_write("\n", 1);
    kprintf("tern: config refused: not serving; halted\n");
    cpu_halt_forever();
}

/* Settings the parser accepts but this kernel cannot honour yet. */
static void check_supported(const tern_config *cfg, const char *name)
{
    char msg[200];
    const char *what = NULL;
    if (cfg->listener_tls.family != TERN_ADDR_NONE)
        what = "listener.tls: TLS is not served by the unikernel yet";
    else if (cfg->acl_file[0])
        what = "acl.file: ACL files are not read by the unikernel yet";
    else if (cfg->store_path[0])
        what = "store.path: the unikernel has no store yet";
    else if (cfg->listener_plain.family == TERN_ADDR_NONE)
        what = "no listener.plain: nothing to serve";
    else if (cfg->listener_plain.family != TERN_ADDR_IPV4)
        what = "listener.plain: the unikernel has IPv4 only";
    if (what) {
        snprintf(msg, sizeof msg, "%s: %s", name, what);
        refuse(msg);
    }
}

static int parse(const char *name, const char *text, size_t len, tern_config *cfg)
{
    char err[TERN_CONFIG_ERR_SIZE];
    if (!tern_config_parse(cfg, name, text, len, err, sizeof err))
        refuse(err);
    check_supported(cfg, name);
    return 1;
}

int bootconf_load(const struct boot_info *bi, tern_config *cfg)
{
    const char *name = bi->config_name[0] ? bi->config_name : "tern.conf";
    char msg[160];
    switch (bi->config_state) {
    case BOOT_CONFIG_OK:
        kprintf("tern: config: %s from boot module (%u bytes)\n", name, bi->config_len);
        return parse(name, bi->config, bi->config_len, cfg);
    case BOOT_CONFIG_TOO_LARGE:
        snprintf(msg, sizeof msg,
                 "boot module %s is %llu bytes, more than the %u this kernel reads", name,
                 (unsigned long long)bi->config_size, (unsigned)BOOT_CONFIG_MAX);
        refuse(msg);
    case BOOT_CONFIG_BAD:
        refuse("the boot module lies outside readable memory");
    default:
        break;
    }
#ifdef TERN_TEST_HOOKS
    kprintf("tern: config: no boot module; test build: built-in plaintext configuration "
            "(port 1883, anonymous)\n");
    return parse("built-in", builtin_test_config, sizeof builtin_test_config - 1, cfg);
#else
    kprintf("tern: config: no boot module: the broker is not started\n");
    return 0;
#endif
}
