/// A registration token (or notification key) shortened for logs and error messages:
/// the first 8 characters, "…", and the full length, e.g. `c2LufYNu…(163)`.
///
/// Tokens are credentials to a user's device: never log one in full.
/// Tokens of 12 characters or fewer are replaced entirely, e.g. `…(10)`, since 8 of them would be most of it.
public func shortenedToken(_ token: String) -> String {
    let count = token.count
    guard count > 12 else { return "…(\(count))" }
    return String(token.prefix(8)) + "…(\(count))"
}

/// `text` from a peer (a nack's `error_description`, a stream error's text, a close reason) with every run
/// that may be a registration token shortened as `shortenedToken` does: a run of at least 32 of the
/// characters tokens are made of (`A-Z a-z 0-9 - _ :`, README "Input"). The server quotes tokens back
/// ("Invalid token on 'to' field: …"); logs and the events' free-text fields never carry one whole.
public func shorteningTokens(in text: String) -> String {
    func isTokenCharacter(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar {
        case "A"..."Z", "a"..."z", "0"..."9", "-", "_", ":": true
        default: false
        }
    }
    let scalars = text.unicodeScalars
    var result = ""
    var run = ""
    var changed = false
    func flush() {
        if run.unicodeScalars.count >= 32 {
            result += shortenedToken(run)
            changed = true
        } else {
            result += run
        }
        run = ""
    }
    for scalar in scalars {
        if isTokenCharacter(scalar) {
            run.unicodeScalars.append(scalar)
        } else {
            flush()
            result.unicodeScalars.append(scalar)
        }
    }
    flush()
    return changed ? result : text
}
