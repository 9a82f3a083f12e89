// A plain C interface to Debian's simdjson (On-Demand API, C++), so that Swift sees only C.
#ifndef CCSD_JSON_H
#define CCSD_JSON_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// What one token of a parsed JSON text is.
enum ccsd_json_kind {
    CCSD_JSON_OBJECT = 1,  ///< `{`: `end` is the index just past its last token; members follow as key, value.
    CCSD_JSON_ARRAY = 2,   ///< `[`: `end` as for an object.
    CCSD_JSON_KEY = 3,     ///< an object key, unescaped (UTF-8, `text`/`length`).
    CCSD_JSON_STRING = 4,  ///< a string value, unescaped (UTF-8, `text`/`length`).
    CCSD_JSON_NUMBER = 5,  ///< a number as written (`text`/`length`, no surrounding whitespace; not yet checked).
    CCSD_JSON_TRUE = 6,
    CCSD_JSON_FALSE = 7,
    CCSD_JSON_NULL = 8,
};

/// One token in document order. `text` points into the parser's buffers: valid until the next parse or free.
typedef struct ccsd_json_token {
    const char *text;
    uint32_t length;
    uint32_t end;
    uint8_t kind;
} ccsd_json_token;

typedef struct ccsd_json_parser ccsd_json_parser;

/// A parser that refuses nesting deeper than `max_depth` (objects and arrays). NULL when out of memory.
ccsd_json_parser *ccsd_json_parser_new(size_t max_depth);
void ccsd_json_parser_free(ccsd_json_parser *parser);

/// Parses one JSON text into tokens (any top-level value; a top-level number is the whole text less its
/// whitespace, unchecked like any number token). Returns 0 and sets `tokens`/`count` on success; otherwise a
/// nonzero simdjson error code (-2 for content after the value, -3 out of memory): see ccsd_json_error_message.
int ccsd_json_parse(ccsd_json_parser *parser, const char *bytes, size_t length,
                    const ccsd_json_token **tokens, size_t *count);

/// simdjson's text for a nonzero code of ccsd_json_parse (static storage).
const char *ccsd_json_error_message(int code);

/// Why `bytes` is not JSON (RFC 8259), in the words of Debian's jansson: for texts simdjson refused, so that the
/// error names the rule and where the text breaks. Writes jansson's reason without the token it quotes (no
/// part of the text is repeated: it may hold a secret), NUL-terminated and cut to `reason_size`; the byte
/// offset of the offending token's start (for a text cut short, its length) to `offset`; and the offset at
/// which jansson stopped, just past that token, to `end`. A NUL byte outside a string, which jansson takes
/// for the end of the text, is the offending token. Returns 1 when the text ends before its value is
/// complete, 2 for a number beyond a 64-bit float, 3 for bytes that are not UTF-8 (at `end`), 0 for any
/// other error, and -1 when jansson reads the text after all.
int ccsd_json_explain(const char *bytes, size_t length, char *reason, size_t reason_size, size_t *offset, size_t *end);

#ifdef __cplusplus
}
#endif

#endif
