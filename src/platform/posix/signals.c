/*
 * signals.c - the signalfd behind the daemon's clean shutdown.
 */
#define _GNU_SOURCE

#include "platform/posix/signals.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

int tern_signals_open(void)
{
    struct sigaction ign;
    sigset_t set;

    memset(&ign, 0, sizeof ign);
    ign.sa_handler = SIG_IGN;
    if (sigemptyset(&ign.sa_mask) != 0 || sigaction(SIGPIPE, &ign, NULL) != 0)
        return -1;
    if (sigemptyset(&set) != 0 || sigaddset(&set, SIGTERM) != 0 ||
        sigaddset(&set, SIGINT) != 0 || sigaddset(&set, SIGHUP) != 0)
        return -1;
    if (sigprocmask(SIG_BLOCK, &set, NULL) != 0)
        return -1;
    return signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
}

int tern_signals_read(int fd)
{
    struct signalfd_siginfo si;
    ssize_t n;

    do {
        n = read(fd, &si, sizeof si);
    } while (n < 0 && errno == EINTR);
    if (n < 0)
        return errno == EAGAIN ? 0 : -1;
    if ((size_t)n != sizeof si)
        return -1;
    return (int)si.ssi_signo;
}
