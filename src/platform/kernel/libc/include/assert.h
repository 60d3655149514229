/*
 * assert.h - C's assert for portable third-party code (SQLite includes it;
 * its asserts are compiled out unless SQLITE_DEBUG). With NDEBUG it is
 * nothing; otherwise a failed assertion is a fatal error (SPEC A5). Like
 * the C header, it may be included again with NDEBUG changed.
 */
#undef assert
#ifdef NDEBUG
#define assert(x) ((void)0)
#else
_Noreturn void tern_assert_fail(const char *expr, const char *file, int line);
#define assert(x) ((x) ? (void)0 : tern_assert_fail(#x, __FILE__, __LINE__))
#endif
