//===- Interpreter.h - The reference interpreter ----------------*- C++ -*-===//
//
// Evaluates any loom function naively, op by op. It is the oracle that tests
// hold compiled code against and the engine the finite-difference gradient
// checks run on, so it favours obvious correctness over speed: every value is
// held as a double (exact for every supported element type), and in the
// default mode each result is rounded to its element type (f32, bf16, f16)
// after every op, as a backend computing in that type would.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_IR_INTERPRETER_H
#define LOOM_IR_INTERPRETER_H

#include "abi/DType.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace loom {

/// The element type of an MLIR element type; fails on anything else.
llvm::Expected<DType> dtypeOfType(mlir::Type type);

/// A dense row-major tensor on the host.
struct HostTensor {
  std::vector<int64_t> shape;
  DType kind = DType::F32;
  std::vector<double> data;

  HostTensor() = default;
  HostTensor(std::vector<int64_t> shape, DType kind);
  HostTensor(std::vector<int64_t> shape, DType kind, std::vector<double> data);

  int64_t numel() const { return static_cast<int64_t>(data.size()); }
  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  /// A rank-0 tensor holding `value`.
  static HostTensor scalar(double value, DType kind = DType::F32);
};

/// Number of elements of `shape`.
int64_t shapeNumel(const std::vector<int64_t> &shape);

/// Rounds `value` to what an element of `kind` can hold (f32, bf16 and f16
/// round to nearest even; integers are taken as they are).
double roundToKind(double value, DType kind);

struct InterpreterOptions {
  /// Evaluate in double precision: no rounding to the element types. The
  /// finite-difference checks need this.
  bool f64 = false;
  /// For functions that `loom-plan-memory` planned: keep every planned result
  /// in one byte arena at its offset, in its element type, and read it back
  /// from there at each use, so a wrong plan changes the results. Not with
  /// `f64` (the arena holds the element types).
  bool useArenaPlan = false;
  /// How loom.all_reduce sums its operands across the ranks of a job, each
  /// rank an Interpreter; unset, the job is this one rank (each operand as
  /// it is).
  std::function<llvm::Expected<std::vector<HostTensor>>(
      llvm::ArrayRef<const HostTensor *>)>
      allReduce;
};

class Interpreter {
public:
  explicit Interpreter(mlir::ModuleOp module, InterpreterOptions options = {});

  /// Runs function `name` with `args`, one per function argument in order.
  /// Each argument's shape must fit the argument's type (dynamic dims take
  /// any size) and its kind must match. A failure names the op (with its
  /// location) and what was wrong: a shape mismatch found at run time, an id
  /// out of range, an op the interpreter does not know.
  llvm::Expected<std::vector<HostTensor>>
  run(llvm::StringRef name, llvm::ArrayRef<HostTensor> args) const;

private:
  mlir::ModuleOp module;
  InterpreterOptions options;
};

} // namespace loom

#endif // LOOM_IR_INTERPRETER_H
