// swift-tools-version:6.0
// ccsd: an XMPP client daemon for Firebase Cloud Messaging's connection server (CCS).
// Layers, bottom up: CLibXML2/COpenSSL/CSQLite (system libraries), CCurl/CMicroHTTPD/CSystemd (by dlopen, through CDynamicLibrary) → TLS, XMLStream
// → XMPP → CCS → Store, Daemon, HTTPServer → Service (the `ccsd` command).
import PackageDescription

// The modules `ccsd` links see only what each file imports (Swift's upcoming `MemberImportVisibility`): they
// use FoundationEssentials, not Foundation, and no Foundation member may reach them through another module's
// import (docs/performance.md, "Ninth round").
let explicitImports: [SwiftSetting] = [.enableUpcomingFeature("MemberImportVisibility")]

let package = Package(
    name: "ccsd",
    platforms: [.macOS(.v13)],
    products: [
        .executable(name: "ccsd", targets: ["ccsd"]),
        .executable(name: "ccs-emulator", targets: ["ccs-emulator"]),
        .executable(name: "ccsd-bench", targets: ["ccsd-bench"]),
        .library(name: "CCSEmulator", targets: ["CCSEmulator"]),
    ],
    targets: [
        // System libraries from Debian (no vendored code).
        .systemLibrary(
            name: "CLibXML2", pkgConfig: "libxml-2.0",
            providers: [.apt(["libxml2-dev"])]),
        .systemLibrary(
            name: "COpenSSL", pkgConfig: "openssl",
            providers: [.apt(["libssl-dev"])]),
        .systemLibrary(
            name: "CSQLite", pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]),
        // libcurl, libmicrohttpd and libsystemd are loaded with dlopen on first use (`ccsd run` maps none of
        // them: no webhook, no API, no systemd): C targets, not system libraries; their headers come from
        // libcurl4-openssl-dev, libmicrohttpd-dev and libsystemd-dev. dpkg-shlibdeps cannot see them, so
        // scripts/package-deb names their packages in Depends.
        .target(name: "CDynamicLibrary", linkerSettings: [.linkedLibrary("dl")]),
        .target(name: "CCurl", dependencies: ["CDynamicLibrary"]),
        .target(name: "CMicroHTTPD", dependencies: ["CDynamicLibrary"]),
        .target(name: "CSystemd", dependencies: ["CDynamicLibrary"]),

        // Layers.
        // epoll and eventfd for the event loop's own thread (Glibc's module maps neither).
        .target(name: "CEpoll"),
        // A min-heap of timers, for the dispatcher and the epoll event loop.
        .target(name: "TimerHeap", swiftSettings: explicitImports),
        .target(name: "TLS", dependencies: ["COpenSSL", "CEpoll", "TimerHeap"], swiftSettings: explicitImports),
        // Throwaway CAs and certificates for the emulator and the tests: development tooling, kept out of the
        // client's TLS module.
        .target(name: "Certificates", dependencies: ["TLS", "COpenSSL"]),
        // Byte scans (SSE2) for the escapes of the per-message path: XML text and attributes, JSON strings.
        .target(name: "CByteScan"),
        .target(name: "XMLStream", dependencies: ["CLibXML2", "CByteScan"], swiftSettings: explicitImports),
        .target(name: "XMPP", dependencies: ["TLS", "XMLStream"], swiftSettings: explicitImports),
        // JSON parsing through Debian's simdjson (C++, On-Demand API) behind a plain C header; Debian's jansson
        // says why a text simdjson refuses is not JSON.
        .target(name: "CJSONFrontDoor", linkerSettings: [.linkedLibrary("simdjson"), .linkedLibrary("jansson")]),
        .target(name: "CCS", dependencies: ["XMLStream", "CJSONFrontDoor", "TimerHeap"], swiftSettings: explicitImports),
        .target(name: "CCSEmulator", dependencies: ["TLS", "Certificates", "XMLStream", "CCS"]),
        .target(name: "Daemon", dependencies: ["TLS", "XMLStream", "XMPP", "CCS", "Store"], swiftSettings: explicitImports),
        // A VFS over SQLite's default one that writes a transaction's WAL frames in one write at its commit
        // frame instead of two writes per frame (the store's connection only).
        .target(name: "CSQLiteWALGather", linkerSettings: [.linkedLibrary("sqlite3")]),
        // The durable message store (SQLite through Debian's libsqlite3) and the in-memory one.
        .target(name: "Store", dependencies: ["CCS", "CSQLite", "CSQLiteWALGather"], swiftSettings: explicitImports),
        // An HTTP server on the event loop (Debian's libmicrohttpd): listeners, limits, routing hooks.
        .target(name: "HTTPServer", dependencies: ["TLS", "CMicroHTTPD"], swiftSettings: explicitImports),
        // The service: `ccsd serve` (the HTTP API, metrics, systemd integration, webhook) and the CLI that
        // talks to it (`ccsd send`, `events`, `status`, `check-config`).
        .target(name: "Service", dependencies: ["Daemon", "HTTPServer", "CSystemd", "CCurl", "CCS", "Store", "TLS"],
                swiftSettings: explicitImports),

        // Executables.
        // Linked by the toolchain's lld with packed relative relocations (DT_RELR, glibc 2.36): the shipped
        // binary's ~75,000 relative relocations take 14 KiB instead of 1.8 MiB, which the loader reads (and
        // keeps resident) at every start.
        // jemalloc's settings (`malloc_conf`) for the executables that link it.
        .target(name: "CAllocatorSettings"),
        .executableTarget(name: "ccsd", dependencies: ["Service", "TLS", "CAllocatorSettings"], swiftSettings: explicitImports,
                          linkerSettings: [.unsafeFlags(["-use-ld=lld", "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs"], .when(platforms: [.linux])),
                                           .linkedLibrary("jemalloc", .when(platforms: [.linux]))]),
        .executableTarget(name: "ccs-emulator", dependencies: ["CCSEmulator", "TLS", "CAllocatorSettings"],
                          linkerSettings: [.linkedLibrary("jemalloc", .when(platforms: [.linux]))]),
        // Runs the built `ccsd` and `ccs-emulator` as processes: build every product first (`swift build -c release`).
        .executableTarget(name: "ccsd-bench", dependencies: ["CCS", "TLS", "JSONReference"]),
        // Foundation's JSONSerialization as ccsd once parsed JSON: the reference tests and ccsd-bench compare
        // the JSON front door with. Not linked into ccsd.
        .target(name: "JSONReference", dependencies: ["CCS"]),

        // The downstream corpus (Tests/Corpus) for the unit and end-to-end tests.
        .target(name: "CorpusFixtures", dependencies: ["CCS"], path: "Tests/CorpusFixtures"),
        // Test support for the daemon's drivers (test targets only): a manual loop and clock, a mock XMPP
        // connection, an in-memory events outlet.
        .target(name: "TestSupport", dependencies: ["Daemon", "CCS", "XMPP", "XMLStream"], path: "Tests/TestSupport"),

        // The fuzz targets (input → calls → invariant checks), shared by the libFuzzer entry point and the
        // corpus replay in FuzzTests; `scripts/fuzz` builds `ccsd-fuzz` with the fuzzer in its own build path.
        .target(name: "FuzzTargets", dependencies: ["XMLStream", "XMPP", "CCS", "CCSEmulator"], path: "Tests/Fuzz/FuzzTargets"),
        .executableTarget(name: "ccsd-fuzz", dependencies: ["FuzzTargets"], path: "Tests/Fuzz/ccsd-fuzz"),

        // Unit tests: no sockets.
        .testTarget(name: "XMLStreamTests", dependencies: ["XMLStream"]),
        .testTarget(name: "XMPPTests", dependencies: ["XMPP", "XMLStream"]),
        .testTarget(name: "CCSTests", dependencies: ["CCS", "XMLStream", "CorpusFixtures", "JSONReference"]),
        .testTarget(name: "TLSTests", dependencies: ["TLS", "Certificates"]),
        .testTarget(name: "DaemonTests", dependencies: ["Daemon", "CCS", "TLS", "XMPP", "XMLStream", "TestSupport", "Store"]),
        .testTarget(name: "StoreTests", dependencies: ["Store", "CCS", "CSQLite", "CSQLiteWALGather"]),
        .testTarget(name: "HTTPServerTests", dependencies: ["HTTPServer", "TLS"]),
        .testTarget(name: "ServiceTests", dependencies: ["Service", "Daemon", "CCS", "Store", "TLS", "TestSupport"]),
        .testTarget(name: "FuzzTests", dependencies: ["FuzzTargets"]),
        // Integration tests: real TLS on loopback against the emulator and Prosody.
        .testTarget(name: "IntegrationTests",
                    dependencies: ["TLS", "XMLStream", "XMPP", "CCS", "CCSEmulator", "Daemon", "CorpusFixtures", "Store",
                                   "Service", "HTTPServer", "Certificates", "JSONReference"]),
    ],
    swiftLanguageModes: [.v6]
)
