import FoundationEssentials
import Glibc
import Service
import TLS

// ccsd: keeps XMPP connections to FCM's connection server (CCS) and moves push messages both ways.
// Up to 1,000 connections, each a socket: the soft limit on open files goes up to the hard limit.
OpenFileLimit.raiseToHardLimit()
// The allocator is jemalloc, with one arena (CAllocatorSettings; docs/decisions.md, "Allocator").
exit(CCSDCommandLine.main(Array(CommandLine.arguments.dropFirst())))
