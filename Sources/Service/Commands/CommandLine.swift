import CCS
import Daemon
import FoundationEssentials
import Glibc

/// The `ccsd` command line: one entry per command. `run` is the batch command (files and pipes, see
/// `CCSDCommand`); `serve` is the service (the store, the pool and the HTTP API); the others are clients of a
/// running service, over its API socket.
public enum CCSDCommandLine {
    /// A command: its name, a one-line summary for `ccsd --help`, and its entry point (arguments after the
    /// name; returns the process exit code).
    struct Command: Sendable {
        let name: String
        let summary: String
        let main: @Sendable ([String]) -> Int32
    }

    static let commands: [Command] = [
        Command(name: "run", summary: "send messages from a file or pipe, write events to a file (batch)") {
            CCSDCommand.main(["run"] + $0)
        },
        Command(name: "serve", summary: "run as a service: the store, the connections and the HTTP API", main: ServeCommand.main),
        Command(name: "send", summary: "submit messages to the running service (flags or a file)", main: SendCommand.main),
        Command(name: "events", summary: "follow the running service's events feed", main: EventsCommand.main),
        Command(name: "status", summary: "show the running service's connections, queue and recent errors", main: StatusCommand.main),
        Command(name: "check-config", summary: "check a configuration file and explain every problem", main: CheckConfigCommand.main),
    ]

    static var usage: String {
        var text = "usage: ccsd COMMAND [OPTIONS]   (ccsd COMMAND --help for a command's options)\n\ncommands:\n"
        for command in commands {
            text += "  " + command.name.padded(to: 14) + command.summary + "\n"
        }
        text += "\n  --version     print the version\n  --help        print this help"
        return text
    }

    /// Runs the command named by `arguments[0]`; returns the process exit code.
    public static func main(_ arguments: [String]) -> Int32 {
        guard let name = arguments.first else {
            StandardStreams.writeError(usage + "\n")
            return 2
        }
        switch name {
        case "--version", "version":
            print("ccsd \(CCSDVersion.string)")
            return 0
        case "-h", "--help", "help":
            print(usage)
            return 0
        default:
            guard let command = commands.first(where: { $0.name == name }) else {
                StandardStreams.writeError("ccsd: unknown command \"\(name)\"\n\(usage)\n")
                return 2
            }
            return command.main(Array(arguments.dropFirst()))
        }
    }
}
