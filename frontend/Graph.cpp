//===- Graph.cpp - The C++ builder API for loom functions -----------------===//

#include "frontend/Graph.h"

#include "ir/ArenaPlan.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/ErrorHandling.h"

using namespace mlir;

namespace loom {

RankedTensorType Tensor::type() const {
  return cast<RankedTensorType>(v.getType());
}

int64_t Tensor::dim(int64_t i) const {
  auto axis = normalizeAxis(i, rank());
  if (!axis)
    llvm::report_fatal_error("Tensor::dim: dim out of range");
  return type().getDimSize(*axis);
}

//===----------------------------------------------------------------------===//
// Graph
//===----------------------------------------------------------------------===//

Graph::Graph(ModuleOp module, StringRef name) : builder(module.getContext()) {
  builder.setInsertionPointToEnd(module.getBody());
  func = builder.create<func::FuncOp>(builder.getUnknownLoc(), name,
                                      builder.getFunctionType({}, {}));
  entry = func.addEntryBlock();
  builder.setInsertionPointToEnd(entry);
}

Location Graph::location() {
  if (scopes.empty())
    return builder.getUnknownLoc();
  return NameLoc::get(builder.getStringAttr(scopes.back()));
}

Graph::Scope::Scope(Graph &graph, StringRef name) : graph(graph) {
  graph.scopes.push_back(name.str());
}

Graph::Scope::~Scope() { graph.scopes.pop_back(); }

Tensor Graph::param(StringRef name, ArrayRef<int64_t> shape, Type element) {
  if (!element)
    element = f32();
  auto type = tensorOf(shape, element);
  auto it = paramIndex.find(name);
  if (it != paramIndex.end()) {
    Value arg = entry->getArgument(it->second);
    if (arg.getType() != type)
      llvm::report_fatal_error(llvm::Twine("parameter '") + name +
                               "' requested with two different shapes");
    return Tensor(arg, this);
  }
  // Parameters stay in front of the inputs, in first-use order.
  unsigned index = numParams++;
  Value arg = entry->insertArgument(index, type, builder.getUnknownLoc());
  for (auto &entryIt : paramIndex)
    if (entryIt.second >= index)
      ++entryIt.second;
  paramIndex[name] = index;
  argTags.insert(
      argTags.begin() + index,
      {builder.getNamedAttr(kParamAttr, builder.getStringAttr(name))});
  return Tensor(arg, this);
}

Tensor Graph::input(StringRef name, RankedTensorType type,
                    ArrayRef<StringRef> dims) {
  if (!dims.empty() && static_cast<int64_t>(dims.size()) != type.getRank())
    llvm::report_fatal_error(llvm::Twine("input '") + name +
                             "': dim names do not match its rank");
  Value arg = entry->addArgument(type, builder.getUnknownLoc());
  argTags.push_back(
      {builder.getNamedAttr(kInputAttr, builder.getStringAttr(name))});
  if (!dims.empty()) {
    SmallVector<Attribute> names;
    for (StringRef dim : dims)
      names.push_back(builder.getStringAttr(dim));
    argTags.back().push_back(
        builder.getNamedAttr(kDimsAttr, builder.getArrayAttr(names)));
  }
  return Tensor(arg, this);
}

/// An elements attribute of `type` holding `values`, each converted to the
/// element type.
static DenseElementsAttr denseOf(RankedTensorType type,
                                 ArrayRef<double> values) {
  Type element = type.getElementType();
  if (auto floatType = dyn_cast<FloatType>(element)) {
    SmallVector<APFloat> floats;
    for (double v : values) {
      APFloat f(v);
      bool lost;
      f.convert(floatType.getFloatSemantics(), APFloat::rmNearestTiesToEven,
                &lost);
      floats.push_back(f);
    }
    return DenseElementsAttr::get(type, floats);
  }
  unsigned width = element.getIntOrFloatBitWidth();
  SmallVector<APInt> ints;
  for (double v : values)
    ints.push_back(APInt(width, static_cast<int64_t>(v), /*isSigned=*/true));
  return DenseElementsAttr::get(type, ints);
}

Tensor Graph::scalar(double value, Type element) {
  return constant({value}, {}, element);
}

Tensor Graph::constant(ArrayRef<double> values, ArrayRef<int64_t> shape,
                       Type element) {
  auto type = tensorOf(shape, element);
  int64_t count = 1;
  for (int64_t d : shape)
    count *= d;
  if (count != static_cast<int64_t>(values.size()))
    llvm::report_fatal_error("Graph::constant: value count does not match "
                             "the shape");
  return create<ConstantOp>(denseOf(type, values));
}

void Graph::setDifferentiable() {
  func->setAttr(kDifferentiableAttr, builder.getUnitAttr());
}

func::FuncOp Graph::finish(ArrayRef<std::pair<std::string, Tensor>> outputs) {
  if (finished)
    llvm::report_fatal_error("Graph::finish called twice");
  finished = true;
  SmallVector<Value> values;
  SmallVector<Type> types;
  for (const auto &[name, tensor] : outputs) {
    values.push_back(tensor.value());
    types.push_back(tensor.value().getType());
  }
  builder.create<func::ReturnOp>(location(), values);
  func.setFunctionType(
      builder.getFunctionType(entry->getArgumentTypes(), types));
  for (auto [i, tags] : llvm::enumerate(argTags))
    for (NamedAttribute tag : tags)
      func.setArgAttr(i, tag.getName(), tag.getValue());
  for (auto [i, output] : llvm::enumerate(outputs))
    func.setResultAttr(i, kOutputAttr, builder.getStringAttr(output.first));
  return func;
}

//===----------------------------------------------------------------------===//
// Arithmetic
//===----------------------------------------------------------------------===//

Tensor scalarLike(Tensor like, double value) {
  return like.graph().scalar(value, like.elementType());
}

Tensor operator+(Tensor a, Tensor b) {
  return a.graph().create<AddOp>(a.value(), b.value());
}
Tensor operator-(Tensor a, Tensor b) {
  return a.graph().create<SubOp>(a.value(), b.value());
}
Tensor operator*(Tensor a, Tensor b) {
  return a.graph().create<MulOp>(a.value(), b.value());
}
Tensor operator/(Tensor a, Tensor b) {
  return a.graph().create<DivOp>(a.value(), b.value());
}
Tensor operator+(Tensor a, double b) { return a + scalarLike(a, b); }
Tensor operator-(Tensor a, double b) { return a - scalarLike(a, b); }
Tensor operator*(Tensor a, double b) { return a * scalarLike(a, b); }
Tensor operator/(Tensor a, double b) { return a / scalarLike(a, b); }
Tensor operator+(double a, Tensor b) { return scalarLike(b, a) + b; }
Tensor operator-(double a, Tensor b) { return scalarLike(b, a) - b; }
Tensor operator*(double a, Tensor b) { return scalarLike(b, a) * b; }
Tensor operator/(double a, Tensor b) { return scalarLike(b, a) / b; }
Tensor operator-(Tensor a) { return a.graph().create<NegOp>(a.value()); }

Tensor maximum(Tensor a, Tensor b) {
  return a.graph().create<MaximumOp>(a.value(), b.value());
}
Tensor minimum(Tensor a, Tensor b) {
  return a.graph().create<MinimumOp>(a.value(), b.value());
}
Tensor pow(Tensor a, Tensor b) {
  return a.graph().create<PowOp>(a.value(), b.value());
}
Tensor compare(ComparePredicate predicate, Tensor a, Tensor b) {
  return a.graph().create<CompareOp>(predicate, a.value(), b.value());
}
Tensor select(Tensor cond, Tensor onTrue, Tensor onFalse) {
  return cond.graph().create<SelectOp>(cond.value(), onTrue.value(),
                                       onFalse.value());
}
Tensor castTo(Tensor x, Type element) {
  return x.graph().create<CastOp>(tensorOf(x.shape(), element), x.value());
}

#define LOOM_UNARY(fn, Op)                                                     \
  Tensor fn(Tensor x) { return x.graph().create<Op>(x.value()); }
LOOM_UNARY(abs, AbsOp)
LOOM_UNARY(exp, ExpOp)
LOOM_UNARY(log, LogOp)
LOOM_UNARY(sqrt, SqrtOp)
LOOM_UNARY(rsqrt, RsqrtOp)
LOOM_UNARY(tanh, TanhOp)
LOOM_UNARY(sigmoid, SigmoidOp)
LOOM_UNARY(relu, ReluOp)
LOOM_UNARY(gelu, GeluOp)
LOOM_UNARY(erf, ErfOp)
LOOM_UNARY(sin, SinOp)
LOOM_UNARY(cos, CosOp)
#undef LOOM_UNARY

//===----------------------------------------------------------------------===//
// Contractions, reductions and neural-network ops
//===----------------------------------------------------------------------===//

Tensor matmul(Tensor a, Tensor b, bool transposeA, bool transposeB) {
  return a.graph().create<MatmulOp>(a.value(), b.value(), transposeA,
                                    transposeB);
}

Tensor reduceSum(Tensor x, ArrayRef<int64_t> dims, bool keepDims) {
  return x.graph().create<ReduceSumOp>(x.value(), dims, keepDims);
}
Tensor reduceMean(Tensor x, ArrayRef<int64_t> dims, bool keepDims) {
  return x.graph().create<ReduceMeanOp>(x.value(), dims, keepDims);
}
Tensor reduceMax(Tensor x, ArrayRef<int64_t> dims, bool keepDims) {
  return x.graph().create<ReduceMaxOp>(x.value(), dims, keepDims);
}
Tensor sumAll(Tensor x) {
  SmallVector<int64_t> dims = llvm::to_vector(llvm::seq<int64_t>(0, x.rank()));
  return reduceSum(x, dims);
}

/// `axis` made non-negative; a bad axis is left for the op to report.
static int64_t positiveAxis(Tensor x, int64_t axis) {
  return axis < 0 ? axis + x.rank() : axis;
}

Tensor softmax(Tensor x, int64_t axis) {
  return x.graph().create<SoftmaxOp>(x.value(), positiveAxis(x, axis));
}
Tensor logSoftmax(Tensor x, int64_t axis) {
  return x.graph().create<LogSoftmaxOp>(x.value(), positiveAxis(x, axis));
}
Tensor layerNorm(Tensor x, Tensor gamma, Tensor beta, double epsilon) {
  Graph &g = x.graph();
  return g.create<LayerNormOp>(x.value(), gamma.value(), beta.value(),
                               APFloat(epsilon));
}
Tensor dropout(Tensor x, Tensor seed, double rate, int64_t offset) {
  Graph &g = x.graph();
  return g.create<DropoutOp>(x.value(), seed.value(), APFloat(rate), offset);
}
Tensor causalMask(Tensor like, int64_t dim, Type element) {
  int64_t n = like.dim(dim);
  return like.graph().create<CausalMaskOp>(
      tensorOf({n, n}, element), like.value(), positiveAxis(like, dim));
}
Tensor paddingMask(Tensor ids, int64_t pad, Type element) {
  auto type = tensorOf({ids.dim(0), 1, 1, ids.dim(1)}, element);
  return ids.graph().create<PaddingMaskOp>(type, ids.value(), pad);
}
Tensor crossEntropy(Tensor logits, Tensor targets, double labelSmoothing,
                    int64_t ignoreIndex) {
  Graph &g = logits.graph();
  return g.create<CrossEntropyOp>(logits.value(), targets.value(),
                                  APFloat(labelSmoothing), ignoreIndex);
}
Tensor oneHot(Tensor ids, int64_t depth, Type element) {
  SmallVector<int64_t> shape = llvm::to_vector(ids.shape());
  shape.push_back(depth);
  return ids.graph().create<OneHotOp>(tensorOf(shape, element), ids.value(),
                                      depth);
}

//===----------------------------------------------------------------------===//
// Shapes and data movement
//===----------------------------------------------------------------------===//

Tensor reshape(Tensor x, ArrayRef<int64_t> shape) {
  return x.graph().create<ReshapeOp>(x.value(), shape);
}
Tensor reshapeAs(Tensor x, Tensor like) {
  return x.graph().create<ReshapeAsOp>(x.value(), like.value());
}
Tensor expandDims(Tensor x, ArrayRef<int64_t> dims) {
  return x.graph().create<ExpandDimsOp>(x.value(), dims);
}
Tensor transpose(Tensor x, ArrayRef<int64_t> perm) {
  return x.graph().create<TransposeOp>(x.value(), perm);
}
Tensor slice(Tensor x, int64_t dim, int64_t start, int64_t end) {
  return x.graph().create<SliceOp>(x.value(), positiveAxis(x, dim), start, end);
}
Tensor concat(ArrayRef<Tensor> inputs, int64_t dim) {
  if (inputs.empty())
    llvm::report_fatal_error("concat needs at least one input");
  SmallVector<Value> values;
  for (const Tensor &t : inputs)
    values.push_back(t.value());
  return inputs.front().graph().create<ConcatOp>(
      values, positiveAxis(inputs.front(), dim));
}
Tensor broadcastAs(Tensor x, Tensor like) {
  return x.graph().create<BroadcastAsOp>(x.value(), like.value());
}
Tensor gather(Tensor table, Tensor ids) {
  return table.graph().create<GatherOp>(table.value(), ids.value());
}
Tensor iota(Tensor like, int64_t dim, Type element) {
  return like.graph().create<IotaOp>(tensorOf({like.dim(dim)}, element),
                                     like.value(), positiveAxis(like, dim));
}

} // namespace loom
