// The libFuzzer entry point for every target in `FuzzTargets`, chosen by the CCSD_FUZZ_TARGET environment
// variable (`scripts/fuzz --list` names them). Built with `-DCCSD_FUZZ -sanitize=fuzzer,address
// -parse-as-library` by `scripts/fuzz`; the normal build gets a replayer instead:
// `ccsd-fuzz TARGET FILE…` runs files through a target without the fuzzer (a crash's reproducer, say).
import FuzzTargets

#if CCSD_FUZZ
#if canImport(Glibc)
import Glibc
#endif

/// The target this process fuzzes, read once from CCSD_FUZZ_TARGET.
let selectedTarget: FuzzTarget = {
    let names = FuzzTarget.allCases.map(\.rawValue).joined(separator: ", ")
    guard let name = getenv("CCSD_FUZZ_TARGET").map({ String(cString: $0) }), let target = FuzzTarget(rawValue: name) else {
        fatalError("set CCSD_FUZZ_TARGET to one of: \(names)")
    }
    return target
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = size > 0 && data != nil ? Array(UnsafeBufferPointer(start: data, count: size)) : []
    let violations = selectedTarget.run(input)
    if !violations.isEmpty {
        fatalError("\(selectedTarget.rawValue): \(violations.count) invariant(s) broken:\n" + violations.joined(separator: "\n"))
    }
    return 0
}

/// libFuzzer's driver (compiler-rt's FuzzerDriver.cpp): parses the flags, then runs the callback.
@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt) -> CInt

/// The process entry. SwiftPM links an executable with `main` aliased to `<module>_main` (so that tests can
/// link executables), which hides libFuzzer's own `main`: this one hands over to libFuzzer's driver.
@_cdecl("ccsd_fuzz_main")
public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    var argc = argc
    var argv = argv
    return LLVMFuzzerRunDriver(&argc, &argv) { data, size in fuzzerTestOneInput(data, size) }
}
#else
import Foundation

@main
struct FuzzReplay {
    static func main() {
        let arguments = CommandLine.arguments.dropFirst()
        guard let name = arguments.first, let target = FuzzTarget(rawValue: name), arguments.count > 1 else {
            let names = FuzzTarget.allCases.map(\.rawValue).joined(separator: ", ")
            FileHandle.standardError.write(Data("usage: ccsd-fuzz TARGET FILE…  (targets: \(names))\n".utf8))
            exit(2)
        }
        var broken = 0
        for path in arguments.dropFirst() {
            guard let data = FileManager.default.contents(atPath: path) else {
                FileHandle.standardError.write(Data("ccsd-fuzz: cannot read \(path)\n".utf8))
                exit(2)
            }
            let violations = target.run([UInt8](data))
            if !violations.isEmpty {
                broken += 1
                print("\(path): \(violations.joined(separator: "\n  "))")
            }
        }
        print("\(arguments.count - 1) input(s), \(broken) with broken invariants")
        exit(broken == 0 ? 0 : 1)
    }
}
#endif
