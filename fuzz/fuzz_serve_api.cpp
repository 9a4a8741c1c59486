// serve's request parsing (serve/api.h), what an HTTP body from anywhere reaches: POST
// /v1/translate's JSON, LibreTranslate's JSON, and LibreTranslate's form fields (the input read
// as NAME NUL VALUE NUL ... pairs, as the HTTP layer hands them over decoded). The contract here
// is ApiError (a 4xx answer with a message), never another exception; checks besides it: a parsed
// request holds 1 to max_sentences sentences of valid UTF-8 without line breaks and a beam within
// the limit.
// Seeds: fuzz/seeds/fuzz_serve_api (the requests of docs/SERVE.md and the serve tests).
#include "base/utf8.h"
#include "fuzz_common.h"
#include "serve/api.h"

using namespace dragoman;

namespace {

void check_text(const std::string& text, bool one_line) {
  if (utf8::find_invalid(text) != std::string_view::npos) fuzz::fail("invalid UTF-8 accepted");
  if (one_line && text.find('\n') != std::string::npos) fuzz::fail("a line break in a sentence");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::quiet();
  const std::string body(fuzz::as_text(data, size));
  serve::RequestLimits limits;
  limits.max_sentences = 16;
  limits.max_beam = 8;
  try {
    const serve::TranslateRequest r = serve::parse_translate_request(body, decode::SearchOptions{}, limits);
    if (r.texts.empty() || static_cast<std::int64_t>(r.texts.size()) > limits.max_sentences) fuzz::fail("sentences");
    if (r.search.beam < 1 || r.search.beam > limits.max_beam) fuzz::fail("beam");
    if (r.search.nbest < 1 || r.search.nbest > r.search.beam) fuzz::fail("n_best");
    for (const std::string& text : r.texts) check_text(text, true);
  } catch (const serve::ApiError&) {
  }
  try {
    const serve::LibreRequest r = serve::parse_libre_json(body, limits);
    for (const std::string& text : r.q) check_text(text, false);
  } catch (const serve::ApiError&) {
  }
  std::multimap<std::string, std::string> fields;
  const std::vector<std::string> parts = fuzz::split_parts(body, 16);
  for (std::size_t i = 0; i + 1 < parts.size(); i += 2) {
    if (!parts[i].empty()) fields.emplace(parts[i], parts[i + 1]);
  }
  try {
    const serve::LibreRequest r = serve::parse_libre_fields(fields, limits);
    for (const std::string& text : r.q) check_text(text, false);
  } catch (const serve::ApiError&) {
  }
  return 0;
}
