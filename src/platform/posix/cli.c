/*
 * cli.c - parses ternd's arguments. Hand-written instead of getopt_long so
 * the rules (help/version win, -c exactly once, no stray arguments) are
 * explicit and the parser keeps no hidden state between calls.
 */
#include "platform/posix/cli.h"

#include <stdio.h>
#include <string.h>

#define TERN_CLI_STR_(x) #x
#define TERN_CLI_STR(x) TERN_CLI_STR_(x)

static const char usage[] =
    "usage: ternd -c FILE            run the broker with the configuration in FILE\n"
    "       ternd --check -c FILE    check FILE and exit (0 valid, 1 invalid)\n"
    "       ternd --diag [--budget-ms N]\n"
    "                                measure crypto and TLS handshake costs for about\n"
    "                                N ms (default " TERN_CLI_STR(DIAG_CRYPTO_BUDGET_MS) "), "
    "print them as JSON and exit\n"
    "       ternd --version          print the version and exit\n"
    "       ternd --help             print this text and exit\n"
    "\n"
    "  -c, --config FILE   configuration file (format: docs/CONFIG.md)\n"
    "  -t, --check         only validate the configuration\n"
    "\n"
    "A configuration error stops ternd before it listens, with FILE:LINE: message\n"
    "on stderr and exit status 2. SIGTERM or SIGINT shut it down cleanly.\n";

const char *tern_cli_usage(void)
{
    return usage;
}

static void say(char *err, size_t err_size, const char *what, const char *arg)
{
    if (err_size > 0 && snprintf(err, err_size, "%s%s%s", what, arg ? " " : "", arg ? arg : "") < 0)
        err[0] = '\0';
}

/* A decimal number of milliseconds up to TERN_CLI_DIAG_BUDGET_MAX. */
static bool parse_budget(const char *s, unsigned *out)
{
    unsigned long v = 0;

    if (*s == '\0')
        return false;
    for (; *s; s++) {
        if (*s < '0' || *s > '9')
            return false;
        v = v * 10u + (unsigned long)(*s - '0');
        if (v > TERN_CLI_DIAG_BUDGET_MAX)
            return false;
    }
    *out = (unsigned)v;
    return true;
}

bool tern_cli_parse(int argc, char *const argv[], tern_cli *out, char *err, size_t err_size)
{
    tern_cli cli = {TERN_CLI_RUN, NULL, TERN_CLI_DIAG_BUDGET_MS};
    bool check = false, help = false, version = false, diag = false, budget = false;
    bool ok = false;

    if (err_size > 0)
        err[0] = '\0';
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];

        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            help = true;
        } else if (strcmp(a, "-V") == 0 || strcmp(a, "--version") == 0) {
            version = true;
        } else if (strcmp(a, "-t") == 0 || strcmp(a, "--check") == 0) {
            check = true;
        } else if (strcmp(a, "--diag") == 0) {
            diag = true;
        } else if (strcmp(a, "--budget-ms") == 0) {
            if (i + 1 >= argc) {
                say(err, err_size, "missing N after", a);
                goto done;
            }
            if (!parse_budget(argv[++i], &cli.budget_ms)) {
                say(err, err_size,
                    "--budget-ms wants milliseconds (0 to " TERN_CLI_STR(
                        TERN_CLI_DIAG_BUDGET_MAX) "), not",
                    argv[i]);
                goto done;
            }
            budget = true;
        } else if (strcmp(a, "-c") == 0 || strcmp(a, "--config") == 0 ||
                   strncmp(a, "--config=", 9) == 0) {
            const char *path = strncmp(a, "--config=", 9) == 0 ? a + 9 : NULL;

            if (path == NULL) {
                if (i + 1 >= argc) {
                    say(err, err_size, "missing FILE after", a);
                    goto done;
                }
                path = argv[++i];
            }
            if (cli.config_path != NULL) {
                say(err, err_size, "configuration file given twice:", path);
                goto done;
            }
            if (path[0] == '\0') {
                say(err, err_size, "empty configuration file name", NULL);
                goto done;
            }
            cli.config_path = path;
        } else if (a[0] == '-') {
            say(err, err_size, "unknown option", a);
            goto done;
        } else {
            say(err, err_size, "unexpected argument", a);
            goto done;
        }
    }
    if (help || version) {
        cli.mode = help ? TERN_CLI_HELP : TERN_CLI_VERSION;
        cli.config_path = NULL;
    } else if (diag) {
        if (cli.config_path != NULL || check) {
            say(err, err_size, "--diag takes no configuration", NULL);
            goto done;
        }
        cli.mode = TERN_CLI_DIAG;
    } else if (budget) {
        say(err, err_size, "--budget-ms only goes with --diag", NULL);
        goto done;
    } else if (cli.config_path == NULL) {
        say(err, err_size, "missing -c FILE", NULL);
        goto done;
    } else {
        cli.mode = check ? TERN_CLI_CHECK : TERN_CLI_RUN;
    }
    *out = cli;
    ok = true;
done:
    return ok;
}
