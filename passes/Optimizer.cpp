//===- Optimizer.cpp - Adam with warm-up as loom ops ----------------------===//
//
// Turns the gradient function that `loom-autodiff` made into a training step:
//
//   func @loss_grad(%w {loom.param = "w"}, %x {loom.input = "x"})
//       -> (loss, grad.w)
// becomes, beside it,
//   func @train_step(%w, %m {exp_avg.w}, %v {exp_avg_sq.w}, %step, %x)
//       -> (loss, param.w, exp_avg.w, exp_avg_sq.w)
//
// The body of @loss_grad is cloned, not called, so later passes see one flat
// function in which the update of every parameter is plain elementwise work
// that fuses like any other. The schedule is the paper's:
//   lr = lr_scale * d_model^-0.5 * min(step^-0.5, step * warmup^-1.5)
// and Adam follows torch.optim.Adam (bias-corrected moments, eps outside the
// square root). With clip-norm > 0 every gradient is first scaled by
// min(1, clip / (global_norm + 1e-6)).
//
// Operands are built one statement at a time so that the order of the IR does
// not depend on the order in which the compiler evaluates arguments.
//
//===----------------------------------------------------------------------===//

#include "abi/LearningRate.h"
#include "abi/ModelAbi.h"
#include "passes/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

#include <cmath>

namespace loom {
#define GEN_PASS_DEF_LOOMOPTIMIZER
#include "passes/Passes.h.inc"
} // namespace loom

using namespace mlir;
using namespace loom;

namespace {

struct Parameter {
  unsigned argIndex;
  StringAttr name;
  Value grad; // Inside the step function.
};

struct LoomOptimizerPass : loom::impl::LoomOptimizerBase<LoomOptimizerPass> {
  using LoomOptimizerBase::LoomOptimizerBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto gradFn = module.lookupSymbol<func::FuncOp>(gradFunction);
    if (!gradFn) {
      module.emitError("loom-optimizer: no function @")
          << gradFunction << " (run loom-autodiff first)";
      return signalPassFailure();
    }
    if (module.lookupSymbol(stepFunction)) {
      module.emitError("loom-optimizer: @")
          << stepFunction << " already exists";
      return signalPassFailure();
    }
    if (failed(buildStep(gradFn)))
      signalPassFailure();
  }

private:
  OpBuilder *b = nullptr;
  Location loc = UnknownLoc();
  Type element;

  Value constant(double v) {
    auto type = RankedTensorType::get({}, element);
    return b->create<ConstantOp>(
        loc, DenseElementsAttr::get(
                 type, ArrayRef<Attribute>{FloatAttr::get(element, v)}));
  }

  DictionaryAttr named(StringRef attr, const Twine &value) {
    MLIRContext *ctx = &getContext();
    return DictionaryAttr::get(ctx,
                               {NamedAttribute(StringAttr::get(ctx, attr),
                                               StringAttr::get(ctx, value))});
  }

  LogicalResult buildStep(func::FuncOp gradFn) {
    MLIRContext *ctx = &getContext();
    // Named so diagnostics and remarks about the update point at it.
    loc = NameLoc::get(StringAttr::get(ctx, "optimizer"), gradFn.getLoc());
    FunctionType gradType = gradFn.getFunctionType();

    // Map each result "loss" / "grad.<name>" to its result index.
    llvm::StringMap<unsigned> resultIndex;
    for (unsigned i = 0; i < gradType.getNumResults(); ++i)
      if (auto out = gradFn.getResultAttrOfType<StringAttr>(i, kOutputAttr))
        resultIndex[out.getValue()] = i;
    if (!resultIndex.count(abi::kLossOutput))
      return gradFn.emitError("loom-optimizer: @")
             << gradFn.getName() << " has no result named \"loss\"";

    // Parameters are the arguments with loom.param; each needs a gradient.
    SmallVector<Parameter> params;
    SmallVector<unsigned> others;
    for (unsigned i = 0; i < gradType.getNumInputs(); ++i) {
      auto name = gradFn.getArgAttrOfType<StringAttr>(i, kParamAttr);
      if (!name) {
        others.push_back(i);
        continue;
      }
      if (!resultIndex.count(abi::kGradPrefix + name.getValue().str()))
        return gradFn.emitError("loom-optimizer: parameter \"")
               << name.getValue() << "\" has no gradient result";
      params.push_back({i, name, Value()});
    }
    if (params.empty())
      return gradFn.emitError("loom-optimizer: @")
             << gradFn.getName() << " has no argument with " << kParamAttr;
    element = cast<ShapedType>(gradType.getInput(params[0].argIndex))
                  .getElementType();

    // Signature: params, exp_avg, exp_avg_sq, step, then the other inputs.
    SmallVector<Type> inputs;
    SmallVector<DictionaryAttr> argAttrs;
    for (const Parameter &p : params) {
      inputs.push_back(gradType.getInput(p.argIndex));
      argAttrs.push_back(gradFn.getArgAttrDict(p.argIndex));
    }
    for (StringRef moment : {abi::kFirstMomentPrefix, abi::kSecondMomentPrefix})
      for (const Parameter &p : params) {
        inputs.push_back(gradType.getInput(p.argIndex));
        argAttrs.push_back(named(kOptStateAttr, moment + p.name.getValue()));
      }
    inputs.push_back(RankedTensorType::get({}, IntegerType::get(ctx, 64)));
    argAttrs.push_back(named(kInputAttr, abi::kStep));
    for (unsigned i : others) {
      inputs.push_back(gradType.getInput(i));
      argAttrs.push_back(gradFn.getArgAttrDict(i));
    }

    OpBuilder builder(ctx);
    b = &builder;
    builder.setInsertionPointAfter(gradFn);
    auto stepFn = builder.create<func::FuncOp>(
        loc, stepFunction, builder.getFunctionType(inputs, {}));
    stepFn.setAllArgAttrs(argAttrs);
    Block *body = stepFn.addEntryBlock();
    builder.setInsertionPointToEnd(body);

    // Clone the gradient function's body.
    IRMapping map;
    unsigned n = params.size();
    for (unsigned k = 0; k < n; ++k)
      map.map(gradFn.getArgument(params[k].argIndex), body->getArgument(k));
    for (auto [k, i] : llvm::enumerate(others))
      map.map(gradFn.getArgument(i), body->getArgument(3 * n + 1 + k));
    Block &gradBody = gradFn.getBody().front();
    for (Operation &op : gradBody.without_terminator())
      builder.clone(op, map);
    Operation *ret = gradBody.getTerminator();
    auto returned = [&](StringRef name) {
      return map.lookupOrDefault(ret->getOperand(resultIndex[name]));
    };
    Value loss = returned(abi::kLossOutput);
    for (Parameter &p : params)
      p.grad = returned(abi::kGradPrefix + p.name.getValue().str());

    if (clipNorm > 0)
      clipGradients(params);

    Value step = builder.create<CastOp>(loc, RankedTensorType::get({}, element),
                                        body->getArgument(3 * n));
    Value stepSize, sqrtBc2;
    buildSchedule(step, stepSize, sqrtBc2);
    Value beta1C = constant(beta1), oneMinusBeta1 = constant(1.0 - beta1);
    Value beta2C = constant(beta2), oneMinusBeta2 = constant(1.0 - beta2);
    Value eps = constant(epsilon);

    SmallVector<Value> newParams, newM, newV;
    for (auto [k, p] : llvm::enumerate(params)) {
      Value w = body->getArgument(k), m = body->getArgument(n + k),
            v = body->getArgument(2 * n + k), g = p.grad;
      Value mDecayed = builder.create<MulOp>(loc, m, beta1C);
      Value gScaled = builder.create<MulOp>(loc, g, oneMinusBeta1);
      Value m2 = builder.create<AddOp>(loc, mDecayed, gScaled);
      Value vDecayed = builder.create<MulOp>(loc, v, beta2C);
      Value gSq = builder.create<MulOp>(loc, g, g);
      Value gSqScaled = builder.create<MulOp>(loc, gSq, oneMinusBeta2);
      Value v2 = builder.create<AddOp>(loc, vDecayed, gSqScaled);
      Value rms = builder.create<SqrtOp>(loc, v2);
      Value rmsCorrected = builder.create<DivOp>(loc, rms, sqrtBc2);
      Value denom = builder.create<AddOp>(loc, rmsCorrected, eps);
      Value ratio = builder.create<DivOp>(loc, m2, denom);
      Value update = builder.create<MulOp>(loc, ratio, stepSize);
      newParams.push_back(builder.create<SubOp>(loc, w, update));
      newM.push_back(m2);
      newV.push_back(v2);
    }

    SmallVector<Value> results = {loss};
    SmallVector<DictionaryAttr> resultAttrs = {
        named(kOutputAttr, abi::kLossOutput)};
    auto append = [&](ArrayRef<Value> values, StringRef prefix) {
      for (auto [k, v] : llvm::enumerate(values)) {
        results.push_back(v);
        resultAttrs.push_back(
            named(kOutputAttr, prefix + params[k].name.getValue()));
      }
    };
    append(newParams, abi::kUpdatedParamPrefix);
    append(newM, abi::kFirstMomentPrefix);
    append(newV, abi::kSecondMomentPrefix);
    builder.create<func::ReturnOp>(loc, results);
    stepFn.setType(
        builder.getFunctionType(inputs, ValueRange(results).getTypes()));
    stepFn.setAllResultAttrs(resultAttrs);
    return success();
  }

  /// stepSize = lr / (1 - beta1^t) and sqrtBc2 = sqrt(1 - beta2^t), with
  /// lr = lr_scale * d_model^-0.5 * min(t^-0.5, t * warmup^-1.5)
  /// (abi::LearningRateSchedule, which the trainer reports from).
  void buildSchedule(Value step, Value &stepSize, Value &sqrtBc2) {
    abi::LearningRateSchedule rate{dModel, warmup, lrScale};
    Value decay = b->create<RsqrtOp>(loc, step);
    Value warmupPow = constant(rate.rampSlope());
    Value ramp = b->create<MulOp>(loc, step, warmupPow);
    Value schedule = b->create<MinimumOp>(loc, decay, ramp);
    Value scale = constant(rate.scale());
    Value lr = b->create<MulOp>(loc, schedule, scale);
    auto oneMinusPow = [&](double beta) {
      Value logBeta = constant(std::log(beta));
      Value exponent = b->create<MulOp>(loc, step, logBeta);
      Value pow = b->create<ExpOp>(loc, exponent);
      Value one = constant(1.0);
      return b->create<SubOp>(loc, one, pow).getResult();
    };
    Value bc1 = oneMinusPow(beta1);
    stepSize = b->create<DivOp>(loc, lr, bc1);
    Value bc2 = oneMinusPow(beta2);
    sqrtBc2 = b->create<SqrtOp>(loc, bc2);
  }

  /// Scales every gradient by min(1, clip / (global norm + 1e-6)).
  void clipGradients(MutableArrayRef<Parameter> params) {
    Value sumSq;
    for (const Parameter &p : params) {
      auto type = cast<RankedTensorType>(p.grad.getType());
      SmallVector<int64_t> dims =
          llvm::to_vector(llvm::seq<int64_t>(0, type.getRank()));
      Value gSq = b->create<MulOp>(loc, p.grad, p.grad);
      Value sq = b->create<ReduceSumOp>(loc, gSq, b->getDenseI64ArrayAttr(dims),
                                        /*keep_dims=*/false);
      sumSq = sumSq ? b->create<AddOp>(loc, sumSq, sq).getResult() : sq;
    }
    Value norm = b->create<SqrtOp>(loc, sumSq);
    Value tiny = constant(1e-6);
    Value normEps = b->create<AddOp>(loc, norm, tiny);
    Value clip = constant(clipNorm);
    Value ratio = b->create<DivOp>(loc, clip, normEps);
    Value one = constant(1.0);
    Value scale = b->create<MinimumOp>(loc, one, ratio);
    for (Parameter &p : params)
      p.grad = b->create<MulOp>(loc, p.grad, scale);
  }
};

} // namespace
