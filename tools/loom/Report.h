//===- Report.h - What `loom compile --report` writes -----------*- C++ -*-===//

#ifndef LOOM_TOOLS_LOOM_REPORT_H
#define LOOM_TOOLS_LOOM_REPORT_H

#include "mlir/IR/BuiltinOps.h"

#include <nlohmann/json.hpp>

namespace loom::cli {

/// For each function (entry point) of `compiled`: its op counts before
/// fusion (from `unfused`, the same model compiled without the fusion
/// passes) and after, the fused ops it holds, and the memory plan's figures.
nlohmann::json buildCompileReport(mlir::ModuleOp unfused,
                                  mlir::ModuleOp compiled);

} // namespace loom::cli

#endif // LOOM_TOOLS_LOOM_REPORT_H
