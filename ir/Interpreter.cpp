//===- Interpreter.cpp - The reference interpreter (placeholder) ----------===//

#include "ir/Interpreter.h"

using namespace loom;

Interpreter::Interpreter(mlir::ModuleOp module, InterpreterOptions options)
    : module(module), options(options) {}

llvm::Expected<std::vector<HostTensor>>
Interpreter::run(llvm::StringRef name, llvm::ArrayRef<HostTensor>) const {
  return llvm::createStringError("interpreter: not implemented");
}
