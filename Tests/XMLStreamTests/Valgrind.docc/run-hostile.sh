#!/bin/sh
# Runs the hostile-input batch (HostileCases.swift) under valgrind's leak checker.
# (It lives in a .docc folder because SwiftPM warns about any other non-Swift file in a target.)
#
# Why not the test binary: with valgrind 3.19 (Debian 12) any Swift program with an async main, which
# the swift-testing runner is, crashes valgrind itself ("Valgrind received a signal 11") when the main
# thread parks in dispatch_main. So this compiles the same cases, with TestSupport.swift, into a small
# synchronous program linked against the XMLStream objects of an existing build, and runs that.
#
# Usage (from the package root, after `swift build --build-tests --scratch-path "$SCRATCH"`):
#   SCRATCH=/tmp/build-xml Tests/XMLStreamTests/Valgrind.docc/run-hostile.sh
# Exit status: valgrind's (1 on any memory error or definite/indirect leak), or 2 when a case ends in
# the wrong error.
set -eu
SCRATCH=${SCRATCH:-/tmp/build-xml}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/xmlstream-valgrind.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

cat > "$WORK/main.swift" <<'SWIFT'
import XMLStream

// Every hostile case, whole and (for the small ones) by byte and in 3-byte pieces, then a reset and a
// normal stream on the same parser; a fresh parser per case is dropped so deinit frees its context.
var wrong = 0
var runs = 0
let shared = XMLStreamParser()
for hostile in hostileCases {
    let sizes: [Int?] = hostile.bytes.count < 5000 ? [nil, 1, 3] : [nil]
    for size in sizes {
        for parser in [XMLStreamParser(), shared] {
            runs += 1
            let result = feed(hostile.bytes, chunkSize: size, to: parser)
            if result.error?.kind != hostile.kind || result.error?.streamErrorCondition != hostile.condition {
                wrong += 1
                print("WRONG \(hostile.name) chunk \(size.map(String.init) ?? "whole"): \(String(describing: result.error))")
            }
            parser.reset()
        }
    }
}
let ok = feed(Array((serverHeader + "<message><gcm xmlns='google:mobile:data'>{}</gcm></message></stream:stream>").utf8), to: shared)
if ok.error != nil || ok.events.count != 3 { wrong += 1; print("WRONG normal stream after the batch: \(ok)") }
print("hostile batch: \(runs) runs, \(wrong) wrong")
if wrong > 0 { exit(2) }
SWIFT
# exit() without Foundation:
printf '%s\n' '#if canImport(Glibc)' 'import Glibc' '#endif' | cat - "$WORK/main.swift" > "$WORK/main2.swift"
mv "$WORK/main2.swift" "$WORK/main.swift"

swiftc -g -Onone -module-name HostileHarness \
    -I "$SCRATCH/debug/Modules" \
    -Xcc -fmodule-map-file="$ROOT/Sources/CLibXML2/module.modulemap" \
    $(pkg-config --cflags libxml-2.0 | sed 's/-I/-Xcc -I/g') \
    "$WORK/main.swift" "$HERE/../HostileCases.swift" "$HERE/../TestSupport.swift" \
    "$SCRATCH"/debug/XMLStream.build/*.swift.o \
    $(pkg-config --libs libxml-2.0) -o "$WORK/hostile"

valgrind --leak-check=full --errors-for-leak-kinds=definite,indirect --error-exitcode=1 \
    --num-callers=40 "$WORK/hostile"
