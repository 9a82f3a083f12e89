#include "ccsd_scan.h"

#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

// The rules byte by byte (what the sixteen-byte tests below compute for each byte at once).
__attribute__((unused)) static inline int json_string_byte(uint8_t b, int unused) {
    (void)unused;
    return b < 0x20 || b == '"' || b == '\\' || b == 0xEF;
}
__attribute__((unused)) static inline int json_plain_stop(uint8_t b, int unused) {
    (void)unused;
    return b < 0x20 || b == '"' || b == '\\' || b >= 0x80;
}
__attribute__((unused)) static inline int xml_byte(uint8_t b, int attribute) {
    if (b < 0x20) return attribute || (b != 0x09 && b != 0x0A);
    return b == '&' || b == '<' || b == '>' || b == 0xEF || (attribute && (b == '"' || b == '\''));
}

#if defined(__SSE2__)
/// Bytes of `v` below 0x20 (unsigned), as 0xFF bytes.
static inline __m128i below_0x20(__m128i v) {
    return _mm_cmpeq_epi8(_mm_min_epu8(v, _mm_set1_epi8(0x1F)), v);
}

static inline __m128i equal(__m128i v, char byte) { return _mm_cmpeq_epi8(v, _mm_set1_epi8(byte)); }

static inline unsigned json_string_mask(__m128i v, int unused) {
    (void)unused;
    __m128i hit = _mm_or_si128(_mm_or_si128(below_0x20(v), equal(v, '"')), _mm_or_si128(equal(v, '\\'), equal(v, (char)0xEF)));
    return (unsigned)_mm_movemask_epi8(hit);
}

static inline unsigned json_plain_mask(__m128i v, int unused) {
    (void)unused;
    __m128i hit = _mm_or_si128(_mm_or_si128(below_0x20(v), equal(v, '"')), equal(v, '\\'));
    return (unsigned)(_mm_movemask_epi8(hit) | _mm_movemask_epi8(v));  // the sign bit: 0x80 and above
}

static inline unsigned xml_mask(__m128i v, int attribute) {
    __m128i controls = below_0x20(v);
    if (!attribute) controls = _mm_andnot_si128(_mm_or_si128(equal(v, 0x09), equal(v, 0x0A)), controls);
    __m128i hit = _mm_or_si128(_mm_or_si128(controls, equal(v, '&')),
                               _mm_or_si128(_mm_or_si128(equal(v, '<'), equal(v, '>')), equal(v, (char)0xEF)));
    if (attribute) hit = _mm_or_si128(hit, _mm_or_si128(equal(v, '"'), equal(v, '\'')));
    return (unsigned)_mm_movemask_epi8(hit);
}

/// The first byte of `bytes[0..<count]` whose bit `mask` sets, sixteen bytes at a time. The last piece
/// shorter than sixteen is read as the sixteen bytes ending at `count` (bits of bytes already seen cleared),
/// or, for a text shorter than sixteen, from a copy padded with 'A' (which no scan stops at): no read past
/// the text.
static inline size_t scan(const uint8_t *bytes, size_t count, int attribute, unsigned (*mask)(__m128i, int)) {
    size_t i = 0;
    for (; i + 16 <= count; i += 16) {
        unsigned hits = mask(_mm_loadu_si128((const __m128i *)(bytes + i)), attribute);
        if (hits) return i + (size_t)__builtin_ctz(hits);
    }
    if (i == count) return count;
    if (count >= 16) {
        size_t start = count - 16;
        unsigned hits = mask(_mm_loadu_si128((const __m128i *)(bytes + start)), attribute) & (0xFFFFu << (i - start));
        return hits ? start + (size_t)__builtin_ctz(hits) : count;
    }
    uint8_t padded[16];
    memset(padded, 'A', sizeof padded);
    memcpy(padded, bytes, count);
    unsigned hits = mask(_mm_loadu_si128((const __m128i *)padded), attribute) & ((1u << count) - 1);
    return hits ? (size_t)__builtin_ctz(hits) : count;
}
#endif

/// The same scan one byte at a time (where there is no SSE2).
__attribute__((unused)) static inline size_t scan_bytes(const uint8_t *bytes, size_t count, int attribute, int (*qualifies)(uint8_t, int)) {
    for (size_t i = 0; i < count; i++) {
        if (qualifies(bytes[i], attribute)) return i;
    }
    return count;
}

size_t ccsd_scan_json_string(const uint8_t *bytes, size_t count) {
#if defined(__SSE2__)
    return scan(bytes, count, 0, json_string_mask);
#else
    return scan_bytes(bytes, count, 0, json_string_byte);
#endif
}

size_t ccsd_scan_json_plain(const uint8_t *bytes, size_t count) {
#if defined(__SSE2__)
    return scan(bytes, count, 0, json_plain_mask);
#else
    return scan_bytes(bytes, count, 0, json_plain_stop);
#endif
}

size_t ccsd_scan_xml(const uint8_t *bytes, size_t count, int attribute) {
#if defined(__SSE2__)
    return scan(bytes, count, attribute, xml_mask);
#else
    return scan_bytes(bytes, count, attribute, xml_byte);
#endif
}
