//===- Autodiff.cpp - Reverse-mode differentiation of loss functions -----===//
//
// For a loss function marked `loom.differentiable`, builds `@<name>_grad`: a
// copy of the forward computation followed by its adjoint, returning the loss
// and the gradient of every floating-point argument that is not data (a
// `loom.input`).
//
//   func.func @loss(%x: tensor<4xf32>) -> tensor<f32>
//       attributes {loom.differentiable} {
//     %y = loom.mul %x, %x
//     %l = loom.reduce_sum %y [0]
//     return %l
//   }
//   ==>
//   func.func @loss_grad(%x) -> (tensor<f32> {loom.output = "loss"},
//                                tensor<4xf32> {loom.output = "grad.0"}) {
//     %y = loom.mul %x, %x               // the forward, cloned
//     %l = loom.reduce_sum %y [0]
//     %one = loom.constant dense<1.0>    // d(loss)/d(loss)
//     %gy = loom.broadcast_as %one, %y   // reduce_sum's rule
//     %a = loom.mul %gy, %x              // mul's rule, once per use of %x...
//     %b = loom.mul %gy, %x
//     %gx = loom.add %a, %b              // ...accumulated
//     return %l, %gx
//   }
//
// The walk is the textbook one over the single block: ops in reverse order,
// each op's gradient rule (GradientOpInterface) called with the gradients of
// its results. Only "active" values take part: those that depend on a float
// argument. An op is skipped when none of its results received a gradient or
// none of its operands is active, so integer index computations and constant
// subgraphs need no rules. Rules may build gradients nobody uses (for a
// constant operand); those ops are erased at the end.
//
//===----------------------------------------------------------------------===//

#include "abi/ModelAbi.h"
#include "ir/GradientUtils.h"
#include "passes/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseSet.h"

namespace loom {
#define GEN_PASS_DEF_LOOMAUTODIFF
#include "passes/Passes.h.inc"
} // namespace loom

using namespace mlir;
using namespace loom;

namespace {

/// Ops whose results depend only on the shapes of their operands, never on
/// their values: gradients stop at them without a rule.
bool isShapeOnly(Operation *op) {
  return isa<IotaOp, CausalMaskOp, PaddingMaskOp, OneHotOp, CompareOp>(op);
}

/// Checks that `fn` can be differentiated; reports why not.
LogicalResult checkLossFunction(func::FuncOp fn) {
  if (fn.isExternal())
    return fn.emitError("loss function has no body to differentiate");
  if (!fn.getBody().hasOneBlock())
    return fn.emitError("loss function must have a single block, it has ")
           << fn.getBody().getBlocks().size();
  FunctionType type = fn.getFunctionType();
  if (type.getNumResults() != 1)
    return fn.emitError("loss function must return a single scalar float "
                        "loss, it returns ")
           << type.getNumResults() << " values";
  auto loss = dyn_cast<RankedTensorType>(type.getResult(0));
  if (!loss || loss.getRank() != 0 || !isa<FloatType>(loss.getElementType()))
    return fn.emitError("loss function must return a scalar float tensor "
                        "(e.g. tensor<f32>), it returns ")
           << type.getResult(0);
  for (auto [i, t] : llvm::enumerate(type.getInputs()))
    if (!isa<RankedTensorType>(t))
      return fn.emitError("argument ")
             << i << " has type " << t
             << "; loom functions take ranked tensors";
  return success();
}

/// The reverse-mode sweep over one function body, in place.
class GradientBuilder {
public:
  explicit GradientBuilder(func::FuncOp fn) : fn(fn) {}

  /// Appends the adjoint before the return and makes the function return the
  /// loss and the argument gradients.
  LogicalResult run();

private:
  /// Adds `grad`, built by `op`'s rule, to the gradient accumulated for
  /// `value`.
  LogicalResult accumulate(OpBuilder &b, Operation *op, Value value,
                           Value grad);
  /// The gradient of `value`, or zeros if nothing reached it.
  Value gradientOrZeros(OpBuilder &b, Location loc, Value value);
  LogicalResult differentiateOp(OpBuilder &b, Operation *op);

  func::FuncOp fn;
  DenseSet<Value> active;
  DenseMap<Value, Value> grads;
};

LogicalResult GradientBuilder::accumulate(OpBuilder &b, Operation *op,
                                          Value value, Value grad) {
  // Gradients are summed with loom.add, which would broadcast a wrong shape
  // silently; a rule must hand back exactly the operand's type.
  if (grad.getType() != value.getType())
    return op->emitOpError("gradient rule produced ")
           << grad.getType() << " for an operand of type " << value.getType();
  auto [it, inserted] = grads.try_emplace(value, grad);
  if (!inserted)
    it->second = b.create<AddOp>(op->getLoc(), it->second, grad);
  return success();
}

Value GradientBuilder::gradientOrZeros(OpBuilder &b, Location loc,
                                       Value value) {
  if (Value g = grads.lookup(value))
    return g;
  return zerosLike(b, loc, value);
}

LogicalResult GradientBuilder::differentiateOp(OpBuilder &b, Operation *op) {
  if (llvm::none_of(op->getResults(),
                    [&](Value r) { return grads.contains(r); }))
    return success();
  if (llvm::none_of(op->getOperands(),
                    [&](Value v) { return active.contains(v); }))
    return success();
  auto rule = dyn_cast<GradientOpInterface>(op);
  if (!rule)
    return op->emitOpError("has no gradient rule, but the loss depends on it "
                           "through a floating-point operand");
  SmallVector<Value> resultGrads;
  for (Value r : op->getResults())
    resultGrads.push_back(gradientOrZeros(b, op->getLoc(), r));
  SmallVector<Value> operandGrads;
  if (failed(rule.buildGradients(b, resultGrads, operandGrads)))
    return failure();
  if (operandGrads.size() != op->getNumOperands())
    return op->emitOpError("gradient rule returned ")
           << operandGrads.size() << " gradients for " << op->getNumOperands()
           << " operands";
  for (auto [operand, grad] : llvm::zip(op->getOperands(), operandGrads))
    if (grad && active.contains(operand))
      if (failed(accumulate(b, op, operand, grad)))
        return failure();
  return success();
}

LogicalResult GradientBuilder::run() {
  Block &body = fn.getBody().front();
  auto ret = dyn_cast<func::ReturnOp>(body.getTerminator());
  if (!ret)
    return fn.emitError("loss function must end with func.return");

  // Forward sweep: which values depend on a float argument that is not
  // data.
  for (BlockArgument arg : body.getArguments())
    if (isFloatTensor(arg) && !fn.getArgAttr(arg.getArgNumber(), kInputAttr))
      active.insert(arg);
  SmallVector<Operation *> forward;
  for (Operation &op : body.without_terminator()) {
    forward.push_back(&op);
    if (isShapeOnly(&op) || llvm::none_of(op.getOperands(), [&](Value v) {
          return active.contains(v);
        }))
      continue;
    for (Value r : op.getResults())
      if (isFloatTensor(r))
        active.insert(r);
  }

  // Reverse sweep, building before the return.
  OpBuilder b(ret);
  Value loss = ret.getOperand(0);
  Location lossLoc = loss.getLoc();
  grads[loss] = scalarLike(b, lossLoc, loss, 1.0);
  for (Operation *op : llvm::reverse(forward))
    if (failed(differentiateOp(b, op)))
      return failure();

  // Results: the loss, then one gradient per float argument.
  MLIRContext *ctx = fn.getContext();
  SmallVector<Value> results = {loss};
  SmallVector<Attribute> resultAttrs = {DictionaryAttr::get(
      ctx, {NamedAttribute(StringAttr::get(ctx, kOutputAttr),
                           StringAttr::get(ctx, abi::kLossOutput))})};
  for (BlockArgument arg : body.getArguments()) {
    // Data (a `loom.input`, such as an imported model's float attention
    // mask) takes no gradient; parameters and unnamed arguments do.
    if (!isFloatTensor(arg) || fn.getArgAttr(arg.getArgNumber(), kInputAttr))
      continue;
    results.push_back(gradientOrZeros(b, fn.getLoc(), arg));
    std::string name = abi::kGradPrefix;
    if (auto param =
            fn.getArgAttrOfType<StringAttr>(arg.getArgNumber(), kParamAttr))
      name += param.getValue().str();
    else
      name += std::to_string(arg.getArgNumber());
    resultAttrs.push_back(DictionaryAttr::get(
        ctx, {NamedAttribute(StringAttr::get(ctx, kOutputAttr),
                             StringAttr::get(ctx, name))}));
  }
  b.create<func::ReturnOp>(ret.getLoc(), results);
  ret.erase();
  fn.setFunctionType(FunctionType::get(ctx, fn.getArgumentTypes(),
                                       ValueRange(results).getTypes()));
  fn.setAllResultAttrs(resultAttrs);

  // Erase gradient ops nobody uses (gradients of constant operands), users
  // first so chains go in one sweep. The forward part is left as written.
  Operation *lastForward = forward.empty() ? nullptr : forward.back();
  SmallVector<Operation *> added;
  for (Operation &op : body.without_terminator())
    added.push_back(&op);
  if (lastForward)
    added.erase(added.begin(), llvm::find(added, lastForward) + 1);
  for (Operation *op : llvm::reverse(added))
    if (isOpTriviallyDead(op))
      op->erase();
  return success();
}

struct LoomAutodiffPass : loom::impl::LoomAutodiffBase<LoomAutodiffPass> {
  using LoomAutodiffBase::LoomAutodiffBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    SmallVector<func::FuncOp> losses;
    for (auto fn : module.getOps<func::FuncOp>())
      if (fn->hasAttr(kDifferentiableAttr))
        losses.push_back(fn);
    // Every loss is tried, so one run reports all that cannot be
    // differentiated.
    bool ok = true;
    for (func::FuncOp fn : losses)
      ok &= succeeded(differentiate(symbols, fn));
    if (!ok)
      signalPassFailure();
  }

  LogicalResult differentiate(SymbolTable &symbols, func::FuncOp fn) {
    if (failed(checkLossFunction(fn)))
      return failure();
    std::string name = (fn.getSymName() + "_grad").str();
    if (symbols.lookup(name))
      return fn.emitError("cannot create @")
             << name << ": the module already has a symbol of that name";
    func::FuncOp grad = fn.clone();
    grad.setSymName(name);
    grad->removeAttr(kDifferentiableAttr);
    symbols.insert(grad, std::next(fn->getIterator()));
    if (failed(GradientBuilder(grad).run())) {
      symbols.erase(grad);
      return failure();
    }
    return success();
  }
};

} // namespace
