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
