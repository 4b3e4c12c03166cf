//===- Passes.td - Loom's passes ---------------------------*- tablegen -*-===//

#ifndef LOOM_PASSES_TD
#define LOOM_PASSES_TD

include "mlir/Pass/PassBase.td"

def LoomAutodiff : Pass<"loom-autodiff", "mlir::ModuleOp"> {
  let summary = "Reverse-mode differentiation of loss functions";
  let description = [{
    For every function marked `loom.differentiable` whose single result is a
    scalar float loss, adds `@<name>_grad` returning the loss followed by the
    gradient of the loss with respect to each floating-point argument, in
    argument order. A value used twice accumulates its gradients; integer
    arguments get none. Each result carries `loom.output`: "loss", then
    "grad.<param name>" (or "grad.<index>" for an argument without
    `loom.param`).
  }];
  let dependentDialects = ["::loom::LoomDialect", "::mlir::func::FuncDialect"];
}

def LoomOptimizer : Pass<"loom-optimizer", "mlir::ModuleOp"> {
  let summary = "Adam with the Transformer warm-up schedule, as loom ops";
  let description = [{
    For every `@<name>_grad` made by `loom-autodiff`, adds `@train_step`
    taking the parameters, Adam's first and second moments of each parameter
    (`loom.opt_state` = "exp_avg.<name>" / "exp_avg_sq.<name>"), the step
    number `step` (tensor<i64>, counted from 1) and the loss's other inputs;
    returning the loss, the updated parameters and the updated moments.
    lr = lr_scale * d_model^-0.5 * min(step^-0.5, step * warmup^-1.5).
  }];
  let options = [
    Option<"gradFunction", "grad-function", "std::string", "\"loss_grad\"",
           "The gradient function to build the step from">,
    Option<"stepFunction", "step-function", "std::string", "\"train_step\"",
           "Name of the function to create">,
    Option<"dModel", "d-model", "int64_t", "512", "d_model of the schedule">,
    Option<"warmup", "warmup", "int64_t", "4000", "Warm-up steps">,
    Option<"lrScale", "lr-scale", "double", "1.0", "Scale of the schedule">,
    Option<"beta1", "beta1", "double", "0.9", "Adam beta1">,
    Option<"beta2", "beta2", "double", "0.98", "Adam beta2">,
    Option<"epsilon", "epsilon", "double", "1e-9", "Adam epsilon">,
    Option<"clipNorm", "clip-norm", "double", "0.0",
           "Clip gradients to this global norm (0: off)">
  ];
  let dependentDialects = ["::loom::LoomDialect", "::mlir::func::FuncDialect"];
}

#endif // LOOM_PASSES_TD
