//===- LoomOps.td - The loom dialect's ops -----------------*- tablegen -*-===//
//
// Every op of the dialect. Result types of most ops are inferred (shape
// inference lives in the C++ `inferReturnTypes` of each op); the verifier that
// InferTypeOpInterface installs compares the written type with the inferred
// one, so a wrong shape is reported with what was expected.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_OPS_TD
#define LOOM_OPS_TD

include "ir/LoomDialect.td"
include "ir/LoomInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

// Each result element is a function of the operand elements at its own
// (broadcast) index. Fusion may put such an op in a loop nest with its
// neighbours, and the memory plan may write its result over an operand of
// the same shape. Ops carry it here instead of being listed in each pass.
def Loom_ElementwiseMap : NativeOpTrait<"ElementwiseMap"> {
  let cppNamespace = "::loom::OpTrait";
}

// The result is the first operand's bytes, reinterpreted in another shape
// (reshape, reshape_as, expand_dims): the memory plan places it on the
// operand's storage, a library call copies at most, and fusion passes one
// that only adds or drops unit dims through. Ops carry it here instead of
// being listed in each pass.
def Loom_ViewOfOperand : NativeOpTrait<"ViewOfOperand"> {
  let cppNamespace = "::loom::OpTrait";
}

// Each result element is one element of the first operand, moved without
// arithmetic (transpose, slice): an elementwise map of the operand, such as a
// cast, commutes with it, so loom-mixed-precision rounds the source once and
// moves the rounded copy (half the bytes). Ops carry it here instead of
// being listed in each pass.
def Loom_MovesElements : NativeOpTrait<"MovesElements"> {
  let cppNamespace = "::loom::OpTrait";
}

class Loom_Op<string mnemonic, list<Trait> traits = []>
    : Op<Loom_Dialect, mnemonic, traits>;

// An op whose result type is computed from its operands and attributes.
class Loom_InferredOp<string mnemonic, list<Trait> traits = []>
    : Loom_Op<mnemonic, traits # [Pure, InferTypeOpAdaptor]>;

// A differentiable op with an inferred result type.
class Loom_DiffOp<string mnemonic, list<Trait> traits = []>
    : Loom_InferredOp<mnemonic, traits #
        [DeclareOpInterfaceMethods<Loom_GradientOpInterface>]>;

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

class Loom_BinaryOp<string mnemonic, string what>
    : Loom_DiffOp<mnemonic, [Loom_ElementwiseMap]> {
  let summary = what # ", with NumPy broadcasting";
  let arguments = (ins Loom_AnyTensor:$lhs, Loom_AnyTensor:$rhs);
  let results = (outs Loom_AnyTensor:$result);
  let assemblyFormat =
      "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
}

def Loom_AddOp : Loom_BinaryOp<"add", "Elementwise sum">;
def Loom_SubOp : Loom_BinaryOp<"sub", "Elementwise difference">;
def Loom_MulOp : Loom_BinaryOp<"mul", "Elementwise product">;
def Loom_DivOp : Loom_BinaryOp<"div", "Elementwise quotient">;
def Loom_MaximumOp : Loom_BinaryOp<"maximum", "Elementwise maximum">;
def Loom_MinimumOp : Loom_BinaryOp<"minimum", "Elementwise minimum">;
def Loom_PowOp : Loom_BinaryOp<"pow", "Elementwise power lhs^rhs">;

class Loom_UnaryOp<string mnemonic, string what>
    : Loom_DiffOp<mnemonic, [Loom_ElementwiseMap]> {
  let summary = what;
  let arguments = (ins Loom_FloatTensor:$input);
  let results = (outs Loom_FloatTensor:$result);
  let assemblyFormat =
      "$input attr-dict `:` functional-type(operands, results)";
}

def Loom_NegOp : Loom_UnaryOp<"neg", "Negation">;
def Loom_AbsOp : Loom_UnaryOp<"abs", "Absolute value">;
def Loom_ExpOp : Loom_UnaryOp<"exp", "Exponential">;
def Loom_LogOp : Loom_UnaryOp<"log", "Natural logarithm">;
def Loom_SqrtOp : Loom_UnaryOp<"sqrt", "Square root">;
def Loom_RsqrtOp : Loom_UnaryOp<"rsqrt", "Reciprocal square root">;
def Loom_TanhOp : Loom_UnaryOp<"tanh", "Hyperbolic tangent">;
def Loom_SigmoidOp : Loom_UnaryOp<"sigmoid", "Logistic sigmoid">;
def Loom_ReluOp : Loom_UnaryOp<"relu", "Rectified linear unit max(x, 0)">;
def Loom_GeluOp : Loom_UnaryOp<"gelu", "GELU x*Phi(x), with the exact erf">;
def Loom_ErfOp : Loom_UnaryOp<"erf", "Error function">;
def Loom_SinOp : Loom_UnaryOp<"sin", "Sine">;
def Loom_CosOp : Loom_UnaryOp<"cos", "Cosine">;

def Loom_CompareOp : Loom_InferredOp<"compare", [Loom_ElementwiseMap]> {
  let summary = "Elementwise comparison to i1, with NumPy broadcasting";
  let arguments = (ins Loom_ComparePredicate:$predicate,
                       Loom_AnyTensor:$lhs, Loom_AnyTensor:$rhs);
  let results = (outs Loom_BoolTensor:$result);
  let assemblyFormat = "$predicate `,` $lhs `,` $rhs attr-dict `:` "
                       "functional-type(operands, results)";
}

def Loom_SelectOp : Loom_DiffOp<"select", [Loom_ElementwiseMap]> {
  let summary = "cond ? on_true : on_false, with NumPy broadcasting";
  let arguments = (ins Loom_BoolTensor:$cond, Loom_AnyTensor:$on_true,
                       Loom_AnyTensor:$on_false);
  let results = (outs Loom_AnyTensor:$result);
  let assemblyFormat = "$cond `,` $on_true `,` $on_false attr-dict `:` "
                       "functional-type(operands, results)";
}

def Loom_CastOp : Loom_Op<"cast", [Pure, Loom_ElementwiseMap,
    DeclareOpInterfaceMethods<Loom_GradientOpInterface>]> {
  let summary = "Element type conversion (same shape)";
  let description = [{
    Float to integer truncates toward zero; anything to i1 is `x != 0`.
  }];
  let arguments = (ins Loom_AnyTensor:$input);
  let results = (outs Loom_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `to` type($result)";
  let hasVerifier = 1;
}

def Loom_ConstantOp : Loom_Op<"constant", [Pure, ConstantLike,
    AllTypesMatch<["value", "result"]>]> {
  let summary = "A constant tensor";
  let arguments = (ins ElementsAttr:$value);
  let results = (outs Loom_AnyTensor:$result);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
}

def Loom_IotaOp : Loom_Op<"iota", [Pure]> {
  let summary = "The 1-D tensor [0, 1, ..., n-1] with n = like.shape[dim]";
  let description = [{
    Positions for sinusoidal encodings: the length comes from another tensor,
    so it follows a dynamic sequence length.
  }];
  let arguments = (ins Loom_AnyTensor:$like, I64Attr:$dim);
  let results = (outs Loom_AnyTensor:$result);
  let assemblyFormat =
      "$like attr-dict `:` type($like) `->` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Contractions and reductions
//===----------------------------------------------------------------------===//

def Loom_MatmulOp : Loom_Op<"matmul", [Pure,
    InferTypeOpAdaptorWithIsCompatible,
    DeclareOpInterfaceMethods<Loom_GradientOpInterface>,
    DeclareOpInterfaceMethods<Loom_ProductOpInterface>]> {
  let summary = "Batched matrix product with optional transposes";
  let description = [{
    `lhs` is [..., M, K] (or [..., K, M] with `transpose_lhs`), `rhs` is
    [..., K, N] (or [..., N, K] with `transpose_rhs`); the result is
    [..., M, N]. Leading batch dims broadcast as in NumPy, so both
    `x[B,S,D] . W^T` and per-head batch products are this one op.

    The result has the operands' element type, or f32 for bf16 or f16
    operands: the products of narrow operands summed in f32, as
    loom-mixed-precision builds them (such a product has no gradient rule;
    the pass runs after autodiff).
  }];
  let arguments = (ins Loom_FloatTensor:$lhs, Loom_FloatTensor:$rhs,
                       UnitAttr:$transpose_lhs, UnitAttr:$transpose_rhs);
  let results = (outs Loom_FloatTensor:$result);
  let assemblyFormat =
      "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
}

class Loom_ReduceOp<string mnemonic, string what> : Loom_DiffOp<mnemonic> {
  let summary = what # " over `dims`";
  let arguments = (ins Loom_FloatTensor:$input, DenseI64ArrayAttr:$dims,
                       UnitAttr:$keep_dims);
  let results = (outs Loom_FloatTensor:$result);
  let assemblyFormat = "$input $dims (`keep_dims` $keep_dims^)? attr-dict `:` "
                       "functional-type(operands, results)";
}

def Loom_ReduceSumOp : Loom_ReduceOp<"reduce_sum", "Sum">;
def Loom_ReduceMeanOp : Loom_ReduceOp<"reduce_mean", "Mean">;
def Loom_ReduceMaxOp : Loom_ReduceOp<"reduce_max", "Maximum">;

//===----------------------------------------------------------------------===//
// Neural-network ops
//===----------------------------------------------------------------------===//

def Loom_SoftmaxOp : Loom_DiffOp<"softmax"> {
  let summary = "Softmax along `axis`";
  let arguments = (ins Loom_FloatTensor:$input, I64Attr:$axis);
  let results = (outs Loom_FloatTensor:$result);
  let assemblyFormat =
      "$input attr-dict `:` functional-type(operands, results)";
}

def Loom_LogSoftmaxOp : Loom_DiffOp<"log_softmax"> {
  let summary = "Log-softmax along `axis`";
  let arguments = (ins Loom_FloatTensor:$input, I64Attr:$axis);
  let results = (outs Loom_FloatTensor:$result);
  let assemblyFormat =
      "$input attr-dict `:` functional-type(operands, results)";
}

def Loom_LayerNormOp : Loom_DiffOp<"layer_norm"> {
  let summary = "Layer normalization over the last dim";
  let description = [{
    `(x - mean) / sqrt(var + epsilon) * gamma + beta`, with the biased
    variance, as `torch.nn.LayerNorm` computes it.
  }];
  let arguments = (ins Loom_FloatTensor:$input, Loom_FloatTensor:$gamma,
                       Loom_FloatTensor:$beta, F64Attr:$epsilon);
  let results = (outs Loom_FloatTensor:$result);
  let assemblyFormat = "$input `,` $gamma `,` $beta attr-dict `:` "
                       "functional-type(operands, results)";
}

def Loom_DropoutOp : Loom_DiffOp<"dropout", [Loom_ElementwiseMap]> {
  let summary = "Inverted dropout with a counter-based random stream";
  let description = [{
    Element i is kept with probability 1 - rate and scaled by 1/(1 - rate).
    The keep decision is a pure function of (seed, offset, i), so the
    backward pass regenerates the forward's mask from the same op, and a
    step replays exactly. `offset` makes each dropout site's stream distinct.
  }];
  let arguments = (ins Loom_FloatTensor:$input, TensorOf<[I64]>:$seed,
                       F64Attr:$rate, I64Attr:$offset);
  let results = (outs Loom_FloatTensor:$result);
  let assemblyFormat =
      "$input `,` $seed attr-dict `:` functional-type(operands, results)";
}

def Loom_CausalMaskOp : Loom_Op<"causal_mask", [Pure]> {
  let summary = "Additive causal mask [n, n] with n = like.shape[dim]";
  let description = [{
    Entry (i, j) is 0 where j <= i and a large negative number (-1e9) where
    j > i. A finite value keeps a fully masked row free of NaNs.
  }];
  let arguments = (ins Loom_AnyTensor:$like, I64Attr:$dim);
  let results = (outs Loom_FloatTensor:$result);
  let assemblyFormat =
      "$like attr-dict `:` type($like) `->` type($result)";
  let hasVerifier = 1;
}

def Loom_PaddingMaskOp : Loom_Op<"padding_mask", [Pure]> {
  let summary = "Additive key-padding mask [B, 1, 1, S] from ids [B, S]";
  let description = [{
    0 where `ids != pad`, -1e9 where `ids == pad`; it broadcasts against
    attention scores [B, heads, queries, S].
  }];
  let arguments = (ins Loom_IndexTensor:$ids, I64Attr:$pad);
  let results = (outs Loom_FloatTensor:$result);
  let assemblyFormat = "$ids attr-dict `:` type($ids) `->` type($result)";
  let hasVerifier = 1;
}

def Loom_CrossEntropyOp : Loom_DiffOp<"cross_entropy"> {
  let summary = "Per-position cross entropy with label smoothing";
  let description = [{
    logits [..., C], targets [...] give losses [...]:
    `-(1 - eps) * logp[target] - eps / C * sum_c logp[c]` where
    `logp = log_softmax(logits)`, and 0 where `target == ignore_index`.
  }];
  let arguments = (ins Loom_FloatTensor:$logits, Loom_IndexTensor:$targets,
                       F64Attr:$label_smoothing, I64Attr:$ignore_index);
  let results = (outs Loom_FloatTensor:$result);
  let assemblyFormat = "$logits `,` $targets attr-dict `:` "
                       "functional-type(operands, results)";
}

def Loom_CrossEntropyGradOp : Loom_InferredOp<"cross_entropy_grad"> {
  let summary = "Gradient of cross_entropy with respect to its logits";
  let description = [{
    `(softmax(logits) - q) * grad[..., None]` with q the smoothed one-hot
    target, and 0 on ignored positions.
  }];
  let arguments = (ins Loom_FloatTensor:$logits, Loom_IndexTensor:$targets,
                       Loom_FloatTensor:$grad, F64Attr:$label_smoothing,
                       I64Attr:$ignore_index);
  let results = (outs Loom_FloatTensor:$result);
  let assemblyFormat = "$logits `,` $targets `,` $grad attr-dict `:` "
                       "functional-type(operands, results)";
}

//===----------------------------------------------------------------------===//
// Shape and data movement
//===----------------------------------------------------------------------===//

def Loom_ReshapeOp : Loom_DiffOp<"reshape", [Loom_ViewOfOperand]> {
  let summary = "Reshape; 0 copies the input dim at that index, -1 infers";
  let arguments = (ins Loom_AnyTensor:$input, DenseI64ArrayAttr:$shape);
  let results = (outs Loom_AnyTensor:$result);
  let assemblyFormat =
      "$input $shape attr-dict `:` functional-type(operands, results)";
}

def Loom_ReshapeAsOp : Loom_DiffOp<"reshape_as", [Loom_ViewOfOperand]> {
  let summary = "Reshape `input` to the shape of `like`";
  let arguments = (ins Loom_AnyTensor:$input, Loom_AnyTensor:$like);
  let results = (outs Loom_AnyTensor:$result);
  let assemblyFormat =
      "$input `,` $like attr-dict `:` functional-type(operands, results)";
}

def Loom_ExpandDimsOp : Loom_DiffOp<"expand_dims", [Loom_ViewOfOperand]> {
  let summary = "Insert size-1 dims at `dims` (indices in the result)";
  let arguments = (ins Loom_AnyTensor:$input, DenseI64ArrayAttr:$dims);
  let results = (outs Loom_AnyTensor:$result);
  let assemblyFormat =
      "$input $dims attr-dict `:` functional-type(operands, results)";
}

def Loom_TransposeOp : Loom_DiffOp<"transpose", [Loom_MovesElements]> {
  let summary = "Permute dims: result dim i is input dim perm[i]";
  let arguments = (ins Loom_AnyTensor:$input, DenseI64ArrayAttr:$perm);
  let results = (outs Loom_AnyTensor:$result);
  let assemblyFormat =
      "$input $perm attr-dict `:` functional-type(operands, results)";
}

def Loom_SliceOp : Loom_DiffOp<"slice", [Loom_MovesElements]> {
  let summary = "Elements [start, end) along `dim`";
  let description = [{
    A negative `start` counts from the end; an `end` of 0 or less counts from
    the end, so `end = 0` is the end itself: `x[:, 1:]` is start 1, end 0 and
    `x[:, :-1]` is start 0, end -1. Dynamic dims are checked at run time.
  }];
  let arguments = (ins Loom_AnyTensor:$input, I64Attr:$dim, I64Attr:$start,
                       I64Attr:$end);
  let results = (outs Loom_AnyTensor:$result);
  let assemblyFormat =
      "$input attr-dict `:` functional-type(operands, results)";
}

def Loom_SliceGradOp : Loom_DiffOp<"slice_grad"> {
  let summary = "Zeros shaped like `like` with `input` at [start, end) of `dim`";
  let description = [{
    The adjoint of `loom.slice` with the same attributes.
  }];
  let arguments = (ins Loom_FloatTensor:$input, Loom_AnyTensor:$like,
                       I64Attr:$dim, I64Attr:$start, I64Attr:$end);
  let results = (outs Loom_FloatTensor:$result);
  let assemblyFormat =
      "$input `,` $like attr-dict `:` functional-type(operands, results)";
}

def Loom_ConcatOp : Loom_DiffOp<"concat"> {
  let summary = "Concatenation along `dim`";
  let arguments = (ins Variadic<Loom_AnyTensor>:$inputs, I64Attr:$dim);
  let results = (outs Loom_AnyTensor:$result);
  let assemblyFormat =
      "$inputs attr-dict `:` functional-type(operands, results)";
}

def Loom_BroadcastAsOp : Loom_DiffOp<"broadcast_as"> {
  let summary = "Broadcast `input` (NumPy rules) to the shape of `like`";
  let arguments = (ins Loom_AnyTensor:$input, Loom_AnyTensor:$like);
  let results = (outs Loom_AnyTensor:$result);
  let assemblyFormat =
      "$input `,` $like attr-dict `:` functional-type(operands, results)";
}

def Loom_SumToOp : Loom_DiffOp<"sum_to"> {
  let summary = "Sum `input` down to the shape of `like` (undo a broadcast)";
  let arguments = (ins Loom_FloatTensor:$input, Loom_AnyTensor:$like);
  let results = (outs Loom_FloatTensor:$result);
  let assemblyFormat =
      "$input `,` $like attr-dict `:` functional-type(operands, results)";
}

def Loom_GatherOp : Loom_DiffOp<"gather"> {
  let summary = "Rows of `table` [N, ...] picked by `ids` (embedding lookup)";
  let arguments = (ins Loom_FloatTensor:$table, Loom_IndexTensor:$ids);
  let results = (outs Loom_FloatTensor:$result);
  let assemblyFormat =
      "$table `,` $ids attr-dict `:` functional-type(operands, results)";
}

def Loom_ScatterAddOp : Loom_DiffOp<"scatter_add"> {
  let summary = "Zeros shaped like `like`, rows `ids` accumulating `updates`";
  let description = [{
    The adjoint of `loom.gather`: a row picked k times receives k updates.
  }];
  let arguments = (ins Loom_FloatTensor:$updates, Loom_IndexTensor:$ids,
                       Loom_FloatTensor:$like);
  let results = (outs Loom_FloatTensor:$result);
  let assemblyFormat = "$updates `,` $ids `,` $like attr-dict `:` "
                       "functional-type(operands, results)";
}

def Loom_OneHotOp : Loom_Op<"one_hot", [Pure]> {
  let summary = "One-hot encoding: ids [...] to [..., depth]";
  let arguments = (ins Loom_IndexTensor:$ids, I64Attr:$depth);
  let results = (outs Loom_AnyTensor:$result);
  let assemblyFormat = "$ids attr-dict `:` type($ids) `->` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Fused ops: what the fusion passes introduce
//===----------------------------------------------------------------------===//

def Loom_AttentionOp : Loom_Op<"attention", [Pure, AttrSizedOperandSegments,
    DeclareOpInterfaceMethods<Loom_GradientOpInterface>]> {
  let summary = "Fused scaled dot-product attention";
  let description = [{
    q [..., Sq, D], k [..., Sk, D], v [..., Sk, Dv] (equal leading dims) give
    `out = dropout(softmax(q k^T * scale + mask [+ causal])) v` [..., Sq, Dv]
    and `lse` [..., Sq], the log-sum-exp of each row of the masked scores. The
    optional `mask` is additive and broadcasts to [..., Sq, Sk]; `causal`
    adds loom.causal_mask's values (key j > query i is masked). Dropout of
    the probabilities draws element [..., i, j] of the [..., Sq, Sk]
    probability tensor from (seed, dropout_offset) exactly as loom.dropout
    would, so the fused op computes what the unfused graph computed. The
    backward (`loom.attention_grad`) recomputes the probabilities from `lse`:
    nothing Sq x Sk is kept between forward and backward.

    With `keys_position_major`, k and v hold the keys position first,
    [Sk, ..., D] and [Sk, ..., Dv], as a decoder's self-attention cache that
    grows by appending a position does; the op computes what it computes on
    k and v transposed to [..., Sk, D]. It is for inference (no gradient).

    k and v may be bf16 or f16 (one type) with an f32 q: a decoder's caches
    held narrow to halve the bytes a step reads. Scores, softmax, the output
    and lse stay f32; that form too is for inference.
  }];
  let arguments = (ins Loom_FloatTensor:$q, Loom_FloatTensor:$k,
                       Loom_FloatTensor:$v,
                       Optional<Loom_FloatTensor>:$mask,
                       Optional<TensorOf<[I64]>>:$seed,
                       F64Attr:$scale, UnitAttr:$causal,
                       DefaultValuedAttr<F64Attr, "0.0">:$dropout_rate,
                       DefaultValuedAttr<I64Attr, "0">:$dropout_offset,
                       UnitAttr:$keys_position_major);
  let results = (outs Loom_FloatTensor:$out, Loom_FloatTensor:$lse);
  let assemblyFormat = [{
    $q `,` $k `,` $v (`mask` `(` $mask^ `:` type($mask) `)`)?
    (`seed` `(` $seed^ `:` type($seed) `)`)? attr-dict `:`
    type($q) `,` type($k) `,` type($v) `->` type($out) `,` type($lse)
  }];
  let hasVerifier = 1;
}

def Loom_AttentionGradOp : Loom_Op<"attention_grad", [Pure,
    AttrSizedOperandSegments]> {
  let summary = "Backward of loom.attention: dq, dk, dv";
  let description = [{
    Recomputes the probabilities of each row from q, k, the mask and `lse`
    (the forward's row statistics), regenerates the dropout mask from the
    seed, and returns the gradients of q, k and v for the output gradient
    `dout`. Same attributes as the forward. A row whose lse is 2^20 or more
    in magnitude (every key masked) has its lse recomputed from the scores:
    a float that large is too coarse to give the probabilities back.
  }];
  let arguments = (ins Loom_FloatTensor:$q, Loom_FloatTensor:$k,
                       Loom_FloatTensor:$v, Loom_FloatTensor:$out,
                       Loom_FloatTensor:$lse, Loom_FloatTensor:$dout,
                       Optional<Loom_FloatTensor>:$mask,
                       Optional<TensorOf<[I64]>>:$seed,
                       F64Attr:$scale, UnitAttr:$causal,
                       DefaultValuedAttr<F64Attr, "0.0">:$dropout_rate,
                       DefaultValuedAttr<I64Attr, "0">:$dropout_offset);
  let results = (outs Loom_FloatTensor:$dq, Loom_FloatTensor:$dk,
                      Loom_FloatTensor:$dv);
  let assemblyFormat = [{
    $q `,` $k `,` $v `,` $out `,` $lse `,` $dout
    (`mask` `(` $mask^ `:` type($mask) `)`)?
    (`seed` `(` $seed^ `:` type($seed) `)`)? attr-dict `:`
    type($q) `,` type($k) `,` type($v) `,` type($out) `,` type($lse) `,`
    type($dout) `->` type($dq) `,` type($dk) `,` type($dv)
  }];
  let hasVerifier = 1;
}

def Loom_LinearOp : Loom_Op<"linear", [Pure, AttrSizedOperandSegments,
    DeclareOpInterfaceMethods<Loom_GradientOpInterface>,
    DeclareOpInterfaceMethods<Loom_ProductOpInterface>]> {
  let summary = "GEMM with a fused epilogue: act(x W^T + bias) + residual";
  let description = [{
    x [..., K] and weight [N, K] (torch's layout) give [..., N]; the optional
    bias [N] and residual [..., N] and the activation are the epilogue of
    one GEMM, as cuBLASLt and oneDNN run it.

    x and the weight have one element type; the result, bias and residual
    have theirs, or f32 for bf16 or f16 x and weight (the products summed
    and the epilogue applied in f32, as loom-mixed-precision builds it; such
    a linear has no gradient rule).
  }];
  let arguments = (ins Loom_FloatTensor:$input, Loom_FloatTensor:$weight,
                       Optional<Loom_FloatTensor>:$bias,
                       Optional<Loom_FloatTensor>:$residual,
                       DefaultValuedAttr<Loom_Activation,
                                         "::loom::Activation::none">:$activation);
  let results = (outs Loom_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`bias` `(` $bias^ `:` type($bias) `)`)?
    (`residual` `(` $residual^ `:` type($residual) `)`)?
    (`activation` $activation^)? attr-dict `:`
    type($input) `,` type($weight) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Loom_AddLayerNormOp : Loom_Op<"add_layer_norm", [Pure,
    DeclareOpInterfaceMethods<Loom_GradientOpInterface>]> {
  let summary = "Residual add then layer normalization, in one pass";
  let description = [{
    Returns `sum = input + residual` and `layer_norm(sum)` (over the last
    dim, as loom.layer_norm). The sum is a result because the next residual
    connection of a pre-norm Transformer needs it.
  }];
  let arguments = (ins Loom_FloatTensor:$input, Loom_FloatTensor:$residual,
                       Loom_FloatTensor:$gamma, Loom_FloatTensor:$beta,
                       F64Attr:$epsilon);
  let results = (outs Loom_FloatTensor:$sum, Loom_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $residual `,` $gamma `,` $beta attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

def Loom_AllReduceOp : Loom_Op<"all_reduce",
    [DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "Sums tensors across the ranks of a data-parallel job";
  let description = [{
    Every rank of the job runs the same program on its own share of the
    batch; `loom.all_reduce` returns, for each operand, the elementwise sum
    of that operand over all ranks (on one rank, the operand itself). Every
    rank issues the same all-reduces in the same order. It is not Pure: it
    communicates, so it is neither erased, merged nor moved; a runtime may
    start it where it stands and wait for it where its results are first
    used, so that communication overlaps the work between.
  }];
  let arguments = (ins Variadic<Loom_FloatTensor>:$inputs);
  let results = (outs Variadic<Loom_FloatTensor>:$results);
  let assemblyFormat = "$inputs attr-dict `:` type($inputs)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Where a runtime that starts the all-reduce here waits for it: the
    /// first op of the block that reads a result (or the terminator). The
    /// operands are read, and the results written, until then.
    ::mlir::Operation *waitPoint();
  }];
}

def Loom_FusionOp : Loom_Op<"fusion", [IsolatedFromAbove,
    SingleBlockImplicitTerminator<"YieldOp">]> {
  let summary = "Elementwise and row-reduction ops that become one kernel";
  let description = [{
    The region's block takes one argument per input and yields the results.
    It holds elementwise ops, broadcasts, constants and reductions over the
    last dims; a backend generates one kernel for it.
  }];
  let arguments = (ins Variadic<Loom_AnyTensor>:$inputs);
  let results = (outs Variadic<Loom_AnyTensor>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    `(` $inputs `)` attr-dict `:` functional-type($inputs, results) $body
  }];
  let hasVerifier = 1;
}

def Loom_YieldOp : Loom_Op<"yield", [Pure, Terminator,
    HasParent<"FusionOp">]> {
  let summary = "The results of a loom.fusion region";
  let arguments = (ins Variadic<Loom_AnyTensor>:$values);
  let assemblyFormat = "($values^ `:` type($values))? attr-dict";
  let builders = [OpBuilder<(ins), [{ }]>];
}

#endif // LOOM_OPS_TD
