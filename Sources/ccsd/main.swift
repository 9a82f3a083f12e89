import Daemon
import Foundation

// ccsd: keeps XMPP connections to FCM's connection server (CCS) and moves push messages both ways.
exit(CCSDCommand.main(Array(CommandLine.arguments.dropFirst())))
