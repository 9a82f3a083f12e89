// Byte scans for the text escapes on the per-message path (XML character data and attribute values, JSON
// strings): each returns where the next byte its escape must look at is, sixteen bytes at a time (SSE2 on
// x86-64, one byte at a time elsewhere). They only find candidates; the escaping rule itself (what a byte
// becomes) stays in Swift, in one walk per escape.
#ifndef CCSD_SCAN_H
#define CCSD_SCAN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Offset of the first byte of `bytes[0..<count]` a JSON string escape looks at: below 0x20, '"', '\\', or
/// 0xEF (which leads U+FFFE and U+FFFF); `count` when there is none.
size_t ccsd_scan_json_string(const uint8_t *bytes, size_t count);

/// Offset of the first byte that is not plain JSON string text: below 0x20, '"', '\\', or 0x80 and above;
/// `count` when there is none.
size_t ccsd_scan_json_plain(const uint8_t *bytes, size_t count);

/// Offset of the first byte an XML escape looks at: in character data (`attribute` 0) a C0 control other
/// than tab and LF, '&', '<', '>' or 0xEF; in an attribute value (`attribute` nonzero) any C0 control, '"',
/// '&', '\'', '<', '>' or 0xEF; `count` when there is none.
size_t ccsd_scan_xml(const uint8_t *bytes, size_t count, int attribute);

#ifdef __cplusplus
}
#endif

#endif
