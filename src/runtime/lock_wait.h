// Waiting for another process's cache entry lock (runtime/disk_cache.h):
// the one place a Tegula process waits on another one.
//
// A builder that was stopped (SIGSTOP, Ctrl-Z) or that handed its lock to a
// forked child keeps the lock without ever finishing, so a waiter must not
// wait blindly. The holder writes its pid into the lock file; a waiter
// that has waited kEntryLockNotice says once on stderr whom it waits for,
// and stops waiting for a holder that is stopped or gone (then it builds
// the entry itself, unserialized: entries are verified, so two builds never
// mix). For a holder that is still working it waits at most
// $TEGULA_CACHE_LOCK_TIMEOUT seconds (default 600), then fails with E0908.
#pragma once

#include <string>

namespace tegula::runtime {

// Takes the exclusive flock on `fd` (the lock file at `path`, of entry `key`)
// and records this process as its holder. Returns false when the lock is
// not taken: the file system has no locks, or the holder is stopped or gone.
// Throws Error (E0908) on the timeout, Interrupted on the user's interrupt
// (support/interrupt.h).
bool acquire_entry_lock(int fd, const std::string& path, const std::string& key);

}  // namespace tegula::runtime
