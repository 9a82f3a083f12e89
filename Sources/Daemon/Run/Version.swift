/// ccsd's version: `ccsd --version`, the `.deb` package version and the `User-Agent` of its HTTP clients.
public enum CCSDVersion {
    /// Semantic version, `MAJOR.MINOR.PATCH`.
    public static let string = "0.9.0"
}
