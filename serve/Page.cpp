//===- Page.cpp - The page `loom serve` shows at / ------------------------===//

#include "serve/Page.h"

namespace loom::serve {

const std::string &pageHtml() {
  static const std::string page = R"HTML(<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Loom translator</title>
<style>
  body { font-family: system-ui, sans-serif; max-width: 60rem; margin: 2rem auto; padding: 0 1rem; color: #222; }
  h1 { font-size: 1.4rem; }
  .panes { display: flex; gap: 1rem; flex-wrap: wrap; }
  .pane { flex: 1 1 24rem; display: flex; flex-direction: column; }
  textarea, #target { font-size: 1rem; min-height: 10rem; padding: .6rem; border: 1px solid #999; border-radius: 4px; }
  #target { white-space: pre-wrap; background: #f6f6f6; }
  button { margin-top: .8rem; font-size: 1rem; padding: .4rem 1.2rem; }
  #status { margin-top: .6rem; color: #555; min-height: 1.2rem; }
  #status.error { color: #b00; }
</style>
</head>
<body>
<h1>Loom translator</h1>
<div class="panes">
  <div class="pane">
    <label for="source">Text, one sentence per line</label>
    <textarea id="source" autofocus></textarea>
    <button id="translate" type="button">Translate</button>
  </div>
  <div class="pane">
    <label for="target">Translation</label>
    <div id="target" aria-live="polite"></div>
  </div>
</div>
<div id="status"></div>
<script>
(function () {
  var key = new URLSearchParams(window.location.search).get("api_key");
  var button = document.getElementById("translate");
  var status = document.getElementById("status");
  var target = document.getElementById("target");
  function say(text, isError) {
    status.textContent = text;
    status.className = isError ? "error" : "";
  }
  button.addEventListener("click", function () {
    var lines = document.getElementById("source").value.split("\n");
    var headers = { "Content-Type": "application/json" };
    if (key) headers["X-API-Key"] = key;
    button.disabled = true;
    say("Translating...", false);
    var started = performance.now();
    fetch("v1/translate", { method: "POST", headers: headers,
                            body: JSON.stringify({ sentences: lines }) })
      .then(function (r) {
        return r.json().then(function (body) { return { ok: r.ok, body: body }; });
      })
      .then(function (answer) {
        if (!answer.ok) throw new Error(answer.body.error || "the server refused");
        target.textContent = answer.body.translations.map(function (t) {
          return t.hypotheses[0].text;
        }).join("\n");
        say("Translated " + lines.length + " line(s) in " +
            Math.round(performance.now() - started) + " ms", false);
      })
      .catch(function (e) { say(e.message, true); })
      .finally(function () { button.disabled = false; });
  });
})();
</script>
</body>
</html>
)HTML";
  return page;
}

} // namespace loom::serve
