// Fatal signals and unexpected exits of `daruma serve`: never silent.
//
// A broker that dies leaves its logs to be recovered as after a crash and
// counts an unclean start (crash_loop_guard.h). Whatever can be said about
// the death is said on stderr before the process ends, so the operator knows
// what to look for before the crash-loop guard trips:
//   - SIGPIPE is ignored process-wide (IgnoreSigpipe): a client that closes
//     its socket while sendfile(2) writes to it must cost only its own
//     connection, never the process (sendfile has no MSG_NOSIGNAL).
//   - SIGSEGV, SIGBUS, SIGFPE, SIGILL and SIGABRT print one line naming the
//     signal and the kind of the last request the broker started handling,
//     then end the process with the same signal (default action, core dump
//     where enabled). The handler uses only async-signal-safe calls; on the
//     installing (main) thread it runs on an alternate stack, so a stack
//     overflow there is reported too.
//   - std::terminate (an uncaught exception) prints the exception first.
//   - exit() called while serving, before Run() returned, prints a line.
//
// Threading: every function may be called from any thread; the installers
// are idempotent. NoteRequestKind is one relaxed atomic store per request.
#pragma once

#include <cstdint>

namespace daruma::broker {

void IgnoreSigpipe();

// Installs the fatal-signal, terminate and exit reporters (production only:
// tests keep their runner's handlers). `prefix` (a string literal, e.g.
// "daruma serve") starts every line.
void InstallFatalSignalReporting(const char* prefix);

// Run() is returning normally: a later exit is expected.
void ExpectExit();

// The API key of the request the network thread just read (-1 unknown).
void NoteRequestKind(int16_t api_key);

}  // namespace daruma::broker
