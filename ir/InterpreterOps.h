//===- InterpreterOps.h - From ops to the interpreter's kernels -*- C++ -*-===//
//
// The interpreter's evaluation loop (Interpreter.cpp) hands each op to
// `evaluateOp`, which reads the op's attributes and calls the kernels of
// InterpreterKernels.h.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_IR_INTERPRETEROPS_H
#define LOOM_IR_INTERPRETEROPS_H

#include "ir/Interpreter.h"
#include "ir/InterpreterKernels.h"

#include "mlir/IR/Operation.h"

namespace loom::interp {

/// The function an elementwise unary op computes, or nothing for any
/// other op. Backends map ops to the interpreter's functions through these,
/// so that they name the operation the oracle computes.
std::optional<UnaryFn> unaryFnOf(mlir::Operation *op);
/// The same for elementwise binary ops.
std::optional<BinaryFn> binaryFnOf(mlir::Operation *op);

/// Runs another function of the module, for func.call.
class Callee {
public:
  virtual ~Callee() = default;
  virtual llvm::Expected<std::vector<HostTensor>>
  call(llvm::StringRef name, llvm::ArrayRef<const HostTensor *> args) = 0;
  /// Whether the interpreter evaluates in f64 (no rounding to element types).
  virtual bool f64() const = 0;
  /// loom.all_reduce: each operand summed over the ranks of the job. The
  /// interpreter is a job of one rank unless its user says otherwise.
  virtual llvm::Expected<std::vector<HostTensor>>
  allReduce(llvm::ArrayRef<const HostTensor *> operands) {
    std::vector<HostTensor> results;
    for (const HostTensor *t : operands)
      results.push_back(*t);
    return results;
  }
};

/// Evaluates `op` on `operands` (one per op operand, in order); returns one
/// tensor per result, unrounded. Errors name the op and its location.
llvm::Expected<std::vector<HostTensor>>
evaluateOp(mlir::Operation *op, llvm::ArrayRef<const HostTensor *> operands,
           Callee &callee);

/// Whether `t` fits `type`: same kind and rank, equal static dims. `what`
/// names the value in the message.
llvm::Error checkFits(const HostTensor &t, mlir::Type type,
                      const llvm::Twine &what);

/// Rounds every element of `t` to its element kind, as each op's result is
/// rounded outside f64 mode.
void roundInPlace(HostTensor &t);

/// `'loom.add' at loc("model.mlir":3:7)`.
std::string describeOp(mlir::Operation *op);

/// An error whose message is `describeOp(op): message`.
llvm::Error opError(mlir::Operation *op, const llvm::Twine &message);

} // namespace loom::interp

#endif // LOOM_IR_INTERPRETEROPS_H
