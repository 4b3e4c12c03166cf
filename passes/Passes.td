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

def LoomDataParallel : Pass<"loom-data-parallel", "mlir::ModuleOp"> {
  let summary = "Average a gradient function's results across ranks";
  let description = [{
    Runs between loom-autodiff and loom-optimizer, on the gradient function
    (`@loss_grad`), so that the step built from it trains on every rank's
    share of a global batch as one process would on all of it. With c the
    rank's real target tokens (the op marked `loom.token_count`; 1 per rank
    without one) and C their sum over ranks:

      loss  -> all_reduce(loss * max(c, 1)) / max(C, 1)
      grad  -> all_reduce(grad * max(c, 1)) / max(C, 1)

    (the loss is a sum over the rank's tokens divided by max(c, 1)). The
    count and the scaled loss are summed by one all-reduce placed where the
    loss is known; the gradients by all-reduces of buckets of about
    `bucket-bytes` each, filled in the order the backward pass completes
    them and placed right after the last one's producer, so that a runtime
    can send a bucket while the backward pass computes the next.
  }];
  let options = [
    Option<"gradFunction", "grad-function", "std::string", "\"loss_grad\"",
           "The gradient function (loom-autodiff's)">,
    Option<"bucketBytes", "bucket-bytes", "int64_t", "25 << 20",
           "Bytes of gradients per all-reduce (a bucket closes at the "
           "first gradient that reaches it)">
  ];
  let dependentDialects = ["::loom::LoomDialect", "::mlir::func::FuncDialect"];
}

def LoomFuseAttention : Pass<"loom-fuse-attention", "mlir::func::FuncOp"> {
  let summary = "Rewrite scaled dot-product attention into loom.attention";
  let description = [{
    Runs before autodiff. Finds `softmax(q k^T * s + masks)` (optionally
    dropped out) multiplied by v, as the frontend writes it and as PyTorch's
    ONNX export writes it (explicit transpose of k, division by sqrt(d_k) or
    scaling of q, masks added one by one), and replaces it with one
    loom.attention. A causal_mask among the masks becomes the `causal` flag.
    With `remarks`, every softmax that is not fused gets a remark saying why.
  }];
  let options = [
    Option<"remarks", "remarks", "bool", "false",
           "Explain each candidate that is not fused">
  ];
  let dependentDialects = ["::loom::LoomDialect"];
}

def LoomAttentionKeyLayout
    : Pass<"loom-attention-key-layout", "mlir::func::FuncOp"> {
  let summary = "Let loom.attention read keys held position first";
  let description = [{
    Runs after autodiff. Where loom.attention's k and v are both a transpose
    of a [T, ..., D] tensor to [..., T, D] (a decoder cache that grows by
    appending a position), the attention reads the tensor itself with
    `keys_position_major` and the transposes go. Not with dropout. With
    `remarks`, each attention with a transposed k or v that is not rewritten
    gets a remark saying why.
  }];
  let options = [
    Option<"remarks", "remarks", "bool", "false",
           "Explain each candidate that is not rewritten">
  ];
  let dependentDialects = ["::loom::LoomDialect"];
}

def LoomCachePrecision : Pass<"loom-cache-precision", "mlir::ModuleOp"> {
  let summary = "Hold a decoder's attention caches in bf16";
  let description = [{
    Runs after loom-attention-key-layout, before elementwise fusion. @encode's
    cross-attention caches are returned in bf16; @decode_step and
    @decode_step_logits take every cache in bf16, cast each new position to
    bf16 before it is appended, and return the grown self-attention caches in
    bf16. Attention reads the bf16 keys and values with f32 queries and sums
    in f32. Every cache or none: it declines (with `remarks`, saying why) when
    a cache is read by anything but attention's k and v or the concat that
    appends to it, or is not f32.
  }];
  let options = [
    Option<"precision", "precision", "std::string", "\"bf16\"",
           "The caches' element type: bf16">,
    Option<"remarks", "remarks", "bool", "false",
           "Say why the caches stay f32 when they do">
  ];
  let dependentDialects = ["::loom::LoomDialect"];
}

def LoomMixedPrecision : Pass<"loom-mixed-precision", "mlir::func::FuncOp"> {
  let summary = "Products of bf16 operands with f32 sums in training steps";
  let description = [{
    Runs after loom-optimizer, on the entry points named by `entries`. Every
    f32 operand that an op lists as entering only products
    (ProductOpInterface: a GEMM's two factors) is rounded to bf16 by a
    loom.cast placed right after its definition, once per value (a view of a
    value views the value's cast), and the op keeps its f32 result: the
    products read bf16 and are summed in f32. Everything else (parameters,
    Adam's moments, norms, softmax, the loss, every sum) stays f32. See
    MixedPrecision.cpp for the decision per op.
  }];
  let options = [
    Option<"precision", "precision", "std::string", "\"bf16\"",
           "The operands' type: bf16">,
    ListOption<"entries", "entries", "std::string",
               "The functions to rewrite (default: loss, loss_grad, "
               "train_step)">
  ];
  let dependentDialects = ["::loom::LoomDialect"];
}

def LoomFuseLayerNorm : Pass<"loom-fuse-layer-norm", "mlir::func::FuncOp"> {
  let summary = "Recognize LayerNorm written out; fuse residual add + LayerNorm";
  let description = [{
    Runs before autodiff. `(x - mean(x)) / sqrt(var(x) + eps) * gamma + beta`
    written with reductions (mean, subtract, square, mean, add eps, rsqrt or
    sqrt+div, scale, shift) becomes loom.layer_norm; `layer_norm(a + b)`
    becomes loom.add_layer_norm, which also returns the sum.
  }];
  let options = [
    Option<"remarks", "remarks", "bool", "false",
           "Explain each candidate that is not fused">
  ];
  let dependentDialects = ["::loom::LoomDialect"];
}

def LoomSplitProjections
    : Pass<"loom-split-projections", "mlir::func::FuncOp"> {
  let summary = "A packed projection that is only sliced becomes one per slice";
  let description = [{
    Runs before the fusion passes. `x . W^T` (+ b), with W [N, K] and the
    product read only by slices of its last dim (PyTorch's packed q, k, v
    projection, as its exporter writes it), becomes one product per slice
    with the rows of W (and b) it keeps: the projections a model written
    with one linear per projection has, which loom-fuse-linear and
    loom-fuse-attention then see alike. With `remarks`, a packed product
    that is sliced and not split says why.
  }];
  let options = [
    Option<"remarks", "remarks", "bool", "false",
           "Explain each candidate that is not split">
  ];
  let dependentDialects = ["::loom::LoomDialect"];
}

def LoomFuseLinear : Pass<"loom-fuse-linear", "mlir::func::FuncOp"> {
  let summary = "GEMM + bias + activation + residual into loom.linear";
  let description = [{
    Runs before autodiff. `x . W^T` (loom.matmul with transpose_rhs and a
    rank-2 weight) followed by a bias add, relu/gelu, and a residual add
    becomes one loom.linear with that epilogue; the position-wise FFN becomes
    two of them.
  }];
  let options = [
    Option<"remarks", "remarks", "bool", "false",
           "Explain each candidate that is not fused">
  ];
  let dependentDialects = ["::loom::LoomDialect"];
}

def LoomFuseElementwise : Pass<"loom-fuse-elementwise", "mlir::func::FuncOp"> {
  let summary = "Group elementwise work into loom.fusion regions";
  let description = [{
    Runs after autodiff and the optimizer. Producer-consumer and sibling
    fusion of elementwise ops, broadcasts, constants and row reductions into
    loom.fusion regions, each a future kernel.
  }];
  let options = [
    Option<"remarks", "remarks", "bool", "false",
           "Explain each producer-consumer edge that is not fused">
  ];
  let dependentDialects = ["::loom::LoomDialect"];
}

def LoomPlanMemory : Pass<"loom-plan-memory", "mlir::ModuleOp"> {
  let summary = "Schedule, liveness and arena offsets for every function";
  let description = [{
    Gives every temporary of every function an offset in one arena per
    function (best fit, largest first, in place where an elementwise op
    allows), with dynamic dims planned at their upper bounds; parameters,
    gradients, optimizer state and decode caches are persistent buffers,
    updated in place. Records the arena size, the live lower bound, the
    naive size and the persistent bytes on each function.
  }];
  let options = [
    Option<"maxTokens", "max-tokens", "int64_t", "4096",
           "Upper bound of batch x length (tokens per batch)">,
    Option<"maxLen", "max-len", "int64_t", "256",
           "Upper bound of a sequence length">,
    Option<"maxBatch", "max-batch", "int64_t", "256",
           "Upper bound of the batch size">
  ];
  let dependentDialects = ["::loom::LoomDialect"];
}

#endif // LOOM_PASSES_TD
