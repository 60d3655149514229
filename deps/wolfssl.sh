# shellcheck shell=bash
# deps/wolfssl.sh - how tern configures and builds wolfSSL for the hosted daemon.
#
# Sourced by deps/fetch.sh (which runs with `set -euo pipefail`); not run on
# its own. This is the single place that lists wolfSSL's build options; the
# freestanding kernel build reuses the same patched source tree
# (build/deps/wolfssl/src) with a user_settings.h, and can compare against the
# options.h this build installs (build/deps/wolfssl/include/wolfssl/options.h).
#
# What the daemon needs from wolfSSL, and which option provides it:
#   TLS 1.3 and 1.2 server, client certificates  default (--enable-tls13, tlsv12)
#   ECDSA P-256, X25519                          --enable-ecc, --enable-curve25519
#   fast P-256/RSA, AES-NI/AVX2 AES-GCM,         --enable-sp --enable-sp-asm
#     ChaCha20-Poly1305, SHA-2 assembly          --enable-intelasm --enable-aesni
#                                                (run-time CPUID dispatch)
#   SHA-512, AES-GCM, ChaCha20-Poly1305          default
#   PBKDF2 (password hashing, C3)                --enable-pwdbased
#   ALPN (MQTT-over-TLS clients that send it)    --enable-alpn
#   certificate/key generation (test PKI, tools) --enable-certgen --enable-keygen
#   client identity (CN or SAN) and operator     -DWOLFSSL_ALWAYS_VERIFY_CB: the
#     role, decided once in the handshake          verify callback also runs for
#                                                  a leaf that verified, and sees
#     the peer's DER chain; src/tls/ parses the leaf there with the public
#     DecodedCert API (wc_InitDecodedCert, wc_ParseCert; subjectCN, altNames,
#     altEmailNames), which also suits the kernel.
#   all SAN types (DNS, IP, URI, email)          -DWOLFSSL_ALT_NAMES
#   TLS 1.3 traffic secrets handed to src/tls/   -DHAVE_SECRET_CALLBACK: after
#     the handshake tern runs the record layer     (wolfSSL_set_tls13_secret_cb)
#     itself and frees the WOLFSSL object, so an idle connection keeps only
#     its keys (src/tls/record.c).
#   random bytes straight from the OS (getrandom  -DCUSTOM_RAND_GENERATE_BLOCK=
#     through glibc's getentropy, declared by        getentropy, at make time
#     -include sys/random.h), no DRBG of wolfSSL's    -include sys/random.h,
#     own (--disable-hashdrbg): as the kernel        --disable-hashdrbg
#     build does with its DRBG. wolfSSL_new otherwise
#     instantiates a Hash_DRBG per connection (open/read/close of
#     /dev/urandom and a SHA-256 health test: ~40 us, a tenth of a mutual-TLS
#     handshake's server CPU here; docs/PERFORMANCE.md "The cost of a
#     handshake"). A handshake draws three blocks (server random, X25519 key,
#     ECDSA nonce), one getrandom call each. getentropy refuses more than 256
#     bytes at once: such a request fails, it is never served weakly.
#   ECDSA verifications of certificate       -DHAVE_PK_CALLBACKS: wolfSSL
#     signatures by a configured CA            asks src/tls/sigcache.c
#     remembered, so a client certificate      (wolfSSL_CTX_SetEccVerifyCb)
#     seen again costs no second verify          for every ECDSA verify, which
#     (docs/PERFORMANCE.md "The cost of a        answers from its cache or
#     handshake")                                verifies with wolfCrypt.
#   Deliberately NOT -DKEEP_PEER_CERT: it keeps a copy of the peer's
#     certificate (a 1.1 KB WOLFSSL_X509 inside every WOLFSSL plus the DER)
#     for the life of each connection, ~1.6 KB of a ~5 KB idle mTLS
#     connection, for accessors tern does not use.
# Left out on purpose (lean): OpenSSL compatibility layer, DH (TLS uses ECDHE
# only), TLS < 1.2, session tickets (default off), examples.
#
# Hardening: -fstack-protector-strong and -fPIE like the daemon's release
# build; -D_FORTIFY_SOURCE=2 is passed at make time only, because wolfSSL's
# configure copies every -D it sees into the installed options.h, which would
# then force fortification on every file that includes it (e.g. ASan builds).

WOLFSSL_CONFIGURE_FLAGS=(
    --enable-sp --enable-sp-asm --enable-intelasm --enable-aesni
    --enable-curve25519 --enable-ecc --enable-tls13
    --enable-certgen --enable-keygen
    --disable-shared --enable-static
    --enable-pwdbased --enable-alpn
    --disable-dh --disable-oldtls --disable-examples
    --disable-hashdrbg
)
WOLFSSL_CPPFLAGS="-DWOLFSSL_ALT_NAMES -DWOLFSSL_ALWAYS_VERIFY_CB -DHAVE_SECRET_CALLBACK -DHAVE_PK_CALLBACKS -DCUSTOM_RAND_GENERATE_BLOCK=getentropy"
WOLFSSL_CFLAGS="-O2 -g -fPIE -fstack-protector-strong"
# The declaration of getentropy for random.c (C sources only: assembly is
# compiled with the configure-time CFLAGS).
WOLFSSL_MAKE_CFLAGS="$WOLFSSL_CFLAGS -D_FORTIFY_SOURCE=2 -include sys/random.h"

# wolfssl_autogen SRC: generate configure (the Debian orig tarball is a git
# export with configure.ac only; needs autoconf, automake, libtool).
wolfssl_autogen() {
    cd "$1" || return
    ./autogen.sh
}

# wolfssl_configure SRC BUILD PREFIX: out-of-tree configure.
wolfssl_configure() {
    local src=$1 build=$2 prefix=$3
    mkdir -p "$build"
    cd "$build" || return
    "$src/configure" --prefix="$prefix" "${WOLFSSL_CONFIGURE_FLAGS[@]}" \
        CPPFLAGS="$WOLFSSL_CPPFLAGS" CFLAGS="$WOLFSSL_CFLAGS"
}

# wolfssl_make BUILD PREFIX: build the static library and the wolfCrypt
# benchmark, install headers and library into PREFIX/{include,lib} and the
# benchmark as PREFIX/bin/wolfcrypt-benchmark.
wolfssl_make() {
    local build=$1 prefix=$2
    cd "$build" || return
    make -j2 V=1 CFLAGS="$WOLFSSL_MAKE_CFLAGS" \
        src/libwolfssl.la wolfcrypt/benchmark/benchmark
    make V=1 CFLAGS="$WOLFSSL_MAKE_CFLAGS" install-libLTLIBRARIES \
        install-includeHEADERS install-nobase_includeHEADERS install-pkgconfigDATA
    # Static linking needs no libtool archive; its absolute paths only confuse.
    rm -f "$prefix/lib/libwolfssl.la"
    install -D -m 755 wolfcrypt/benchmark/benchmark "$prefix/bin/wolfcrypt-benchmark"
}
