// The token walk over simdjson's On-Demand API behind include/ccsd_json.h.
#include "ccsd_json.h"

#include <jansson.h>
#include <simdjson.h>

#include <cstring>
#include <new>
#include <string_view>
#include <vector>

using namespace simdjson;

struct ccsd_json_parser {
    ondemand::parser parser;
    std::vector<char> padded;
    std::vector<ccsd_json_token> tokens;
    size_t max_depth;  // enforced by the walk (simdjson checks depth only in its development builds)
    explicit ccsd_json_parser(size_t max_depth) : max_depth(max_depth) {}
};

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

void push(ccsd_json_parser *p, uint8_t kind, std::string_view text) {
    p->tokens.push_back(ccsd_json_token{text.data(), static_cast<uint32_t>(text.size()), 0, kind});
}

error_code walk(ccsd_json_parser *p, ondemand::value value, size_t depth);

error_code walk_object(ccsd_json_parser *p, ondemand::object object, size_t depth) {
    if (depth > p->max_depth) { return DEPTH_ERROR; }
    size_t start = p->tokens.size();
    push(p, CCSD_JSON_OBJECT, std::string_view());
    for (auto field : object) {
        std::string_view key;
        if (auto error = field.unescaped_key().get(key)) { return error; }
        push(p, CCSD_JSON_KEY, key);
        ondemand::value member;
        if (auto error = field.value().get(member)) { return error; }
        if (auto error = walk(p, member, depth)) { return error; }
    }
    p->tokens[start].end = static_cast<uint32_t>(p->tokens.size());
    return SUCCESS;
}

error_code walk_array(ccsd_json_parser *p, ondemand::array array, size_t depth) {
    if (depth > p->max_depth) { return DEPTH_ERROR; }
    size_t start = p->tokens.size();
    push(p, CCSD_JSON_ARRAY, std::string_view());
    for (auto element : array) {
        ondemand::value item;
        if (auto error = element.get(item)) { return error; }
        if (auto error = walk(p, item, depth)) { return error; }
    }
    p->tokens[start].end = static_cast<uint32_t>(p->tokens.size());
    return SUCCESS;
}

// A string, true, false or null: of a value, or of a document whose top level it is (a top-level number is
// read by the caller, as simdjson does not move past a number it has not converted).
template <typename Value>
error_code walk_scalar(ccsd_json_parser *p, Value &value, ondemand::json_type type) {
    switch (type) {
    case ondemand::json_type::string: {
        std::string_view text;
        if (auto error = value.get_string().get(text)) { return error; }
        push(p, CCSD_JSON_STRING, text);
        return SUCCESS;
    }
    case ondemand::json_type::boolean: {
        bool flag;
        if (auto error = value.get_bool().get(flag)) { return error; }
        push(p, flag ? CCSD_JSON_TRUE : CCSD_JSON_FALSE, std::string_view());
        return SUCCESS;
    }
    case ondemand::json_type::null: {
        bool null;
        if (auto error = value.is_null().get(null)) { return error; }
        if (!null) { return N_ATOM_ERROR; }
        push(p, CCSD_JSON_NULL, std::string_view());
        return SUCCESS;
    }
    default:
        return INCORRECT_TYPE;
    }
}

error_code walk(ccsd_json_parser *p, ondemand::value value, size_t depth) {
    ondemand::json_type type;
    if (auto error = value.type().get(type)) { return error; }
    switch (type) {
    case ondemand::json_type::object: {
        ondemand::object object;
        if (auto error = value.get_object().get(object)) { return error; }
        return walk_object(p, object, depth + 1);
    }
    case ondemand::json_type::array: {
        ondemand::array array;
        if (auto error = value.get_array().get(array)) { return error; }
        return walk_array(p, array, depth + 1);
    }
    case ondemand::json_type::number: {
        std::string_view text = value.raw_json_token();
        while (!text.empty() && is_space(text.back())) { text.remove_suffix(1); }
        push(p, CCSD_JSON_NUMBER, text);
        return SUCCESS;
    }
    default:
        return walk_scalar(p, value, type);
    }
}

}  // namespace

extern "C" ccsd_json_parser *ccsd_json_parser_new(size_t max_depth) {
    return new (std::nothrow) ccsd_json_parser(max_depth);
}

extern "C" void ccsd_json_parser_free(ccsd_json_parser *parser) { delete parser; }

extern "C" int ccsd_json_parse(ccsd_json_parser *p, const char *bytes, size_t length,
                               const ccsd_json_token **tokens, size_t *count) {
    try {
        p->tokens.clear();
        p->padded.resize(length + SIMDJSON_PADDING);
        if (length > 0) { std::memcpy(p->padded.data(), bytes, length); }
        std::memset(p->padded.data() + length, 0, SIMDJSON_PADDING);
        ondemand::document document;
        if (auto error = p->parser.iterate(p->padded.data(), length, p->padded.size()).get(document)) {
            return static_cast<int>(error);
        }
        ondemand::json_type type;
        if (auto error = document.type().get(type)) { return static_cast<int>(error); }
        error_code error;
        if (type == ondemand::json_type::object) {
            ondemand::object object;
            error = document.get_object().get(object);
            if (!error) { error = walk_object(p, object, 1); }
        } else if (type == ondemand::json_type::array) {
            ondemand::array array;
            error = document.get_array().get(array);
            if (!error) { error = walk_array(p, array, 1); }
        } else if (type == ondemand::json_type::number) {
            // simdjson does not move past a number it has not converted: the whole text (less its
            // whitespace) is the token, and one that is not a single number fails the caller's syntax check.
            std::string_view text(p->padded.data(), length);
            while (!text.empty() && is_space(text.front())) { text.remove_prefix(1); }
            while (!text.empty() && is_space(text.back())) { text.remove_suffix(1); }
            push(p, CCSD_JSON_NUMBER, text);
            *tokens = p->tokens.data();
            *count = p->tokens.size();
            return 0;
        } else {
            error = walk_scalar(p, document, type);
        }
        if (error) { return static_cast<int>(error); }
        const char *location = nullptr;
        if (document.current_location().get(location) == SUCCESS) { return -2; }  // more after the value
        *tokens = p->tokens.data();
        *count = p->tokens.size();
        return 0;
    } catch (...) {  // std::bad_alloc from the token vector
        return -3;
    }
}

extern "C" const char *ccsd_json_error_message(int code) {
    if (code == -2) { return "more text after the JSON value"; }
    if (code == -3) { return "out of memory"; }
    return error_message(static_cast<error_code>(code));
}

namespace {

// A byte of a literal or number as jansson lexes one (`true`, `-1.5e+3`, and the garbage `truex`, `12xx`).
bool is_token_byte(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '+' || c == '-' || c == '.';
}

// The start of the token that ends just before `end`, when jansson did not quote it (it quotes at most 20
// bytes): a string back to its opening quote (the first `"` before it that no backslash escapes), a literal
// or number back over its bytes; any other byte (one jansson could not decode) is its own start.
size_t token_start(const char *bytes, size_t end) {
    if (end == 0) { return 0; }
    size_t index = end - 1;
    if (bytes[index] == '"') {
        while (index > 0) {
            index -= 1;
            if (bytes[index] != '"') { continue; }
            size_t backslashes = 0;
            while (backslashes < index && bytes[index - 1 - backslashes] == '\\') { backslashes += 1; }
            if (backslashes % 2 == 0) { return index; }
        }
        return 0;
    }
    if (!is_token_byte(bytes[index])) { return index; }
    while (index > 0 && is_token_byte(bytes[index - 1])) { index -= 1; }
    return index;
}

// Copies `text` into `reason` (NUL-terminated, cut to `reason_size`).
void copy_reason(char *reason, size_t reason_size, const char *text) {
    if (reason_size == 0) { return; }
    std::strncpy(reason, text, reason_size - 1);
    reason[reason_size - 1] = '\0';
}

}  // namespace

extern "C" int ccsd_json_explain(const char *bytes, size_t length, char *reason, size_t reason_size,
                                 size_t *offset, size_t *end) {
    json_error_t error;
    // Integers as reals: jansson refuses an integer beyond 64 bits, which ccsd reads (as its text).
    json_t *value = json_loadb(bytes, length, JSON_DECODE_ANY | JSON_ALLOW_NUL | JSON_DECODE_INT_AS_REAL, &error);
    if (value != nullptr) {
        json_decref(value);
        // jansson's lexer takes a NUL byte outside a string for the end of the text, and reads what comes
        // before it: that NUL is what simdjson refused.
        if (const void *nul = std::memchr(bytes, 0, length)) {
            copy_reason(reason, reason_size, "a NUL byte outside a string");
            *offset = static_cast<size_t>(static_cast<const char *>(nul) - bytes);
            *end = *offset + 1;
            return 0;
        }
        return -1;
    }
    size_t position = error.position < 0 ? 0 : static_cast<size_t>(error.position);
    *end = position;
    // A NUL byte outside a string: the offset is the NUL's.
    bool at_nul = position > 0 && position <= length && bytes[position - 1] == '\0';
    bool ends_early = json_error_code(&error) == json_error_premature_end_of_input && position >= length && !at_nul;
    // jansson ends its reason with " near '<the token as read>'" (or " near end of file"), or, for a token
    // longer than 20 bytes, with nothing: the token is cut off, so that no part of the text (a key, a token)
    // is quoted, and the offset moved to its start.
    char *near = std::strstr(error.text, " near ");
    if (near != nullptr) {
        const char *token = near + 6;
        size_t token_length = std::strlen(token);
        if (token_length >= 2 && token[0] == '\'' && token[token_length - 1] == '\'' && token_length - 2 <= position) {
            position -= token_length - 2;
        } else if (at_nul) {
            position -= 1;
        }
        *near = '\0';
    } else if (position <= length) {
        position = token_start(bytes, position);
    }
    copy_reason(reason, reason_size, error.text);
    *offset = position;
    switch (json_error_code(&error)) {
    case json_error_premature_end_of_input: return ends_early ? 1 : 0;
    case json_error_numeric_overflow: return 2;
    case json_error_invalid_utf8: return 3;
    default: return 0;
    }
}
