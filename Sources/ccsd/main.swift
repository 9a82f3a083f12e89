import Foundation
import Service

// ccsd: keeps XMPP connections to FCM's connection server (CCS) and moves push messages both ways.
exit(CCSDCommandLine.main(Array(CommandLine.arguments.dropFirst())))
