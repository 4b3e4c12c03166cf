//===- Onnx.cpp - `loom import` and `loom onnx-test` ----------------------===//
//
// `loom import model.onnx -o model.mlir` prints the imported function
// (frontend/onnx/OnnxImporter.h) as MLIR that loom-opt reads; `--weights
// W.safetensors` writes its parameters (the float initializers) by name, the
// file `loom train-steps` starts from.
//
// `loom onnx-test DIR` runs tests in ONNX's backend-test layout
// (driver/OnnxBackendTest.h), a folder or a folder of them, with rtol 1e-3
// and atol 1e-7 by default. A test whose model does not import is
// "unsupported" with the importer's reason; one that imports and then
// disagrees or fails to run "fails". One line per test, then a summary; the
// exit status is non-zero when any test fails (or, with --strict, is
// unsupported).
//
//===----------------------------------------------------------------------===//

#include "tools/loom/Commands.h"
#include "tools/loom/Common.h"
#include "tools/loom/Sessions.h"

#include "driver/OnnxBackendTest.h"
#include "frontend/onnx/OnnxImporter.h"
#include "ir/LoomDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Regex.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cstdio>
#include <memory>

namespace loom::cli {

namespace {

llvm::Error cliError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

std::unique_ptr<mlir::MLIRContext> onnxContext() {
  auto ctx = std::make_unique<mlir::MLIRContext>();
  ctx->loadDialect<LoomDialect, mlir::func::FuncDialect>();
  return ctx;
}

//===-- loom import -------------------------------------------------------===//

struct ImportOptions {
  std::string input;
  std::string output = "-";
  std::string function = "forward";
  std::string weights;
};

llvm::Error runImport(const ImportOptions &o) {
  if (llvm::Error e = checkInputFile(o.input, "the ONNX model"))
    return e;
  auto ctx = onnxContext();
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::ModuleOp::create(mlir::UnknownLoc::get(ctx.get()));
  OnnxImportOptions options;
  options.function = o.function;
  if (!o.weights.empty())
    if (llvm::Error err =
            checkOutputFile(o.weights, "--weights", {o.input, o.output}))
      return err;
  llvm::Expected<OnnxImport> imported =
      importOnnxFile(*module, o.input, options);
  if (!imported)
    return imported.takeError();
  if (!o.weights.empty()) {
    NamedTensors params;
    for (const auto &[name, value] : imported->parameters)
      params[name] = value;
    if (llvm::Error err = saveWeights(o.weights, params))
      return err;
  }
  std::error_code ec;
  llvm::ToolOutputFile out(o.output, ec, llvm::sys::fs::OF_Text);
  if (ec)
    return cliError("cannot write '" + o.output + "': " + ec.message());
  module->print(out.os());
  out.os() << "\n";
  out.keep();
  return llvm::Error::success();
}

//===-- loom onnx-test ----------------------------------------------------===//

struct OnnxTestOptions {
  std::string dir;
  std::string filter;
  double rtol = 1e-3, atol = 1e-7;
  bool strict = false;
  bool quiet = false;
  bool interpreterOnly = false;
};

llvm::Error runOnnxTests(const OnnxTestOptions &o, int &exitCode) {
  if (!llvm::sys::fs::is_directory(o.dir))
    return cliError("'" + o.dir + "' is not a directory");
  std::vector<std::string> tests = findOnnxTests(o.dir);
  std::optional<llvm::Regex> filter;
  if (!o.filter.empty()) {
    filter.emplace(o.filter);
    std::string why;
    if (!filter->isValid(why))
      return cliError("--filter: " + why);
  }
  if (tests.empty())
    return cliError("'" + o.dir +
                    "' holds no model.onnx, nor folders that "
                    "do");
  int counts[4] = {0, 0, 0, 0};
  for (const std::string &test : tests) {
    std::string name = llvm::sys::path::filename(test).str();
    if (filter && !filter->match(name))
      continue;
    OnnxTestResult r = runOnnxTest(test, o.rtol, o.atol, !o.interpreterOnly);
    ++counts[int(r.outcome)];
    const char *word = r.outcome == OnnxTestOutcome::Passed   ? "PASS"
                       : r.outcome == OnnxTestOutcome::Failed ? "FAIL"
                       : r.outcome == OnnxTestOutcome::InterpreterOnly
                           ? "PASS-INTERPRETER"
                           : "UNSUPPORTED";
    if (!o.quiet || r.outcome == OnnxTestOutcome::Failed)
      llvm::outs() << word << " " << name << (r.why.empty() ? "" : ": ")
                   << r.why << "\n";
  }
  int ran = counts[0] + counts[1] + counts[2] + counts[3];
  llvm::outs() << llvm::formatv("{0} tests: {1} passed, {2} failed, {3} "
                                "passed on the interpreter only, {4} "
                                "unsupported\n",
                                ran, counts[0], counts[1], counts[2],
                                counts[3]);
  if (ran == 0)
    return cliError("no test matches --filter '" + o.filter + "'");
  if (counts[1] > 0 || (o.strict && (counts[2] > 0 || counts[3] > 0)))
    exitCode = 1;
  return llvm::Error::success();
}

} // namespace

void addOnnxCommands(CLI::App &app, int &exitCode) {
  auto imp = std::make_shared<ImportOptions>();
  CLI::App *cmd = app.add_subcommand(
      "import", "Import an ONNX model as a loom function, printed as MLIR");
  cmd->add_option("model", imp->input, "The .onnx file")->required();
  cmd->add_option("-o,--output", imp->output, "Where to write (- : stdout)");
  cmd->add_option("--function", imp->function, "The function's name");
  cmd->add_option("--weights", imp->weights,
                  "Also write the parameters (the float initializers) as "
                  "safetensors, by name");
  cmd->callback([imp, &exitCode] {
    if (llvm::Error err = runImport(*imp))
      exitCode = fail("import", std::move(err));
  });

  auto test = std::make_shared<OnnxTestOptions>();
  CLI::App *t = app.add_subcommand(
      "onnx-test",
      "Run ONNX backend tests (model.onnx + test_data_set_*) on the "
      "reference interpreter and the CPU backend");
  t->add_option("dir", test->dir,
                "A test folder, or a folder of them (ONNX's data/node)")
      ->required();
  t->add_option("--filter", test->filter, "Only tests whose name matches");
  t->add_option("--rtol", test->rtol, "Relative tolerance");
  t->add_option("--atol", test->atol, "Absolute tolerance");
  t->add_flag("--strict", test->strict,
              "Tests not imported or not compiled for the CPU fail too");
  t->add_flag("--interpreter-only", test->interpreterOnly,
              "Run on the reference interpreter alone, not on the CPU "
              "backend");
  t->add_flag("--quiet", test->quiet, "Print only failures and the summary");
  t->callback([test, &exitCode] {
    if (llvm::Error err = runOnnxTests(*test, exitCode))
      exitCode = fail("onnx-test", std::move(err));
  });
}

} // namespace loom::cli
