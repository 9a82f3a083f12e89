// Instructions-per-parse bench of the JSON libraries (see run): parse each line N times, visit every value.
#include <simdjson.h>
#include <yajl/yajl_tree.h>
#include <jansson.h>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>
#include <fstream>
using namespace simdjson;
static volatile size_t sink;

static void walk_sj(ondemand::value v) {
  switch (v.type()) {
    case ondemand::json_type::object:
      for (auto field : v.get_object()) { std::string_view k = field.unescaped_key(); sink += k.size(); walk_sj(field.value()); }
      break;
    case ondemand::json_type::array:
      for (auto e : v.get_array()) walk_sj(e.value());
      break;
    case ondemand::json_type::string: { std::string_view s = v.get_string(); sink += s.size(); break; }
    case ondemand::json_type::number: { std::string_view r = v.raw_json_token(); sink += r.size(); break; }
    case ondemand::json_type::boolean: sink += bool(v.get_bool()); break;
    case ondemand::json_type::null: sink += v.is_null(); break;
  }
}
static void walk_yajl(yajl_val v) {
  if (YAJL_IS_OBJECT(v)) { for (size_t i = 0; i < v->u.object.len; i++) { sink += strlen(v->u.object.keys[i]); walk_yajl(v->u.object.values[i]); } }
  else if (YAJL_IS_ARRAY(v)) { for (size_t i = 0; i < v->u.array.len; i++) walk_yajl(v->u.array.values[i]); }
  else if (YAJL_IS_STRING(v)) sink += strlen(v->u.string);
  else if (YAJL_IS_NUMBER(v)) sink += strlen(v->u.number.r);
}
static void walk_jansson(json_t *v) {
  if (json_is_object(v)) { const char *k; json_t *x; json_object_foreach(v, k, x) { sink += strlen(k); walk_jansson(x); } }
  else if (json_is_array(v)) { size_t i; json_t *x; json_array_foreach(v, i, x) walk_jansson(x); }
  else if (json_is_string(v)) sink += json_string_length(v);
}
int main(int argc, char **argv) {
  std::string lib = argv[1]; std::ifstream in(argv[2]); long n = atol(argv[3]);
  std::vector<std::string> lines; std::string l; while (std::getline(in, l)) if (!l.empty()) lines.push_back(l);
  ondemand::parser parser;
  std::vector<padded_string> padded; for (auto &s : lines) padded.emplace_back(s);
  char err[256];
  for (long i = 0; i < n; i++) for (size_t j = 0; j < lines.size(); j++) {
    if (lib == "simdjson") {
      auto doc = parser.iterate(padded[j]); ondemand::value v; // whole document
      auto obj = doc.get_object();
      for (auto field : obj) { std::string_view k = field.unescaped_key(); sink += k.size(); walk_sj(field.value()); }
    } else if (lib == "simdjson-fields") {
      auto doc = parser.iterate(padded[j]); auto obj = doc.get_object();
      for (auto field : obj) {  // one pass, keep only the ack/nack fields
        std::string_view k = field.unescaped_key();
        if (k == "message_type" || k == "message_id" || k == "from" || k == "error" || k == "error_description" || k == "registration_id") {
          std::string_view s = field.value().get_string(); sink += s.size();
        } else if (k == "success" || k == "failure" || k == "failed_registration_ids") { walk_sj(field.value()); }
      }
    } else if (lib == "yajl") {
      yajl_val v = yajl_tree_parse(lines[j].c_str(), err, sizeof err); walk_yajl(v); yajl_tree_free(v);
    } else if (lib == "jansson") {
      json_error_t e; json_t *v = json_loadb(lines[j].data(), lines[j].size(), 0, &e); walk_jansson(v); json_decref(v);
    }
  }
  printf("%zu\n", (size_t)sink);
}
