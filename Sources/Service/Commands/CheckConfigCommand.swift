import CCS
import Daemon
import FoundationEssentials
import Glibc

/// `ccsd check-config FILE`: checks a configuration file without a running service and explains every problem
/// (not only the first): unknown keys, invalid values, broken cross-field rules, a missing sender ID, and
/// files it names that cannot be read.
enum CheckConfigCommand {
    static let usage = """
        usage: ccsd check-config FILE

        Checks a configuration file (the JSON object `ccsd run --config` and `ccsd serve --config` read) and
        prints every problem, one line each: the key and the rule it breaks. Also checked: sender_id is set,
        and server_key_file and ca_file, when set, can be read (run it as the user the service reads them as;
        the key's contents are never printed). Needs no running service.

          -h, --help     this text

        exit codes: 0 the file is good, 2 it has problems (each printed) or usage
        """

    /// Every problem of a configuration file's text, in order, and the configuration read from it.
    /// `readFile` reads the files the configuration names (tests pass their own).
    static func check(fileContents: Data, path: String,
                      readFile: (String, String) throws(ConfigurationError) -> Data = Configuration.readFile)
        -> (configuration: Configuration, problems: [ConfigurationError]) {
        var configuration = Configuration()
        var problems = configuration.problems(applyingFileContents: fileContents, path: path)
        if problems.count == 1, problems[0].field == path {
            return (configuration, problems)  // not one JSON object: nothing else to check
        }
        let invalid = Set(problems.map(\.field))
        if configuration.senderID.isEmpty, !invalid.contains("sender_id") {
            problems.append(ConfigurationError(field: "sender_id", rule: "required: the numeric sender ID (project number)"))
        }
        if let keyFile = configuration.serverKeyFile {
            do {
                let key = try readFile(keyFile, "server_key_file")
                if String(decoding: key, as: UTF8.self).trimmingWhitespace().isEmpty {
                    problems.append(ConfigurationError(field: "server_key_file", rule: "\(keyFile) is empty"))
                }
            } catch {
                problems.append(error)
            }
        }
        if let caFile = configuration.caFile {
            do {
                let pem = try readFile(caFile, "ca_file")
                if !String(decoding: pem, as: UTF8.self).contains("-----BEGIN CERTIFICATE-----") {
                    problems.append(ConfigurationError(field: "ca_file", rule: "\(caFile) holds no PEM certificate"))
                }
            } catch {
                problems.append(error)
            }
        }
        return (configuration, problems)
    }

    /// The report: `FILE: N problems` and one indented line per problem, or `FILE: ok` and a summary.
    static func report(path: String, configuration: Configuration, problems: [ConfigurationError]) -> [String] {
        guard problems.isEmpty else {
            let count = problems.count == 1 ? "1 problem" : "\(problems.count) problems"
            return ["\(path): \(count)"] + problems.map { "  \($0.field): \($0.rule)" }
        }
        var lines = ["\(path): ok"]
        lines.append("  sender ID \(configuration.senderID), \(configuration.connections) connection(s) to "
                     + configuration.endpoints.map(\.description).joined(separator: ", then "))
        lines.append("  store: \(configuration.store.rawValue)"
                     + (configuration.stateDirectory.map { " in \($0)" } ?? " in the state directory ($STATE_DIRECTORY, else /var/lib/ccsd)"))
        if configuration.serverKeyFile == nil {
            lines.append("  note: no server_key_file; the server key must come from --server-key-file (the unit's credential) or CCSD_SERVER_KEY")
        }
        return lines
    }

    static func main(_ arguments: [String]) -> Int32 {
        run(arguments, output: .standard)
    }

    static func run(_ arguments: [String], output: CommandOutput) -> Int32 {
        var path: String?
        for argument in arguments {
            switch argument {
            case "-h", "--help":
                output.out(usage)
                return 0
            default:
                if argument.hasPrefix("-"), argument != "-" || path != nil {
                    output.err("ccsd check-config: \(ArgumentCursor.unknown(argument, known: ["--help"]))\n\(usage)")
                    return 2
                }
                guard path == nil else {
                    output.err("ccsd check-config: one FILE at a time, got \"\(path!)\" and \"\(argument)\"")
                    return 2
                }
                path = argument
            }
        }
        guard let path else {
            output.err("ccsd check-config: FILE: required\n\(usage)")
            return 2
        }
        let contents: Data
        do {
            contents = path == "-" ? StandardStreams.readInput()
                : try Configuration.readFile(path, field: path)
        } catch {
            output.out("\(path): 1 problem")
            output.out("  \(error.problems.map { "\($0.rule)" }.joined())")
            return 2
        }
        let (configuration, problems) = check(fileContents: contents, path: path)
        report(path: path, configuration: configuration, problems: problems).forEach(output.out)
        return problems.isEmpty ? 0 : 2
    }
}
