import Foundation
import Service
import TLS

// ccsd: keeps XMPP connections to FCM's connection server (CCS) and moves push messages both ways.
// Up to 1,000 connections, each a socket: the soft limit on open files goes up to the hard limit.
OpenFileLimit.raiseToHardLimit()
// One event loop does the per-message work: one malloc arena is enough, and holds the least memory
// (MallocArenas). Small blocks come from each thread's cache without the arena's lock, so the intake reader
// and the store writer hardly contend with the loop for it: against two arenas, the same futex calls and CPU
// per message under a flood, about 0.9 MiB less resident (1 connection, memory or SQLite store).
MallocArenas.limit(to: 1)
exit(CCSDCommandLine.main(Array(CommandLine.arguments.dropFirst())))
