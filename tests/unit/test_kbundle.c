/*
 * test_kbundle.c - the kernel's boot-bundle parser (bundle.c): a bundle as
 * the builder writes it parses into its files; every malformation (bad
 * magic or version, truncation, a size that overruns, a missing newline,
 * bytes after "end", duplicate or unprintable names, too many files)
 * refuses the whole bundle with a message.
 */
#include "test.h"

#include <stdlib.h>

#include "platform/kernel/bundle.c"

/* Parse a copy of text (the parser writes into its buffer). */
static int parse(const char *text, size_t len, struct bundle *b, char *err, size_t err_size)
{
    static uint8_t buf[8192];
    memcpy(buf, text, len);
    return bundle_parse(buf, len, b, err, err_size);
}

#define PARSE(lit, b, err) parse(lit, sizeof lit - 1, b, err, sizeof err)

TEST(kbundle_parses_files_in_order)
{
    static const char text[] = "tern-bundle 1\n"
                               "file 5 tern.conf\nhello\n"
                               "file 0 empty\n\n"
                               "file 3 pki/a b.crt\na\nb\n"
                               "end\n";
    struct bundle b;
    char err[128];
    CHECK_EQ(PARSE(text, &b, err), 0);
    CHECK_EQ(b.count, 3);
    CHECK(strcmp(b.files[0].name, "tern.conf") == 0);
    CHECK_EQ(b.files[0].len, 5);
    CHECK_MEM(b.files[0].data, "hello", 5);
    CHECK_EQ(b.files[1].len, 0);
    CHECK(strcmp(b.files[2].name, "pki/a b.crt") == 0); /* names may hold blanks */
    CHECK_MEM(b.files[2].data, "a\nb", 3);              /* bodies may hold newlines */
    CHECK(bundle_find(&b, "pki/a b.crt") == &b.files[2]);
    CHECK(bundle_find(&b, "pki/a") == NULL);
}

TEST(kbundle_detects_the_magic)
{
    CHECK(bundle_is((const uint8_t *)"tern-bundle 7\n", 14));
    CHECK(!bundle_is((const uint8_t *)"config_version = 1\n", 19));
    CHECK(!bundle_is((const uint8_t *)"tern-bund", 9));
}

TEST(kbundle_newer_version_says_so)
{
    struct bundle b;
    char err[160];
    CHECK_EQ(PARSE("tern-bundle 2\nfile 1 a\nx\nend\n", &b, err), -1);
    CHECK(strstr(err, "version 2") != NULL);
    CHECK(strstr(err, "newer release") != NULL);
}

TEST(kbundle_refuses_malformations)
{
    static const char *const bad[] = {
        "tern-bundle 1\n",                              /* no end */
        "tern-bundle 1\nend\n",                         /* no files */
        "tern-bundle 01\nfile 1 a\nx\nend\n",           /* leading zero */
        "tern-bundle 1 \nfile 1 a\nx\nend\n",           /* junk after version */
        "tern-bundle\nfile 1 a\nx\nend\n",              /* no version */
        "tern-bundle 1\nfile 2 a\nx\nend\n",            /* size overruns into "end" */
        "tern-bundle 1\nfile 1 a\nxy\nend\n",           /* body not followed by newline */
        "tern-bundle 1\nfile 1 a\nx\nend\nmore",        /* bytes after end */
        "tern-bundle 1\nfile 1 a\nx\nend",              /* end without newline */
        "tern-bundle 1\nfile 1 a\nx\nfile 1 a\ny\nend\n", /* duplicate name */
        "tern-bundle 1\nfile 1 \nx\nend\n",             /* empty name */
        "tern-bundle 1\nfile 1 a\tb\nx\nend\n",         /* control character in name */
        "tern-bundle 1\nfile -1 a\nx\nend\n",           /* sign */
        "tern-bundle 1\nfile 1a\nx\nend\n",             /* no blank before the name */
        "tern-bundle 1\nfile 99999999999999999999999 a\nx\nend\n", /* overflow */
        "tern-bundle 1\nfiles 1 a\nx\nend\n",           /* unknown line */
        "tern-bundle 1\nfile 5 a\nx\n",                 /* cut short */
        "config_version = 1\n",                         /* not a bundle */
    };
    static const char nul_in_name[] = "tern-bundle 1\nfile 0 e \0\0\n\nend\n";
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct bundle b;
        char err[160] = "";
        if (parse(bad[i], strlen(bad[i]), &b, err, sizeof err) != -1) {
            fprintf(stderr, "  accepted bad bundle %zu\n", i);
            CHECK(0);
        }
        CHECK(err[0] != '\0');
    }
    /* A NUL inside a header line would cut the name short unseen (found by
     * fuzz_bundle). */
    struct bundle b;
    char err[160];
    CHECK_EQ(parse(nul_in_name, sizeof nul_in_name - 1, &b, err, sizeof err), -1);
}

TEST(kbundle_name_and_count_limits)
{
    static char text[8192];
    struct bundle b;
    char err[160];
    size_t n = (size_t)snprintf(text, sizeof text, "tern-bundle 1\n");
    /* A 255-byte name is fine, 256 is not. */
    char name[300];
    memset(name, 'n', 256);
    name[255] = '\0';
    int k = snprintf(text + n, sizeof text - n, "file 1 %s\nx\nend\n", name);
    CHECK_EQ(parse(text, n + (size_t)k, &b, err, sizeof err), 0);
    name[255] = 'n';
    name[256] = '\0';
    k = snprintf(text + n, sizeof text - n, "file 1 %s\nx\nend\n", name);
    CHECK_EQ(parse(text, n + (size_t)k, &b, err, sizeof err), -1);
    /* BUNDLE_MAX_FILES files, then one more. */
    size_t len = n;
    for (int i = 0; i <= BUNDLE_MAX_FILES; i++)
        len += (size_t)snprintf(text + len, sizeof text - len, "file 1 f%d\nx\n", i);
    len += (size_t)snprintf(text + len, sizeof text - len, "end\n");
    CHECK_EQ(parse(text, len, &b, err, sizeof err), -1);
    CHECK(strstr(err, "more than") != NULL);
}
