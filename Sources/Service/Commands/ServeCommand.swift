import Foundation

/// `ccsd serve`: not built yet.
enum ServeCommand {
    static func main(_ arguments: [String]) -> Int32 {
        FileHandle.standardError.write(Data("ccsd: this command is not built yet\n".utf8))
        return 2
    }
}
