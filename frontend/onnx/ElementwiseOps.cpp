//===- ElementwiseOps.cpp - ONNX elementwise ops as loom ops --------------===//
//
// Arithmetic, comparisons, Where, Cast and the unary functions. Each folds
// when its inputs are constants (the scalars of an exported attention's
// scale, the masks of shape arithmetic), and Mul, Div and Equal also work on
// sizes known only at run time, which torch.onnx's reshapes compute.
//
//===----------------------------------------------------------------------===//

#include "frontend/onnx/OnnxImport.h"
#include "frontend/onnx/OnnxImporter.h"

#include <cmath>

using namespace loom;
using namespace loom::onnx_import;
using llvm::Error;
using llvm::Expected;

namespace {

bool isInteger(DType kind) {
  return kind == DType::I32 || kind == DType::I64 || kind == DType::I1;
}

//===-- Binary arithmetic -------------------------------------------------===//

enum class Arith { Add, Sub, Mul, Div, Pow };

double applyArith(Arith op, double a, double b, bool integer) {
  switch (op) {
  case Arith::Add:
    return a + b;
  case Arith::Sub:
    return a - b;
  case Arith::Mul:
    return a * b;
  case Arith::Div:
    if (integer)
      return b == 0 ? 0 : std::trunc(a / b);
    return a / b;
  case Arith::Pow:
    return std::pow(a, b);
  }
  return 0;
}

/// Mul and Div of sizes by constants or by each other: the monomials of a
/// reshape's `batch * heads` and `dim / heads`.
std::optional<std::vector<SymbolicSize>>
foldSizes(Arith op, const std::vector<SymbolicSize> &a,
          const std::vector<SymbolicSize> &b) {
  if (op != Arith::Mul && op != Arith::Div)
    return std::nullopt;
  size_t n = std::max(a.size(), b.size());
  if ((a.size() != n && a.size() != 1) || (b.size() != n && b.size() != 1))
    return std::nullopt;
  std::vector<SymbolicSize> out;
  for (size_t i = 0; i < n; ++i) {
    const SymbolicSize &x = a[a.size() == 1 ? 0 : i];
    const SymbolicSize &y = b[b.size() == 1 ? 0 : i];
    SymbolicSize r = x;
    if (op == Arith::Mul) {
      r.factor *= y.factor;
      r.dims.append(y.dims.begin(), y.dims.end());
    } else {
      // Only a constant divisor that divides the factor, or a divisor whose
      // dims all appear in the dividend.
      if (y.factor == 0 || r.factor % y.factor != 0)
        return std::nullopt;
      r.factor /= y.factor;
      for (const auto &dim : y.dims) {
        auto it = llvm::find(r.dims, dim);
        if (it == r.dims.end())
          return std::nullopt;
        r.dims.erase(it);
      }
    }
    out.push_back(r);
  }
  return out;
}

template <Arith op> Error convertArith(NodeContext &ctx) {
  if (ctx.numInputs() != 2)
    return ctx.error("takes 2 inputs");
  const ImportedValue &a = ctx.input(0), &b = ctx.input(1);
  if (a.constant && b.constant) {
    DType kind = a.constant->kind;
    if (b.constant->kind != kind)
      return ctx.error("inputs of two element types");
    auto folded =
        foldBinary(*a.constant, *b.constant, kind, [&](double x, double y) {
          return applyArith(op, x, y, isInteger(kind));
        });
    if (!folded)
      return ctx.error("the shapes of its inputs do not broadcast");
    ctx.setOutput(0, constantValue(std::move(*folded)));
    return Error::success();
  }
  if (a.known() && b.known() && (a.sizes || b.sizes)) {
    Expected<std::vector<SymbolicSize>> x = ctx.sizes(0, "input 0");
    Expected<std::vector<SymbolicSize>> y = ctx.sizes(1, "input 1");
    if (!x || !y)
      return x ? y.takeError() : x.takeError();
    auto folded = foldSizes(op, *x, *y);
    if (!folded)
      return ctx.error("arithmetic on sizes known only at run time that "
                       "Loom does not fold (only products and exact "
                       "quotients of sizes)");
    bool scalar = (a.sizes ? a.sizesAreScalar : a.constant->rank() == 0) &&
                  (b.sizes ? b.sizesAreScalar : b.constant->rank() == 0);
    ctx.setOutput(0, sizesValue(std::move(*folded), scalar,
                                a.onnxType ? a.onnxType : b.onnxType));
    return Error::success();
  }
  Expected<Tensor> x = ctx.tensor(0);
  if (!x)
    return x.takeError();
  Expected<Tensor> y = ctx.tensor(1);
  if (!y)
    return y.takeError();
  Expected<Tensor> out = [&]() -> Expected<Tensor> {
    switch (op) {
    case Arith::Add:
      return ctx.create<AddOp>(x->value(), y->value());
    case Arith::Sub:
      return ctx.create<SubOp>(x->value(), y->value());
    case Arith::Mul:
      return ctx.create<MulOp>(x->value(), y->value());
    case Arith::Div:
      return ctx.create<DivOp>(x->value(), y->value());
    case Arith::Pow: {
      // The exponent may be of another type; the result is the base's.
      Tensor exponent = *y;
      if (y->elementType() != x->elementType())
        exponent =
            Tensor(ctx.builder()
                       .create<CastOp>(ctx.graph().location(),
                                       tensorOf(y->shape(), x->elementType()),
                                       y->value())
                       .getResult(),
                   &ctx.graph());
      return ctx.create<PowOp>(x->value(), exponent.value());
    }
    }
    return ctx.error("unknown arithmetic");
  }();
  if (!out)
    return out.takeError();
  ctx.setOutput(0, *out);
  return Error::success();
}

/// Max and Min of any number of inputs.
template <bool isMax> Error convertExtremum(NodeContext &ctx) {
  if (ctx.numInputs() < 1)
    return ctx.error("takes at least one input");
  Expected<Tensor> acc = ctx.tensor(0);
  for (int i = 1; acc && i < ctx.numInputs(); ++i) {
    Expected<Tensor> next = ctx.tensor(i);
    if (!next)
      return next.takeError();
    acc = isMax ? ctx.create<MaximumOp>(acc->value(), next->value())
                : ctx.create<MinimumOp>(acc->value(), next->value());
  }
  if (!acc)
    return acc.takeError();
  ctx.setOutput(0, *acc);
  return Error::success();
}

//===-- Unary functions ---------------------------------------------------===//

using HostFn = double (*)(double);

template <typename OpTy, HostFn fold> Error convertUnary(NodeContext &ctx) {
  if (ctx.numInputs() != 1)
    return ctx.error("takes 1 input");
  const ImportedValue &a = ctx.input(0);
  if (a.constant && !isInteger(a.constant->kind)) {
    HostTensor out = *a.constant;
    for (double &x : out.data)
      x = roundToKind(fold(x), out.kind);
    ctx.setOutput(0, constantValue(std::move(out)));
    return Error::success();
  }
  Expected<Tensor> x = ctx.tensor(0);
  if (!x)
    return x.takeError();
  Expected<Tensor> out = ctx.create<OpTy>(x->value());
  if (!out)
    return out.takeError();
  ctx.setOutput(0, *out);
  return Error::success();
}

double hostNeg(double x) { return -x; }
double hostAbs(double x) { return std::fabs(x); }
double hostExp(double x) { return std::exp(x); }
double hostLog(double x) { return std::log(x); }
double hostSqrt(double x) { return std::sqrt(x); }
double hostTanh(double x) { return std::tanh(x); }
double hostSigmoid(double x) { return 1 / (1 + std::exp(-x)); }
double hostRelu(double x) { return x > 0 ? x : 0; }
double hostErf(double x) { return std::erf(x); }
double hostSin(double x) { return std::sin(x); }
double hostCos(double x) { return std::cos(x); }
double hostGelu(double x) {
  return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
}

Error convertGelu(NodeContext &ctx) {
  std::string approximate = ctx.stringAttr("approximate", "none");
  if (approximate != "none")
    return ctx.unsupportedAttribute("approximate", "'" + approximate + "'");
  return convertUnary<GeluOp, hostGelu>(ctx);
}

Error convertReciprocal(NodeContext &ctx) {
  if (ctx.numInputs() != 1)
    return ctx.error("takes 1 input");
  const ImportedValue &a = ctx.input(0);
  if (a.constant && !isInteger(a.constant->kind)) {
    HostTensor out = *a.constant;
    for (double &x : out.data)
      x = roundToKind(1.0 / x, out.kind);
    ctx.setOutput(0, constantValue(std::move(out)));
    return Error::success();
  }
  Expected<Tensor> x = ctx.tensor(0);
  if (!x)
    return x.takeError();
  Expected<DType> kind = dtypeOfType(x->elementType());
  if (!kind)
    return ctx.error(llvm::toString(kind.takeError()));
  Expected<Tensor> one = ctx.constantTensor(HostTensor::scalar(1.0, *kind));
  if (!one)
    return one.takeError();
  Expected<Tensor> out = ctx.create<DivOp>(one->value(), x->value());
  if (!out)
    return out.takeError();
  ctx.setOutput(0, *out);
  return Error::success();
}

//===-- Comparisons, logic and selection ----------------------------------===//

template <ComparePredicate predicate> Error convertCompare(NodeContext &ctx) {
  if (ctx.numInputs() != 2)
    return ctx.error("takes 2 inputs");
  const ImportedValue &a = ctx.input(0), &b = ctx.input(1);
  auto hostCompare = [](double x, double y) {
    switch (predicate) {
    case ComparePredicate::eq:
      return x == y;
    case ComparePredicate::ne:
      return x != y;
    case ComparePredicate::lt:
      return x < y;
    case ComparePredicate::le:
      return x <= y;
    case ComparePredicate::gt:
      return x > y;
    case ComparePredicate::ge:
      return x >= y;
    }
    return false;
  };
  if (a.constant && b.constant) {
    auto folded = foldBinary(
        *a.constant, *b.constant, DType::I1,
        [&](double x, double y) -> double { return hostCompare(x, y); });
    if (!folded)
      return ctx.error("the shapes of its inputs do not broadcast");
    ctx.setOutput(0, constantValue(std::move(*folded)));
    return Error::success();
  }
  // Sizes against a negative constant: a size is never negative, so
  // torch.onnx's `Equal(shape, -1)` is false wherever the size is not known.
  if (predicate == ComparePredicate::eq && a.known() && b.known()) {
    Expected<std::vector<SymbolicSize>> x = ctx.sizes(0, "input 0");
    Expected<std::vector<SymbolicSize>> y = ctx.sizes(1, "input 1");
    if (!x || !y)
      return x ? y.takeError() : x.takeError();
    size_t n = std::max(x->size(), y->size());
    std::vector<double> out;
    for (size_t i = 0; i < n; ++i) {
      const SymbolicSize &p = (*x)[x->size() == 1 ? 0 : i];
      const SymbolicSize &q = (*y)[y->size() == 1 ? 0 : i];
      if (p.isConstant() && q.isConstant())
        out.push_back(p.factor == q.factor);
      else if (p == q)
        out.push_back(1);
      else if ((p.isConstant() && p.factor < 0) ||
               (q.isConstant() && q.factor < 0))
        out.push_back(0);
      else
        return ctx.error("compares sizes known only at run time");
    }
    bool scalar = a.sizes ? a.sizesAreScalar : b.sizesAreScalar;
    std::vector<int64_t> shape;
    if (!scalar)
      shape.push_back(int64_t(n));
    ctx.setOutput(0, constantValue(HostTensor(shape, DType::I1, out)));
    return Error::success();
  }
  Expected<Tensor> x = ctx.tensor(0);
  if (!x)
    return x.takeError();
  Expected<Tensor> y = ctx.tensor(1);
  if (!y)
    return y.takeError();
  Expected<Tensor> out =
      ctx.create<CompareOp>(predicate, x->value(), y->value());
  if (!out)
    return out.takeError();
  ctx.setOutput(0, *out);
  return Error::success();
}

Error convertNot(NodeContext &ctx) {
  const ImportedValue &a = ctx.input(0);
  if (a.constant) {
    HostTensor out = *a.constant;
    for (double &x : out.data)
      x = x == 0;
    ctx.setOutput(0, constantValue(std::move(out)));
    return Error::success();
  }
  Expected<Tensor> x = ctx.tensor(0);
  if (!x)
    return x.takeError();
  Expected<Tensor> f = ctx.constantTensor(HostTensor::scalar(0.0, DType::I1));
  if (!f)
    return f.takeError();
  Expected<Tensor> out =
      ctx.create<CompareOp>(ComparePredicate::eq, x->value(), f->value());
  if (!out)
    return out.takeError();
  ctx.setOutput(0, *out);
  return Error::success();
}

Error convertWhere(NodeContext &ctx) {
  if (ctx.numInputs() != 3)
    return ctx.error("takes 3 inputs");
  const ImportedValue &c = ctx.input(0), &a = ctx.input(1), &b = ctx.input(2);
  if (c.constant && a.constant && b.constant) {
    // Broadcast the three by folding twice: pick(c, a, b) = c ? a : b.
    auto ca = foldBinary(*c.constant, *a.constant, a.constant->kind,
                         [](double cond, double x) { return cond ? x : NAN; });
    if (!ca)
      return ctx.error("the shapes of its inputs do not broadcast");
    auto out =
        foldBinary(*ca, *b.constant, a.constant->kind,
                   [](double x, double y) { return std::isnan(x) ? y : x; });
    if (!out)
      return ctx.error("the shapes of its inputs do not broadcast");
    ctx.setOutput(0, constantValue(std::move(*out)));
    return Error::success();
  }
  if (c.constant && c.constant->rank() <= 1 && a.known() && b.known()) {
    Expected<std::vector<SymbolicSize>> x = ctx.sizes(1, "input 1");
    Expected<std::vector<SymbolicSize>> y = ctx.sizes(2, "input 2");
    if (!x || !y)
      return x ? y.takeError() : x.takeError();
    size_t n = std::max({x->size(), y->size(), size_t(c.constant->numel())});
    std::vector<SymbolicSize> out;
    for (size_t i = 0; i < n; ++i) {
      bool pick = c.constant->data[c.constant->numel() == 1 ? 0 : i] != 0;
      out.push_back(pick ? (*x)[x->size() == 1 ? 0 : i]
                         : (*y)[y->size() == 1 ? 0 : i]);
    }
    ctx.setOutput(0, sizesValue(std::move(out), false,
                                a.onnxType ? a.onnxType : b.onnxType));
    return Error::success();
  }
  Expected<Tensor> cond = ctx.tensor(0);
  if (!cond)
    return cond.takeError();
  Expected<Tensor> x = ctx.tensor(1);
  if (!x)
    return x.takeError();
  Expected<Tensor> y = ctx.tensor(2);
  if (!y)
    return y.takeError();
  Expected<Tensor> out =
      ctx.create<SelectOp>(cond->value(), x->value(), y->value());
  if (!out)
    return out.takeError();
  ctx.setOutput(0, *out);
  return Error::success();
}

//===-- Cast, Identity, Dropout, Constant ---------------------------------===//

/// Input 0 cast to ONNX element type `to`: folded for a constant, kept for
/// sizes cast between integer types, a loom.cast otherwise.
Error castInput(NodeContext &ctx, int32_t to) {
  Expected<DType> kind = dtypeOfOnnx(to);
  if (!kind)
    return ctx.error("casts to " + llvm::toString(kind.takeError()));
  const ImportedValue &a = ctx.input(0);
  if (a.constant) {
    HostTensor out = *a.constant;
    out.kind = *kind;
    for (double &x : out.data)
      x = *kind == DType::I1 ? double(x != 0)
          : isInteger(*kind) ? std::trunc(x)
                             : roundToKind(x, *kind);
    ctx.setOutput(0, constantValue(std::move(out)));
    return Error::success();
  }
  if (a.sizes && (*kind == DType::I64 || *kind == DType::I32)) {
    ImportedValue same = a;
    same.onnxType = to;
    ctx.setOutput(0, std::move(same));
    return Error::success();
  }
  Expected<Tensor> x = ctx.tensor(0);
  if (!x)
    return x.takeError();
  mlir::Type element = ctx.elementType(*kind);
  if (x->elementType() == element) {
    ctx.setOutput(0, *x);
    return Error::success();
  }
  ctx.setOutput(
      0, Tensor(ctx.builder()
                    .create<CastOp>(ctx.graph().location(),
                                    tensorOf(x->shape(), element), x->value())
                    .getResult(),
                &ctx.graph()));
  return Error::success();
}

Error convertCast(NodeContext &ctx) {
  return castInput(ctx, static_cast<int32_t>(ctx.intAttr("to", 0)));
}

/// CastLike: Cast to the element type of input 1.
Error convertCastLike(NodeContext &ctx) {
  int32_t to = ctx.input(1).onnxType;
  if (!to) {
    Expected<Tensor> like = ctx.tensor(1);
    if (!like)
      return like.takeError();
    Expected<DType> kind = dtypeOfType(like->elementType());
    if (!kind)
      return ctx.error(llvm::toString(kind.takeError()));
    to = onnxTypeOf(*kind);
  }
  return castInput(ctx, to);
}

Error convertIdentity(NodeContext &ctx) {
  ctx.setOutput(0, ctx.input(0));
  return Error::success();
}

/// Inference: the input passes through (ONNX's default, training_mode
/// false). A mask output, where asked for, is all true.
/// Dropout: the identity in inference; in training mode (a training
/// import), loom.dropout with the step's seed, which the backward pass
/// replays.
Error convertDropout(NodeContext &ctx) {
  bool training = false;
  if (ctx.opsetVersion() >= 12 && ctx.hasInput(2)) {
    const ImportedValue &mode = ctx.input(2);
    if (!mode.constant || mode.constant->numel() != 1)
      return ctx.error("a training_mode that is not a scalar known when "
                       "importing");
    training = mode.constant->data[0] != 0;
  }
  // In inference the ratio does not matter (it may even be data).
  double ratio = 0.5;
  if (!training) {
    ratio = 0;
  } else if (ctx.opsetVersion() >= 12 && ctx.hasInput(1)) {
    const ImportedValue &r = ctx.input(1);
    if (!r.constant || r.constant->numel() != 1)
      return ctx.error("a ratio that is not a scalar known when importing");
    ratio = r.constant->data[0];
  } else if (ctx.opsetVersion() < 12) {
    ratio = ctx.floatAttr("ratio", 0.5f);
  }
  if (training && !(ratio >= 0 && ratio < 1))
    return ctx.error("a ratio of " + std::to_string(ratio) +
                     " (it must be in [0, 1))");
  bool wantMask =
      ctx.proto().output_size() > 1 && !ctx.proto().output(1).empty();
  if (training && ratio > 0) {
    Expected<std::pair<Tensor, int64_t>> stream = ctx.dropoutStream();
    if (!stream)
      return stream.takeError();
    Expected<Tensor> x = ctx.tensor(0);
    if (!x)
      return x.takeError();
    auto drop = [&](Tensor t) {
      return ctx.create<DropoutOp>(t.value(), stream->first.value(),
                                   llvm::APFloat(ratio), stream->second);
    };
    Expected<Tensor> out = drop(*x);
    if (!out)
      return out.takeError();
    ctx.setOutput(0, *out);
    if (wantMask) {
      // The kept positions: the same stream dropping ones (PyTorch's export
      // names the mask whether or not anything reads it; unread, it goes).
      Expected<DType> kind = dtypeOfType(x->elementType());
      if (!kind)
        return ctx.error(llvm::toString(kind.takeError()));
      Expected<Tensor> one = ctx.constantTensor(HostTensor::scalar(1.0, *kind));
      Expected<Tensor> zero =
          ctx.constantTensor(HostTensor::scalar(0.0, *kind));
      if (!one || !zero)
        return one ? zero.takeError() : one.takeError();
      Expected<Tensor> ones = ctx.create<BroadcastAsOp>(one->value(), x->value());
      if (!ones)
        return ones.takeError();
      Expected<Tensor> dropped = drop(*ones);
      if (!dropped)
        return dropped.takeError();
      Expected<Tensor> kept = ctx.create<CompareOp>(
          ComparePredicate::ne, dropped->value(), zero->value());
      if (!kept)
        return kept.takeError();
      ctx.setOutput(1, *kept);
    }
    return Error::success();
  }
  ctx.setOutput(0, ctx.input(0));
  if (wantMask) {
    Expected<Tensor> x = ctx.tensor(0);
    if (!x)
      return x.takeError();
    Expected<Tensor> one =
        ctx.constantTensor(HostTensor::scalar(1.0, DType::I1));
    if (!one)
      return one.takeError();
    Expected<Tensor> mask = ctx.create<BroadcastAsOp>(one->value(), x->value());
    if (!mask)
      return mask.takeError();
    ctx.setOutput(1, *mask);
  }
  return Error::success();
}

Error convertConstant(NodeContext &ctx) {
  const onnx::NodeProto &node = ctx.proto();
  if (node.attribute_size() != 1)
    return ctx.error("takes exactly one value attribute");
  const onnx::AttributeProto &a = node.attribute(0);
  HostTensor out;
  if (a.name() == "value") {
    Expected<HostTensor> t = hostTensorOf(a.t());
    if (!t)
      return ctx.error("its value: " + llvm::toString(t.takeError()));
    out = std::move(*t);
  } else if (a.name() == "value_float") {
    out = HostTensor::scalar(a.f(), DType::F32);
  } else if (a.name() == "value_int") {
    out = HostTensor::scalar(double(a.i()), DType::I64);
  } else if (a.name() == "value_floats") {
    out = HostTensor({a.floats_size()}, DType::F32,
                     std::vector<double>(a.floats().begin(), a.floats().end()));
  } else if (a.name() == "value_ints") {
    std::vector<double> data;
    for (int64_t x : a.ints())
      data.push_back(double(x));
    out = HostTensor({a.ints_size()}, DType::I64, data);
  } else {
    return ctx.unsupportedAttribute(a.name(), "(a sparse or string value)");
  }
  ctx.setOutput(0, constantValue(std::move(out)));
  return Error::success();
}

} // namespace

void loom::onnx_import::addElementwiseConverters(
    llvm::StringMap<Converter> &c) {
  c["Add"] = convertArith<Arith::Add>;
  c["Sub"] = convertArith<Arith::Sub>;
  c["Mul"] = convertArith<Arith::Mul>;
  c["Div"] = convertArith<Arith::Div>;
  c["Pow"] = convertArith<Arith::Pow>;
  c["Max"] = convertExtremum<true>;
  c["Min"] = convertExtremum<false>;
  c["Neg"] = convertUnary<NegOp, hostNeg>;
  c["Abs"] = convertUnary<AbsOp, hostAbs>;
  c["Exp"] = convertUnary<ExpOp, hostExp>;
  c["Log"] = convertUnary<LogOp, hostLog>;
  c["Sqrt"] = convertUnary<SqrtOp, hostSqrt>;
  c["Tanh"] = convertUnary<TanhOp, hostTanh>;
  c["Sigmoid"] = convertUnary<SigmoidOp, hostSigmoid>;
  c["Relu"] = convertUnary<ReluOp, hostRelu>;
  c["Erf"] = convertUnary<ErfOp, hostErf>;
  c["Sin"] = convertUnary<SinOp, hostSin>;
  c["Cos"] = convertUnary<CosOp, hostCos>;
  c["Gelu"] = convertGelu;
  c["Reciprocal"] = convertReciprocal;
  c["Equal"] = convertCompare<ComparePredicate::eq>;
  c["Less"] = convertCompare<ComparePredicate::lt>;
  c["LessOrEqual"] = convertCompare<ComparePredicate::le>;
  c["Greater"] = convertCompare<ComparePredicate::gt>;
  c["GreaterOrEqual"] = convertCompare<ComparePredicate::ge>;
  c["Not"] = convertNot;
  c["Where"] = convertWhere;
  c["Cast"] = convertCast;
  c["CastLike"] = convertCastLike;
  c["Identity"] = convertIdentity;
  c["Dropout"] = convertDropout;
  c["Constant"] = convertConstant;
}
