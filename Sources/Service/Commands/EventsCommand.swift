import Foundation

/// `ccsd events`: not built yet.
enum EventsCommand {
    static func main(_ arguments: [String]) -> Int32 {
        FileHandle.standardError.write(Data("ccsd: this command is not built yet\n".utf8))
        return 2
    }
}
