/*
 * setup.c - wolfSSL's start-up in the kernel: its allocator hooks (the
 * kernel heap, counted, so the broker can report what TLS holds), and its
 * CPU dispatch (AVX hidden when the kernel could not enable the state, so
 * wolfSSL falls back to its SSE or C code instead of faulting).
 */
#include "crypto/crypto.h"

#include "arch/x86_64/simd.h"
#include "console.h"
#include "mm/kmalloc.h"

#include <wolfssl/options.h>
#include <wolfssl/wolfcrypt/settings.h>
#include <wolfssl/wolfcrypt/cpuid.h>
#include <wolfssl/wolfcrypt/memory.h>
#include <wolfssl/version.h>

#include <stdio.h>

/* Live bytes wolfSSL holds, by the heap's usable size (what it really
 * costs, size-class rounding included). */
static size_t heap_bytes;

static void *tls_malloc(size_t size)
{
    void *p = kmalloc(size);
    if (p)
        heap_bytes += kmalloc_usable_size(p);
    return p;
}

static void tls_free(void *p)
{
    if (!p)
        return;
    heap_bytes -= kmalloc_usable_size(p);
    /* Key material passes through wolfSSL's buffers: wiped on free. */
    kfree_sensitive(p);
}

static void *tls_realloc(void *p, size_t size)
{
    size_t old = kmalloc_usable_size(p);
    void *n = krealloc(p, size);
    if (n || size == 0)
        heap_bytes -= old;
    if (n)
        heap_bytes += kmalloc_usable_size(n);
    return n;
}

int crypto_setup(const struct simd_state *simd)
{
    if (wolfSSL_SetAllocators(tls_malloc, tls_free, tls_realloc) != 0) {
        kprintf("tern: crypto: cannot install wolfSSL's allocator\n");
        return -1;
    }
    cpuid_set_flags();
    if (simd->avx_hidden)
        cpuid_clear_flag(CPUID_AVX1 | CPUID_AVX2);
    return 0;
}

size_t crypto_heap_bytes(void)
{
    return heap_bytes;
}

void crypto_describe(char *buf, size_t n)
{
    word32 f = cpuid_get_flags();
    snprintf(buf, n, "wolfSSL %s: AES-NI %s, AVX2 %s, BMI2/ADX %s", LIBWOLFSSL_VERSION_STRING,
             (f & CPUID_AESNI) ? "yes" : "no", (f & CPUID_AVX2) ? "yes" : "no",
             ((f & CPUID_BMI2) && (f & CPUID_ADX)) ? "yes" : "no");
}
