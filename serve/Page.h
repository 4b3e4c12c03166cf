//===- Page.h - The page `loom serve` shows at / ----------------*- C++ -*-===//
//
// One HTML page, its style and script inline (no external assets, so it
// works where the server has no network): a box to type or paste text, a
// button, and the translation, one line per line, through POST
// /v1/translate. With an API key, open it as /?api_key=KEY; the page sends
// the key on.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_SERVE_PAGE_H
#define LOOM_SERVE_PAGE_H

#include <string>

namespace loom::serve {

const std::string &pageHtml();

} // namespace loom::serve

#endif // LOOM_SERVE_PAGE_H
