/*
 * fuzz_json.c - libFuzzer target for src/json: the strict reader over
 * arbitrary bytes (operator console requests arrive from the network) and
 * the writer over what the reader accepts.
 *
 * Properties:
 *   - jr_parse never reads past its input, and a refusal names a reason;
 *   - every accepted document can be walked completely (jr_next, jr_get,
 *     every string unescaped, every number converted or refused) without
 *     leaving the document's view;
 *   - re-writing an accepted document with the writer gives text the
 *     reader accepts, and re-writing that gives the same bytes again.
 */
#include "json/json.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_ASSERT(c) ((c) ? (void)0 : abort())

static void rewrite(jw *w, const char *key, const jr_val *v, const jr_val *root)
{
    FUZZ_ASSERT(v->p >= root->p && v->p + v->n <= root->p + root->n);
    char s[512];
    int64_t i;
    switch (v->type) {
    case JR_OBJECT:
    case JR_ARRAY: {
        if (v->type == JR_OBJECT)
            jw_obj(w, key);
        else
            jw_arr(w, key);
        size_t it = 0;
        jr_val k, e;
        while (jr_next(v, &it, &k, &e)) {
            const char *ek = NULL;
            char kb[512];
            if (v->type == JR_OBJECT) {
                FUZZ_ASSERT(k.type == JR_STRING);
                if (jr_string(&k, kb, sizeof kb) < 0)
                    strcpy(kb, "?"); /* too long or holds a NUL */
                ek = kb;
                jr_val again;
                FUZZ_ASSERT(jr_get(v, kb, &again) == 0 || strcmp(kb, "?") == 0 ||
                            strlen(kb) >= 256);
            }
            rewrite(w, ek, &e, root);
        }
        jw_end(w);
        break;
    }
    case JR_STRING: {
        long n = jr_string(v, s, sizeof s);
        if (n >= 0) {
            FUZZ_ASSERT((size_t)n < sizeof s && s[n] == '\0' && memchr(s, 0, (size_t)n) == NULL);
            jw_strn(w, key, s, (size_t)n);
        } else {
            jw_null(w, key);
        }
        break;
    }
    case JR_NUMBER:
        if (jr_fixed(v, 3, &i) == 0)
            jw_fixed(w, key, i, 3);
        else
            jw_null(w, key);
        break;
    case JR_TRUE:
    case JR_FALSE: {
        bool b = false;
        FUZZ_ASSERT(jr_bool(v, &b) == 0);
        jw_bool(w, key, b);
        break;
    }
    case JR_NULL:
        jw_null(w, key);
        break;
    default:
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* A copy of exactly size bytes, so ASan sees any read past the end. */
    char *text = malloc(size ? size : 1);
    if (!text)
        return 0;
    if (size)
        memcpy(text, data, size);
    jr_val root;
    char err[64] = "";
    if (jr_parse(text, size, &root, err, sizeof err) != 0) {
        FUZZ_ASSERT(err[0] != '\0');
        free(text);
        return 0;
    }
    static char out1[1 << 17], out2[1 << 17];
    jw w;
    jw_init(&w, out1, sizeof out1);
    rewrite(&w, NULL, &root, &root);
    size_t n1 = jw_finish(&w);
    if (n1 > 0) {
        jr_val again;
        FUZZ_ASSERT(jr_parse(out1, n1, &again, NULL, 0) == 0);
        jw_init(&w, out2, sizeof out2);
        rewrite(&w, NULL, &again, &again);
        size_t n2 = jw_finish(&w);
        FUZZ_ASSERT(n2 == n1 && memcmp(out1, out2, n1) == 0);
    }
    free(text);
    return 0;
}
