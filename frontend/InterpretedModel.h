//===- InterpretedModel.h - A model module run by name ----------*- C++ -*-===//
//
// Runs the functions of a model module on the reference interpreter, binding
// arguments by their names rather than their positions: `loom.param` from the
// parameter store, `loom.opt_state` from the optimizer store, `loom.input`
// from what the caller passes. This is how the tools, the demo and the tests
// drive a model before compiled backends exist, and the contract they keep
// (names, not positions) is the one the runtime keeps later.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_FRONTEND_INTERPRETEDMODEL_H
#define LOOM_FRONTEND_INTERPRETEDMODEL_H

#include "ir/Interpreter.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace loom {

using NamedTensors = std::map<std::string, HostTensor>;

class InterpretedModel {
public:
  InterpretedModel(mlir::ModuleOp module, InterpreterOptions options = {});

  /// Parameters by name, as a checkpoint holds them.
  NamedTensors &parameters() { return params; }
  const NamedTensors &parameters() const { return params; }

  /// The shape of every parameter the module's functions take, by name.
  std::map<std::string, std::vector<int64_t>> parameterShapes() const;

  /// Initializes every parameter as torch.nn.Transformer does for weight
  /// matrices (Xavier uniform), embeddings from N(0, d^-1/2), LayerNorm
  /// weights 1, biases 0. Deterministic in `seed`.
  void initParameters(uint64_t seed);

  /// Runs function `name`; returns its results by `loom.output` name.
  /// `inputs` binds `loom.input` arguments and may also override optimizer
  /// state (`loom.opt_state`) by name.
  llvm::Expected<NamedTensors> call(llvm::StringRef name,
                                    const NamedTensors &inputs) const;

  /// One `@train_step` on a batch: updates the parameters and Adam's moments
  /// in place, advances the step count, and returns the loss.
  llvm::Expected<double> trainStep(const HostTensor &src, const HostTensor &tgt,
                                   int64_t seed);
  int64_t step() const { return steps; }

  /// Greedy decoding with `@encode` and `@decode_step` (the self-attention
  /// cache grows by one position per step): each output starts after `bos`
  /// and stops at `eos` (not included) or after `maxLen` tokens.
  llvm::Expected<std::vector<std::vector<int64_t>>>
  greedy(const HostTensor &src, int64_t maxLen, int64_t bos, int64_t eos) const;

private:
  // A handle; MLIR's accessors are not const.
  mutable mlir::ModuleOp module;
  Interpreter interpreter;
  NamedTensors params;
  NamedTensors optState;
  int64_t steps = 0;
};

/// Every parameter of `shapes`, drawn in name order from one generator.
NamedTensors
initialParameters(const std::map<std::string, std::vector<int64_t>> &shapes,
                  uint64_t seed);

/// A [rows, max length] i32 batch from token sequences, padded with 0.
HostTensor padBatch(const std::vector<std::vector<int64_t>> &rows);

} // namespace loom

#endif // LOOM_FRONTEND_INTERPRETEDMODEL_H
