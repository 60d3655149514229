/*
 * version.h - the release version of tern, the one source for both
 * platforms: reported by `ternd --version`, logged at start-up, and
 * handed to the core for $SYS/broker/version (the unikernel adds
 * "(unikernel)" to it).
 */
#ifndef TERN_VERSION_H
#define TERN_VERSION_H

#define TERN_VERSION "0.1.0-dev"

#endif
