// The token walk over simdjson's On-Demand API behind include/ccsd_json.h.
#include "ccsd_json.h"

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
    case ondemand::json_type::string: {
        std::string_view text;
        if (auto error = value.get_string().get(text)) { return error; }
        push(p, CCSD_JSON_STRING, text);
        return SUCCESS;
    }
    case ondemand::json_type::number: {
        std::string_view text = value.raw_json_token();
        while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\n' || text.back() == '\r')) {
            text.remove_suffix(1);
        }
        push(p, CCSD_JSON_NUMBER, text);
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
    }
    return INCORRECT_TYPE;
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
        } else {
            return -1;
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
