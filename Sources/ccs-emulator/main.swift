// ccs-emulator: a stand-in for FCM's XMPP connection server (CCS) on loopback, for tests and the demo.
// Behaviour: docs in CCSEmulator and docs/ccs-protocol.md. Logs to stderr; exits 0 on SIGTERM/SIGINT.
import CCSEmulator
import Dispatch
import Foundation
import Glibc
import TLS

let usage = """
    usage: ccs-emulator --sender-id ID (--server-key-file FILE | env CCS_EMULATOR_SERVER_KEY) [options]
      --listen HOST:PORT        listen address, repeatable (default 127.0.0.1:5235 and 127.0.0.1:5236; port 0 = ephemeral)
      --jid-domain DOMAIN       JID domain for SASL and the bound JID (default gcm.googleapis.com)
      --generate-ca DIR         make a throwaway CA and server cert (SAN localhost, 127.0.0.1); write DIR/ca.pem
      --cert FILE --key FILE    use this PEM certificate chain and key instead
      --ack-latency-ms N        milliseconds before each ack/nack (default 0)
      --nack-rule PREFIX=CODE[:once]  nack tokens with PREFIX (":once": first attempt only); repeatable,
                                tried before the defaults bad-, unreg-, flaky-:once, rate-:once
      --nack-rate P             probability 0...1 of SERVICE_UNAVAILABLE (default 0)
      --seed N                  seed for --nack-rate (default 1)
      --receipts on|off         delivery receipts when requested (default on)
      --drain-grace-ms N        close a drained stream after N ms (default 1000)
      --poison-upstream         fault: send upstream messages and a receipt a client cannot fully decode
      --control-port P          line-based control channel on 127.0.0.1:P (0 = ephemeral)
      --ready-file FILE         write {"ports":[...],"control_port":...} once listening
      --stats-file FILE         write the stats JSON on exit
      --acked-per-connection-file FILE  write on exit {"acked_per_connection":[N,...]}: downstream
                                messages acked on each connection, in accept order
      --received-ids-file FILE  write on exit the message_ids seen: {"downstream_received":[...],
                                "downstream_acked":[...],"upstream_sent":[...],"receipts_sent":[...],
                                "client_acked":[...],"client_acked_on":[...]} (upstream and receipt ids
                                the client ACKed, and the connection id each ACK came on)
    fault modes (off by default):
      --end-after-login FORM    end every stream right after login, at the client's first message (never
                                answered) or --end-after-login-delay-ms after login; FORM is one of
                                stream-error:CONDITION, stream-end, fin, rst, garbage, see-other-host[:HOST:PORT]
      --end-after-login-delay-ms N  when no message comes first (default 100)
      --reject-acks MODE        answer every client ACK with an error instead of taking it; MODE is
                                stanza-error (echoing the ACK and its id), bad-ack (nack BAD_ACK for the
                                upstream message_id) or both
      --upstream-id-prefix P    message_id prefix of the upstream command's messages (default u-)
      --early-upstream N        N upstream messages pending from the start: after each bind result, before the
                                session result, send those not yet ACKed, a receipt, an ack nobody asked for,
                                a presence, an iq get (version), a ping and a stray iq result
      --stream-prologue LIST    comma-separated: newline (after <success/>), bom (UTF-8 byte-order mark before
                                each stream header), declaration (XML declaration before each stream header)
    control commands (one per line, JSON answer per line): drain [conn], upstream N [conn], receipt ID [conn],
      ping [conn], stream-error CONDITION [conn], disconnect [conn], stats, connections,
      fault MODE [conn | next N] (now, or on each of the next N connections: at accept for split-records,
      at the auth for sasl-failure, right after login for the others), fault clear (disarm; end slow reads);
      MODE is close, rst, half-open, cut-stanza, corrupt-record, split-records, slow-read[:SECONDS],
      stream-error:CONDITION or sasl-failure:CONDITION
    """

func log(_ message: String) {
    FileHandle.standardError.write(Data((message + "\n").utf8))
}

func fail(_ message: String, code: Int32 = 2) -> Never {
    log("ccs-emulator: \(message)")
    exit(code)
}

struct Options {
    var listen: [EmulatorConfiguration.ListenAddress] = []
    var senderID: String?
    var serverKeyFile: String?
    var jidDomain = "gcm.googleapis.com"
    var generateCA: String?
    var certFile: String?
    var keyFile: String?
    var ackLatency = 0
    var nackRules: [NackRule] = []
    var nackRate = 0.0
    var seed: UInt64 = 1
    var receipts = true
    var drainGrace = 1000
    var poisonUpstream = false
    var controlPort: Int?
    var readyFile: String?
    var statsFile: String?
    var receivedIDsFile: String?
    var ackedPerConnectionFile: String?
    var afterLoginFault: AfterLoginFault?
    var afterLoginFaultDelay = 100
    var ackRejection: AckRejection?
    var upstreamIDPrefix = "u-"
    var negotiationFaults = NegotiationFaults()
}

func parseOptions(_ arguments: [String]) -> Options {
    var options = Options()
    var index = 0
    func value(_ flag: String, inline: String?) -> String {
        if let inline { return inline }
        index += 1
        guard index < arguments.count else { fail("\(flag) needs a value\n\(usage)") }
        return arguments[index]
    }
    func integer(_ flag: String, _ text: String, _ range: ClosedRange<Int>) -> Int {
        guard let n = Int(text), range.contains(n) else { fail("\(flag): expected an integer in \(range), got \(text)") }
        return n
    }
    while index < arguments.count {
        var flag = arguments[index]
        var inline: String?
        if flag.hasPrefix("--"), let equals = flag.firstIndex(of: "=") {
            inline = String(flag[flag.index(after: equals)...])
            flag = String(flag[..<equals])
        }
        switch flag {
        case "--help", "-h":
            print(usage)
            exit(0)
        case "--listen":
            let text = value(flag, inline: inline)
            guard let address = EmulatorConfiguration.ListenAddress(parsing: text) else {
                fail("--listen: expected HOST:PORT, got \(text)")
            }
            options.listen.append(address)
        case "--sender-id": options.senderID = value(flag, inline: inline)
        case "--server-key-file": options.serverKeyFile = value(flag, inline: inline)
        case "--jid-domain": options.jidDomain = value(flag, inline: inline)
        case "--generate-ca": options.generateCA = value(flag, inline: inline)
        case "--cert": options.certFile = value(flag, inline: inline)
        case "--key": options.keyFile = value(flag, inline: inline)
        case "--ack-latency-ms": options.ackLatency = integer(flag, value(flag, inline: inline), 0...3_600_000)
        case "--nack-rule":
            let text = value(flag, inline: inline)
            guard let rule = NackRule(parsing: text) else { fail("--nack-rule: expected PREFIX=CODE[:once], got \(text)") }
            options.nackRules.append(rule)
        case "--nack-rate":
            let text = value(flag, inline: inline)
            guard let p = Double(text), (0...1).contains(p) else { fail("--nack-rate: expected a number in 0...1, got \(text)") }
            options.nackRate = p
        case "--seed":
            let text = value(flag, inline: inline)
            guard let seed = UInt64(text) else { fail("--seed: expected a non-negative integer, got \(text)") }
            options.seed = seed
        case "--receipts":
            switch value(flag, inline: inline) {
            case "on": options.receipts = true
            case "off": options.receipts = false
            case let other: fail("--receipts: expected on or off, got \(other)")
            }
        case "--poison-upstream": options.poisonUpstream = true
        case "--drain-grace-ms": options.drainGrace = integer(flag, value(flag, inline: inline), 0...3_600_000)
        case "--control-port": options.controlPort = integer(flag, value(flag, inline: inline), 0...65535)
        case "--ready-file": options.readyFile = value(flag, inline: inline)
        case "--stats-file": options.statsFile = value(flag, inline: inline)
        case "--received-ids-file": options.receivedIDsFile = value(flag, inline: inline)
        case "--acked-per-connection-file": options.ackedPerConnectionFile = value(flag, inline: inline)
        case "--end-after-login":
            let text = value(flag, inline: inline)
            guard let fault = AfterLoginFault(parsing: text) else {
                fail("--end-after-login: expected stream-error:CONDITION, stream-end, fin, rst, garbage or see-other-host[:HOST:PORT], got \(text)")
            }
            options.afterLoginFault = fault
        case "--end-after-login-delay-ms":
            options.afterLoginFaultDelay = integer(flag, value(flag, inline: inline), 0...3_600_000)
        case "--reject-acks":
            let text = value(flag, inline: inline)
            guard let rejection = AckRejection(rawValue: text) else {
                fail("--reject-acks: expected stanza-error, bad-ack or both, got \(text)")
            }
            options.ackRejection = rejection
        case "--upstream-id-prefix":
            let text = value(flag, inline: inline)
            guard !text.isEmpty else { fail("--upstream-id-prefix: must not be empty") }
            options.upstreamIDPrefix = text
        case "--early-upstream": options.negotiationFaults.earlyUpstream = integer(flag, value(flag, inline: inline), 0...10_000)
        case "--stream-prologue":
            let text = value(flag, inline: inline)
            guard let parts = NegotiationFaults.parsePrologue(text) else {
                fail("--stream-prologue: expected a comma-separated list of newline, bom, declaration; got \(text)")
            }
            options.negotiationFaults.streamPrologue = parts
        default:
            fail("unknown flag \(arguments[index])\n\(usage)")
        }
        index += 1
    }
    return options
}

func readFile(_ path: String, what: String) -> String {
    guard let data = FileManager.default.contents(atPath: path) else { fail("cannot read \(what) \(path)") }
    return String(decoding: data, as: UTF8.self)
}

func writeFile(_ path: String, _ text: String) {
    do {
        try Data(text.utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
    } catch {
        log("ccs-emulator: cannot write \(path): \(error.localizedDescription)")
    }
}

let options = parseOptions(Array(CommandLine.arguments.dropFirst()))
guard let senderID = options.senderID, !senderID.isEmpty else { fail("--sender-id is required\n\(usage)") }
let serverKey: String
if let file = options.serverKeyFile {
    serverKey = readFile(file, what: "server key file").trimmingCharacters(in: .whitespacesAndNewlines)
} else if let env = ProcessInfo.processInfo.environment["CCS_EMULATOR_SERVER_KEY"] {
    serverKey = env
} else {
    fail("no server key: give --server-key-file FILE or set CCS_EMULATOR_SERVER_KEY")
}
guard !serverKey.isEmpty else { fail("the server key is empty") }

var configuration = EmulatorConfiguration(senderID: senderID, serverKey: serverKey, jidDomain: options.jidDomain)
if !options.listen.isEmpty { configuration.listen = options.listen }
switch (options.generateCA, options.certFile, options.keyFile) {
case (let directory?, nil, nil):
    configuration.certificate = .generated
    configuration.caDirectory = directory
case (nil, let cert?, let key?):
    configuration.certificate = .provided(certificateChainPEM: readFile(cert, what: "certificate"),
                                          privateKeyPEM: readFile(key, what: "key"))
case (nil, nil, nil):
    configuration.certificate = .generated
    log("ccs-emulator: warning: no --generate-ca DIR: clients cannot get the generated CA")
default:
    fail("give either --generate-ca DIR or both --cert FILE and --key FILE")
}
configuration.ackLatencyMilliseconds = options.ackLatency
configuration.nackRules = options.nackRules + NackRule.defaults
configuration.nackRate = options.nackRate
configuration.seed = options.seed
configuration.receipts = options.receipts
configuration.poisonUpstream = options.poisonUpstream
configuration.drainGraceMilliseconds = options.drainGrace
configuration.afterLoginFault = options.afterLoginFault
configuration.afterLoginFaultDelayMilliseconds = options.afterLoginFaultDelay
configuration.ackRejection = options.ackRejection
configuration.upstreamMessageIDPrefix = options.upstreamIDPrefix
configuration.negotiationFaults = options.negotiationFaults

// One socket per client connection (1,000 for a full ccsd): the soft limit on open files goes up to the hard limit.
OpenFileLimit.raiseToHardLimit()
let emulator = CCSEmulator(configuration: configuration, loop: EventLoop(label: "ccs-emulator", backend: .epoll), log: { log($0) })
let ports: [Int]
do {
    ports = try emulator.start()
} catch {
    fail(error.message, code: 1)
}
var control: ControlChannel?
if let controlPort = options.controlPort {
    do {
        control = try ControlChannel(port: controlPort, emulator: emulator)
        log("ccs-emulator: control channel on 127.0.0.1:\(control!.port)")
    } catch {
        emulator.stop()
        fail(error.message, code: 1)
    }
}
if let readyFile = options.readyFile {
    writeFile(readyFile, "{\"ports\":[\(ports.map(String.init).joined(separator: ","))],\"control_port\":\(control.map { String($0.port) } ?? "null")}\n")
}

let statsFile = options.statsFile
let receivedIDsFile = options.receivedIDsFile
let ackedPerConnectionFile = options.ackedPerConnectionFile
let controlChannel = control
var signalSources: [DispatchSourceSignal] = []
for signalNumber in [SIGTERM, SIGINT] {
    signal(signalNumber, SIG_IGN)
    let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .main)
    source.setEventHandler {
        log("ccs-emulator: signal \(signalNumber); stopping")
        controlChannel?.close()
        emulator.stop()
        let stats = emulator.stats()
        log("ccs-emulator: stats \(stats.json)")
        if let statsFile { writeFile(statsFile, stats.json + "\n") }
        if let receivedIDsFile { writeFile(receivedIDsFile, emulator.messageIDs().json + "\n") }
        if let ackedPerConnectionFile { writeFile(ackedPerConnectionFile, emulator.ackedPerConnectionJSON() + "\n") }
        // A moment for the stream ends and close_notify to leave, then go.
        DispatchQueue.main.asyncAfter(deadline: .now() + 0.3) { exit(0) }
    }
    source.resume()
    signalSources.append(source)
}
dispatchMain()
