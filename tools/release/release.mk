# tools/release/release.mk - signed reproducible releases (SPEC F6, issue 20;
# docs/RELEASING.md). Included by the top-level Makefile.
#
#   make release [MINISIGN_KEY=PATH]
#                      build/release/: the ISO and raw disk image (evaluation
#                      configuration), ternd_V_amd64.deb, the source archive,
#                      an SPDX SBOM per artifact, SHA256SUMS and, with a key,
#                      SHA256SUMS.minisig (tools/release/build.sh)
#   make release-check two fresh clones of HEAD in different directories each
#                      run `make release` with a throwaway key; every artifact
#                      must be byte-identical, the signature must verify, the
#                      SBOMs must list deps/lock's versions, and the .deb must
#                      install and serve in a clean Debian 12 chroot and be
#                      started by systemd in a booted Debian 12 container
#                      (systemd-nspawn) (tests/release; 8 min at load 2-7,
#                      21-30 min at load 10-15, so not part of make test)
#
# The release's objects are built with TERN_RELEASE=1 in their own tree
# (build/release-work): -ffile-prefix-map maps the checkout's path to "."
# in the debug information, and -Wa,--debug-prefix-map does the same for
# the assembler's line tables (the .S files and LTO's output): with only
# the first, two clones differed in .debug_line_str by that one path.

ifdef TERN_RELEASE
CC += -ffile-prefix-map=$(CURDIR)=. -Wa,--debug-prefix-map=$(CURDIR)=.
endif

.PHONY: release release-check

# deps/fetch.sh as `make deps` does, without `make setup`'s npm install:
# a release needs the host packages (scripts/setup-host.sh) and the deps.
release:
	@deps/fetch.sh
	@tools/release/build.sh $(BUILD)

release-check:
	$(PYTHON) -m pytest -q -p no:cacheprovider tests/release
