/// Edit distance for "did you mean …?" suggestions on unknown field names.
public enum EditDistance {
    /// Optimal string alignment distance (Levenshtein plus adjacent transposition) between two
    /// strings, compared by Unicode scalars. Cost O(m·n); field names are short.
    public static func distance(_ a: String, _ b: String) -> Int {
        let s = Array(a.unicodeScalars), t = Array(b.unicodeScalars)
        if s.isEmpty { return t.count }
        if t.isEmpty { return s.count }
        var before = [Int](repeating: 0, count: t.count + 1)
        var previous = Array(0...t.count)
        var current = [Int](repeating: 0, count: t.count + 1)
        for i in 1...s.count {
            current[0] = i
            for j in 1...t.count {
                let cost = s[i - 1] == t[j - 1] ? 0 : 1
                var value = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
                if i > 1, j > 1, s[i - 1] == t[j - 2], s[i - 2] == t[j - 1] {
                    value = min(value, before[j - 2] + 1)
                }
                current[j] = value
            }
            swap(&before, &previous)
            swap(&previous, &current)
        }
        return previous[t.count]
    }

    /// The candidate closest to `name` when it is close enough to be a likely typo: at most 1 edit for
    /// names under 6 characters, at most 2 otherwise (case-insensitive). Ties go to the first candidate in
    /// the order given. Returns nil when nothing is close.
    public static func suggestion(for name: String, among candidates: some Sequence<String>) -> String? {
        let lowered = name.lowercased()
        let limit = lowered.count < 6 ? 1 : 2
        var best: (candidate: String, distance: Int)?
        for candidate in candidates {
            let d = distance(lowered, candidate.lowercased())
            if d <= limit, d < (best?.distance ?? Int.max) { best = (candidate, d) }
        }
        return best?.candidate
    }

    /// The rule text for an unknown field, with a suggestion when one is close.
    static func unknownFieldRule(_ name: String, among candidates: some Sequence<String>) -> String {
        if let suggestion = suggestion(for: name, among: candidates) {
            return "is not a known field (did you mean \(suggestion)?)"
        }
        return "is not a known field"
    }
}
