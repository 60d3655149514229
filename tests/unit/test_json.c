/*
 * test_json.c - src/json: the writer's output (escapes, fixed-point
 * numbers, nesting, misuse and overflow caught), the strict reader
 * (accepted and refused texts, lookups, iteration, unescaping, numbers),
 * and writer output read back.
 */
#include "test.h"

#include "json/json.h"

#include <string.h>

static const char *write_sample(char *buf, size_t cap, size_t *len)
{
    jw w;
    jw_init(&w, buf, cap);
    jw_obj(&w, NULL);
    jw_str(&w, "s", "a\"b\\c\n\x01\xc3\xa9");
    jw_u64(&w, "u", UINT64_MAX);
    jw_i64(&w, "i", INT64_MIN);
    jw_fixed(&w, "f", 1234, 3);
    jw_fixed(&w, "g", -5, 2);
    jw_fixed(&w, "h", 7, 0);
    jw_arr(&w, "a");
    jw_bool(&w, NULL, true);
    jw_null(&w, NULL);
    jw_obj(&w, NULL);
    jw_end(&w);
    jw_end(&w);
    jw_str(&w, "n", NULL);
    jw_raw(&w, "r", "{\"x\":1}", 7);
    jw_end(&w);
    *len = jw_finish(&w);
    return buf;
}

TEST(json_writer_escapes_and_formats_numbers_without_floating_point)
{
    char buf[512];
    size_t n;
    write_sample(buf, sizeof buf, &n);
    const char *want = "{\"s\":\"a\\\"b\\\\c\\n\\u0001\xc3\xa9\",\"u\":18446744073709551615,"
                       "\"i\":-9223372036854775808,\"f\":1.234,\"g\":-0.05,\"h\":7,"
                       "\"a\":[true,null,{}],\"n\":null,\"r\":{\"x\":1}}";
    CHECK(n == strlen(want));
    CHECK(strcmp(buf, want) == 0);
}

TEST(json_writer_reports_overflow_and_misuse_instead_of_half_a_document)
{
    char buf[512];
    size_t full;
    write_sample(buf, sizeof buf, &full);
    for (size_t cap = 0; cap <= full; cap++) {
        char small[512];
        size_t n;
        write_sample(small, cap, &n);
        CHECK(n == 0); /* one byte short of the NUL fails too */
    }
    jw w;
    jw_init(&w, buf, sizeof buf);
    jw_obj(&w, NULL);
    jw_u64(&w, NULL, 1); /* no key in an object */
    jw_end(&w);
    CHECK(jw_finish(&w) == 0);
    jw_init(&w, buf, sizeof buf);
    jw_arr(&w, NULL);
    jw_u64(&w, "k", 1); /* a key in an array */
    jw_end(&w);
    CHECK(jw_finish(&w) == 0);
    jw_init(&w, buf, sizeof buf);
    jw_obj(&w, NULL);
    CHECK(jw_finish(&w) == 0); /* not closed */
    jw_init(&w, buf, sizeof buf);
    jw_end(&w); /* closes nothing */
    CHECK(jw_finish(&w) == 0);
    jw_init(&w, buf, sizeof buf);
    for (int i = 0; i <= JSON_MAX_DEPTH; i++)
        jw_arr(&w, NULL);
    CHECK(jw_finish(&w) == 0);
    jw_init(&w, buf, sizeof buf);
    jw_u64(&w, NULL, 1);
    jw_u64(&w, NULL, 2); /* two top-level values */
    CHECK(jw_finish(&w) == 0);
}

TEST(json_reader_accepts_valid_texts)
{
    static const char *ok[] = {
        "0", "-0", "1.5e+3", "-12.25E-2", "\"\"", "\"\\u00e9\\ud83d\\ude00\\/\\b\\f\"",
        " { } ", "[]", "[1,[2,[3]],{\"a\":{}}]", "true", "false", "null",
        "{\"a\":1,\"a\":2}", "\"\xf0\x9f\x98\x80\"",
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        jr_val v;
        char err[64];
        int rc = jr_parse(ok[i], strlen(ok[i]), &v, err, sizeof err);
        if (rc != 0)
            fprintf(stderr, "refused %s: %s\n", ok[i], err);
        CHECK(rc == 0);
    }
}

TEST(json_reader_refuses_invalid_texts_with_a_reason)
{
    static const char *bad[] = {
        "", " ", "01", "1.", ".5", "1e", "+1", "-", "[1,]", "{\"a\":1,}", "{a:1}",
        "{\"a\" 1}", "[1 2]", "\"abc", "\"\\x\"", "\"\\u12g4\"", "\"\\ud800\"",
        "\"\\udc00\"", "\"\\ud800\\u0041\"", "\"\x01\"", "\"\xc0\x80\"", "\"\xed\xa0\x80\"",
        "\"\xf4\x90\x80\x80\"", "\"\xe2\x82\"", "tru", "nul", "[1]x", "1 2", "//c\n1",
        "[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]", "{\"a\":1", "[",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        jr_val v;
        char err[64] = "";
        int rc = jr_parse(bad[i], strlen(bad[i]), &v, err, sizeof err);
        if (rc == 0)
            fprintf(stderr, "accepted %s\n", bad[i]);
        CHECK(rc == -1);
        CHECK(err[0] != '\0');
    }
    /* A NUL inside the given length is not whitespace. */
    jr_val v;
    CHECK(jr_parse("1\0", 2, &v, NULL, 0) == -1);
}

TEST(json_reader_finds_members_iterates_and_converts)
{
    const char *t = "{\"command\":\"kick\",\"n\":42,\"neg\":-7,\"f\":3.14159,\"b\":true,"
                    "\"esc\":\"a\\u0000b\",\"list\":[1,\"x\",{}],\"long\":\"0123456789\","
                    "\"big\":18446744073709551616,\"k\\u0065y\":1}";
    jr_val root, v;
    CHECK(jr_parse(t, strlen(t), &root, NULL, 0) == 0);
    CHECK(root.type == JR_OBJECT);
    CHECK(jr_get(&root, "command", &v) == 0 && jr_string_is(&v, "command") == false);
    CHECK(jr_string_is(&v, "kick"));
    uint64_t u;
    int64_t i;
    CHECK(jr_get(&root, "n", &v) == 0 && jr_u64(&v, &u) == 0 && u == 42);
    CHECK(jr_get(&root, "neg", &v) == 0 && jr_u64(&v, &u) == -1);
    CHECK(jr_i64(&v, &i) == 0 && i == -7);
    CHECK(jr_get(&root, "f", &v) == 0 && jr_fixed(&v, 3, &i) == 0 && i == 3141);
    CHECK(jr_i64(&v, &i) == -1);
    CHECK(jr_get(&root, "big", &v) == 0 && jr_u64(&v, &u) == -1);
    bool b;
    CHECK(jr_get(&root, "b", &v) == 0 && jr_bool(&v, &b) == 0 && b);
    char s[16];
    CHECK(jr_get(&root, "esc", &v) == 0 && jr_string(&v, s, sizeof s) == -1);
    CHECK(jr_get(&root, "long", &v) == 0 && jr_string(&v, s, 10) == -1);
    CHECK(jr_string(&v, s, 11) == 10 && strcmp(s, "0123456789") == 0);
    CHECK(jr_get(&root, "key", &v) == 0); /* escaped key */
    CHECK(jr_get(&root, "missing", &v) == -1);
    CHECK(jr_get(&root, "list", &v) == 0 && v.type == JR_ARRAY);
    size_t it = 0;
    jr_val e;
    jr_type want[] = {JR_NUMBER, JR_STRING, JR_OBJECT};
    int count = 0;
    while (jr_next(&v, &it, NULL, &e)) {
        CHECK(count < 3 && e.type == want[count]);
        count++;
    }
    CHECK(count == 3);
    jr_val empty;
    CHECK(jr_parse("[ ]", 3, &empty, NULL, 0) == 0);
    it = 0;
    CHECK(jr_next(&empty, &it, NULL, &e) == 0);
}

TEST(json_writer_output_reads_back)
{
    char buf[512];
    size_t n;
    write_sample(buf, sizeof buf, &n);
    jr_val root, v;
    CHECK(jr_parse(buf, n, &root, NULL, 0) == 0);
    char s[32];
    CHECK(jr_get(&root, "s", &v) == 0);
    CHECK(jr_string(&v, s, sizeof s) == 9);
    CHECK(memcmp(s, "a\"b\\c\n\x01\xc3\xa9", 9) == 0);
    int64_t i;
    uint64_t u;
    CHECK(jr_get(&root, "u", &v) == 0 && jr_u64(&v, &u) == 0 && u == UINT64_MAX);
    CHECK(jr_get(&root, "i", &v) == 0 && jr_i64(&v, &i) == -1); /* |INT64_MIN| overflows */
    CHECK(jr_get(&root, "g", &v) == 0 && jr_fixed(&v, 2, &i) == 0 && i == -5);
    CHECK(jr_get(&root, "r", &v) == 0 && jr_get(&v, "x", &v) == 0);
}
