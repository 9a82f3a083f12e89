import Foundation

/// Runs `curl` as a process (bounded by `--max-time`; killed by its PID if it outlives that) and parses its
/// `-i` output: the status of the last response, its header fields (lowercased names) and its body.
struct CurlResult {
    let status: Int
    let headers: [String: String]
    let body: String
}

func curl(_ arguments: [String], maxTime: Int = 10) throws -> CurlResult {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
    process.arguments = ["-s", "-i", "--max-time", "\(maxTime)"] + arguments
    let output = Pipe()
    process.standardOutput = output
    process.standardError = FileHandle.nullDevice
    try process.run()
    let pid = process.processIdentifier
    let watchdog = DispatchWorkItem { kill(pid, SIGKILL) }
    DispatchQueue.global().asyncAfter(deadline: .now() + .seconds(maxTime + 5), execute: watchdog)
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    watchdog.cancel()
    return parseResponse(String(decoding: data, as: UTF8.self))
}

/// The last HTTP response in `text` (`curl -i` prints a `100 Continue` head first when there is one).
func parseResponse(_ text: String) -> CurlResult {
    var rest = Substring(text)
    var status = 0
    var headers: [String: String] = [:]
    while rest.hasPrefix("HTTP/") {
        guard let end = rest.range(of: "\r\n\r\n") else { break }
        let head = rest[..<end.lowerBound].components(separatedBy: "\r\n")
        rest = rest[end.upperBound...]
        status = Int(head[0].split(separator: " ")[1]) ?? 0
        headers = [:]
        for line in head.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
    }
    return CurlResult(status: status, headers: headers, body: String(rest))
}
