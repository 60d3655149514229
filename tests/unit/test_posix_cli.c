/*
 * test_posix_cli.c - ternd's command line (src/platform/posix/cli.c).
 */
#include "test.h"

#include "platform/posix/cli.h"

static bool parse(int argc, const char *const *argv, tern_cli *cli, char *err)
{
    return tern_cli_parse(argc, (char *const *)argv, cli, err, 128);
}

TEST(cli_dash_c_file_runs_the_daemon)
{
    const char *argv[] = {"ternd", "-c", "dev.conf"};
    tern_cli cli;
    char err[128];

    CHECK(parse(3, argv, &cli, err));
    CHECK_EQ(cli.mode, TERN_CLI_RUN);
    CHECK(strcmp(cli.config_path, "dev.conf") == 0);
}

TEST(cli_check_with_config_only_validates)
{
    const char *a1[] = {"ternd", "--check", "-c", "x.conf"};
    const char *a2[] = {"ternd", "--config=y.conf", "-t"};
    tern_cli cli;
    char err[128];

    CHECK(parse(4, a1, &cli, err));
    CHECK_EQ(cli.mode, TERN_CLI_CHECK);
    CHECK(strcmp(cli.config_path, "x.conf") == 0);
    CHECK(parse(3, a2, &cli, err));
    CHECK_EQ(cli.mode, TERN_CLI_CHECK);
    CHECK(strcmp(cli.config_path, "y.conf") == 0);
}

TEST(cli_help_and_version_need_no_config)
{
    const char *a1[] = {"ternd", "--version"};
    const char *a2[] = {"ternd", "-c", "x.conf", "--help"};
    tern_cli cli;
    char err[128];

    CHECK(parse(2, a1, &cli, err));
    CHECK_EQ(cli.mode, TERN_CLI_VERSION);
    CHECK(cli.config_path == NULL);
    CHECK(parse(4, a2, &cli, err));
    CHECK_EQ(cli.mode, TERN_CLI_HELP);
    CHECK(strstr(tern_cli_usage(), "--check -c FILE") != NULL);
}

TEST(cli_usage_errors_say_what_is_wrong)
{
    const char *none[] = {"ternd"};
    const char *dangling[] = {"ternd", "-c"};
    const char *twice[] = {"ternd", "-c", "a", "-c", "b"};
    const char *unknown[] = {"ternd", "--verbose", "-c", "a"};
    const char *stray[] = {"ternd", "-c", "a", "b"};
    const char *empty[] = {"ternd", "--config="};
    tern_cli cli = {TERN_CLI_HELP, "untouched", 0};
    char err[128];

    CHECK(!parse(1, none, &cli, err));
    CHECK(strcmp(err, "missing -c FILE") == 0);
    CHECK(strcmp(cli.config_path, "untouched") == 0);
    CHECK(!parse(2, dangling, &cli, err));
    CHECK(strcmp(err, "missing FILE after -c") == 0);
    CHECK(!parse(5, twice, &cli, err));
    CHECK(strcmp(err, "configuration file given twice: b") == 0);
    CHECK(!parse(4, unknown, &cli, err));
    CHECK(strcmp(err, "unknown option --verbose") == 0);
    CHECK(!parse(4, stray, &cli, err));
    CHECK(strcmp(err, "unexpected argument b") == 0);
    CHECK(!parse(2, empty, &cli, err));
    CHECK(strcmp(err, "empty configuration file name") == 0);
}

TEST(cli_diag_measures_with_a_budget_and_no_config)
{
    const char *plain[] = {"ternd", "--diag"};
    const char *budget[] = {"ternd", "--budget-ms", "250", "--diag"};
    const char *zero[] = {"ternd", "--diag", "--budget-ms", "0"};
    tern_cli cli;
    char err[128];

    CHECK(parse(2, plain, &cli, err));
    CHECK_EQ(cli.mode, TERN_CLI_DIAG);
    CHECK(cli.config_path == NULL);
    CHECK_EQ(cli.budget_ms, TERN_CLI_DIAG_BUDGET_MS);
    CHECK(parse(4, budget, &cli, err));
    CHECK_EQ(cli.mode, TERN_CLI_DIAG);
    CHECK_EQ(cli.budget_ms, 250);
    CHECK(parse(4, zero, &cli, err));
    CHECK_EQ(cli.budget_ms, 0);
}

TEST(cli_diag_budget_errors_say_what_is_wrong)
{
    const char *word[] = {"ternd", "--diag", "--budget-ms", "lots"};
    const char *huge[] = {"ternd", "--diag", "--budget-ms", "600001"};
    const char *dangling[] = {"ternd", "--diag", "--budget-ms"};
    const char *alone[] = {"ternd", "-c", "a", "--budget-ms", "5"};
    const char *with_config[] = {"ternd", "--diag", "-c", "a"};
    tern_cli cli;
    char err[128];

    CHECK(!parse(4, word, &cli, err));
    CHECK(strcmp(err, "--budget-ms wants milliseconds (0 to 600000), not lots") == 0);
    CHECK(!parse(4, huge, &cli, err));
    CHECK(strcmp(err, "--budget-ms wants milliseconds (0 to 600000), not 600001") == 0);
    CHECK(!parse(3, dangling, &cli, err));
    CHECK(strcmp(err, "missing N after --budget-ms") == 0);
    CHECK(!parse(5, alone, &cli, err));
    CHECK(strcmp(err, "--budget-ms only goes with --diag") == 0);
    CHECK(!parse(4, with_config, &cli, err));
    CHECK(strcmp(err, "--diag takes no configuration") == 0);
}
