import Testing
@testable import Service
import Daemon

@Suite struct CommandLineTests {
    @Test func everyCommandIsListedInTheHelp() {
        for command in CCSDCommandLine.commands {
            #expect(CCSDCommandLine.usage.contains(command.name))
        }
    }

    @Test func unknownCommandIsAUsageError() {
        #expect(CCSDCommandLine.main(["frobnicate"]) == 2)
    }

    @Test func versionIsSemantic() {
        #expect(CCSDVersion.string.split(separator: ".").count == 3)
        #expect(CCSDCommandLine.main(["--version"]) == 0)
    }
}
