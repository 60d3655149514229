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
    tern_cli cli = {TERN_CLI_HELP, "untouched"};
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
