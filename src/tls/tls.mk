# src/tls/tls.mk - the TLS adapter (src/tls/) and wolfSSL in the build.
# Included by the top-level Makefile after its link rules:
#
#     include src/tls/tls.mk
#
# It compiles src/tls/*.c with wolfSSL's headers (only the adapter sees
# them: tls.h is wolfSSL-free) and adds the adapter's objects and the static
# libwolfssl.a (built by `make deps` into build/deps) to the daemon and the
# unit-test binary. The recipes link with $^, so the extra prerequisites
# given here are linked too, after the core's objects.

-include build/deps/deps.mk

# Without `make deps` there is no deps.mk yet: use the paths it will name
# (so a make that runs `deps` first still works), and the rule below
# explains what is missing instead of a wall of errors.
ifeq ($(WOLFSSL_LIBS),)
WOLFSSL_CPPFLAGS := -isystem build/deps/wolfssl/include
WOLFSSL_LIBS     := build/deps/wolfssl/lib/libwolfssl.a
DEPS_LDLIBS      := -pthread
endif
build/deps/wolfssl/lib/libwolfssl.a:
	@echo "wolfSSL is not built yet: run 'make deps' (make test does it)" >&2; exit 1

# The diagnostics' crypto and handshake measurements (src/diag/cryptobench.c
# and its parts) use wolfCrypt and the adapter: built and linked with them.
# (The rest of src/diag/, if any, is wolfSSL-free and not listed here.)
DIAG_CRYPTO_SRC := $(sort $(wildcard src/diag/crypto*.c src/diag/handshake*.c))
TLS_SRC  := $(sort $(wildcard src/tls/*.c)) $(CONN_TLS_SRC) $(DIAG_CRYPTO_SRC)
REL_TLS  := $(call obj,rel,$(TLS_SRC))
ASAN_TLS := $(call obj,asan,$(TLS_SRC))

$(REL_TLS) $(ASAN_TLS): INC += $(WOLFSSL_CPPFLAGS)
# -MMD does not track -isystem headers: rebuild when wolfSSL is rebuilt
# (a new build has other options.h).
$(REL_TLS) $(ASAN_TLS): $(WOLFSSL_LIBS)

# The identity tests make certificates at run time with wolfCrypt; the
# record layer's, the signature cache's and the operator names' tests look
# inside the adapter (tls/internal.h).
TLS_WOLFSSL_TESTS := $(BUILD)/asan/tests/unit/test_tls_identity.o \
                     $(BUILD)/asan/tests/unit/test_tls_record_layer.o \
                     $(BUILD)/asan/tests/unit/test_tls_sigcache.o \
                     $(BUILD)/asan/tests/unit/test_tls_opnames.o
$(TLS_WOLFSSL_TESTS): INC += $(WOLFSSL_CPPFLAGS)
$(TLS_WOLFSSL_TESTS): $(WOLFSSL_LIBS)

$(BUILD)/rel/ternd: $(REL_TLS) $(WOLFSSL_LIBS)
$(BUILD)/asan/ternd $(BUILD)/asan/unit-tests: $(ASAN_TLS) $(WOLFSSL_LIBS)
$(BUILD)/rel/ternd: REL_LDFLAGS += $(DEPS_LDLIBS)
$(BUILD)/asan/ternd $(BUILD)/asan/unit-tests: ASAN_LDFLAGS += $(DEPS_LDLIBS)
