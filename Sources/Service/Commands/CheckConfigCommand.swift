import Foundation

/// `ccsd check-config`: not built yet.
enum CheckConfigCommand {
    static func main(_ arguments: [String]) -> Int32 {
        FileHandle.standardError.write(Data("ccsd: this command is not built yet\n".utf8))
        return 2
    }
}
