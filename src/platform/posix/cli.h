/*
 * cli.h - the command line of ternd, parsed without touching any file so it
 * can be tested on its own:
 *
 *   ternd -c FILE            run with the configuration in FILE
 *   ternd --check -c FILE    validate FILE and exit (0 valid, 1 invalid)
 *   ternd --diag [--budget-ms N]  measure crypto and handshake costs, print
 *                            them as JSON (docs/DIAGNOSTICS.md) and exit
 *   ternd --version          print the version
 *   ternd --help             print the usage
 */
#ifndef TERN_CLI_H
#define TERN_CLI_H

#include <stdbool.h>
#include <stddef.h>

#include "diag/cryptobench.h"

typedef enum tern_cli_mode {
    TERN_CLI_RUN,
    TERN_CLI_CHECK,
    TERN_CLI_VERSION,
    TERN_CLI_HELP,
    TERN_CLI_DIAG,
} tern_cli_mode;

/* --diag's budget when --budget-ms is not given: the diagnostics mode's. */
#define TERN_CLI_DIAG_BUDGET_MS ((unsigned)DIAG_CRYPTO_BUDGET_MS)
/* The largest --budget-ms accepted (10 minutes: a typo, not a plan). */
#define TERN_CLI_DIAG_BUDGET_MAX 600000

typedef struct tern_cli {
    tern_cli_mode mode;
    const char *config_path; /* points into argv; NULL for VERSION/HELP/DIAG */
    unsigned budget_ms;      /* DIAG: the measurements' time budget */
} tern_cli;

/* Exit status for a command line that makes no sense (as with most tools). */
#define TERN_EXIT_USAGE 2

/* False on a usage error, with a one-line reason in err. --help and
 * --version win over the other valid options on the line. */
bool tern_cli_parse(int argc, char *const argv[], tern_cli *out, char *err, size_t err_size);

/* The --help text. */
const char *tern_cli_usage(void);

#endif
