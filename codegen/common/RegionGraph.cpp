//===- RegionGraph.cpp - A loom.fusion region as a kernel schedule --------===//
//
// One pass over the region's block, in order (operands before users), turns
// each op into nodes; a node's level, stage and phase follow from its inputs
// as it is made, so the graph is scheduled when it is built. Anything the
// row-by-row kernel cannot compute is refused here, with the op named, so
// that emission never fails.
//
//===----------------------------------------------------------------------===//

#include "codegen/common/RegionGraph.h"

#include "ir/InterpreterOps.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/ADT/bit.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace loom;
using namespace loom::codegen;

ShapeExpr codegen::shapeOfType(RankedTensorType type, unsigned firstDim) {
  ShapeExpr shape;
  for (auto [i, d] : llvm::enumerate(type.getShape())) {
    DimExpr dim;
    if (ShapedType::isDynamic(d))
      dim.sources.push_back(firstDim + i);
    else
      dim.size = d;
    shape.push_back(dim);
  }
  return shape;
}

static DimExpr broadcastDim(const DimExpr &a, const DimExpr &b) {
  if (a.isStatic() && a.size != 1)
    return a;
  if (b.isStatic() && b.size != 1)
    return b;
  if (a.isStaticOne())
    return b;
  if (b.isStaticOne())
    return a;
  DimExpr merged = a;
  for (unsigned s : b.sources)
    if (!llvm::is_contained(merged.sources, s))
      merged.sources.push_back(s);
  return merged;
}

ShapeExpr codegen::broadcastShapes(const ShapeExpr &a, const ShapeExpr &b) {
  size_t rank = std::max(a.size(), b.size());
  ShapeExpr out(rank);
  for (size_t i = 0; i < rank; ++i) {
    DimExpr one;
    const DimExpr &da = i < rank - a.size() ? one : a[i - (rank - a.size())];
    const DimExpr &db = i < rank - b.size() ? one : b[i - (rank - b.size())];
    out[i] = broadcastDim(da, db);
  }
  return out;
}

/// Where a value of `shape` varies: a size-1 last dim is constant along a
/// row, all-ones is one value.
static Level levelOfShape(const ShapeExpr &shape) {
  if (llvm::all_of(shape, [](const DimExpr &d) { return d.isStaticOne(); }))
    return Level::Global;
  if (shape.back().isStaticOne())
    return Level::Row;
  return Level::Column;
}

/// `shape` with the static sizes of `type` (which may know more).
static ShapeExpr pin(ShapeExpr shape, RankedTensorType type) {
  if (int64_t(shape.size()) != type.getRank())
    shape.resize(type.getRank());
  for (auto [i, d] : llvm::enumerate(type.getShape()))
    if (!ShapedType::isDynamic(d))
      shape[i] = DimExpr{d, {}};
  return shape;
}

static ShapeExpr keepLastOne(ShapeExpr shape) {
  shape.back() = DimExpr{};
  return shape;
}

/// Kernels compute f16 and bf16 in f32.
static Type computeTypeOf(Type element) {
  if (isa<Float16Type, BFloat16Type>(element))
    return Float32Type::get(element.getContext());
  return element;
}

static bool isSupportedElement(Type t) {
  return isa<Float16Type, BFloat16Type, Float32Type, Float64Type>(t) ||
         t.isInteger(1) || t.isInteger(32) || t.isInteger(64);
}

namespace {

class GraphBuilder {
public:
  explicit GraphBuilder(FusionOp fusion) : fusion(fusion) {}
  FailureOr<RegionGraph> build();

private:
  LogicalResult fail(Operation *op, const Twine &why) {
    InFlightDiagnostic diag = fusion.emitError()
                              << "cannot generate a CPU kernel for '"
                              << op->getName() << "': " << why;
    diag.attachNote(op->getLoc()) << "this op";
    return failure();
  }

  unsigned make(NodeKind kind, Type computeType, ShapeExpr shape,
                ArrayRef<unsigned> inputs, Operation *origin);
  unsigned unary(UnaryFn fn, unsigned x, Operation *op);
  unsigned binary(BinaryFn fn, unsigned a, unsigned b, Operation *op);
  unsigned splat(double value, Type type, Operation *op);
  unsigned passThrough(unsigned x, ShapeExpr shape, Operation *op);
  unsigned rowReduce(ReduceFn fn, unsigned x, ShapeExpr shape, Operation *op);
  unsigned fullReduce(ReduceFn fn, unsigned x, ShapeExpr shape, Operation *op);
  unsigned layerNorm(unsigned x, unsigned gamma, unsigned beta, double eps,
                     Operation *op);
  FailureOr<unsigned> view(unsigned x, RankedTensorType to, Operation *op);
  FailureOr<unsigned> reduce(Value input, ArrayRef<int64_t> dims, bool keep,
                             ReduceFn fn, RankedTensorType type, Operation *op);
  LogicalResult visit(Operation *op);
  void placeResults();

  Node &node(Value v) { return g.nodes[nodeOf.lookup(v)]; }
  unsigned id(Value v) { return nodeOf.lookup(v); }

  FusionOp fusion;
  RegionGraph g;
  llvm::DenseMap<Value, unsigned> nodeOf;
};

} // namespace

unsigned GraphBuilder::make(NodeKind kind, Type computeType, ShapeExpr shape,
                            ArrayRef<unsigned> inputs, Operation *origin) {
  Node n;
  n.kind = kind;
  n.computeType = computeType;
  n.memoryType = computeType;
  n.level = levelOfShape(shape);
  n.shape = std::move(shape);
  n.inputs.assign(inputs.begin(), inputs.end());
  n.origin = origin;
  for (unsigned i : inputs) {
    const Node &in = g.nodes[i];
    n.level = std::max(n.level, in.level);
    n.stage = std::max(n.stage, in.stage);
    if (in.level != Level::Global)
      n.phase = std::max(n.phase, in.phase);
  }
  g.nodes.push_back(std::move(n));
  return g.nodes.size() - 1;
}

unsigned GraphBuilder::unary(UnaryFn fn, unsigned x, Operation *op) {
  Node &in = g.nodes[x];
  unsigned n = make(NodeKind::Unary, in.computeType, in.shape, {x}, op);
  g.nodes[n].fn = unsigned(fn);
  return n;
}

unsigned GraphBuilder::binary(BinaryFn fn, unsigned a, unsigned b,
                              Operation *op) {
  ShapeExpr shape = broadcastShapes(g.nodes[a].shape, g.nodes[b].shape);
  unsigned n =
      make(NodeKind::Binary, g.nodes[a].computeType, shape, {a, b}, op);
  g.nodes[n].fn = unsigned(fn);
  return n;
}

unsigned GraphBuilder::splat(double value, Type type, Operation *op) {
  unsigned n = make(NodeKind::Splat, type, {}, {}, op);
  g.nodes[n].scalar = FloatAttr::get(type, value);
  return n;
}

unsigned GraphBuilder::passThrough(unsigned x, ShapeExpr shape, Operation *op) {
  return make(NodeKind::PassThrough, g.nodes[x].computeType, std::move(shape),
              {x}, op);
}

unsigned GraphBuilder::rowReduce(ReduceFn fn, unsigned x, ShapeExpr shape,
                                 Operation *op) {
  // Over a dim of size 1 every reduction is the value itself.
  if (g.nodes[x].level != Level::Column)
    return passThrough(x, std::move(shape), op);
  unsigned n =
      make(NodeKind::RowReduce, g.nodes[x].computeType, shape, {x}, op);
  Node &r = g.nodes[n];
  r.level = Level::Row;
  r.phase = g.nodes[x].phase + 1;
  r.fn = unsigned(fn);
  r.reducedShape = g.nodes[x].shape;
  return n;
}

unsigned GraphBuilder::fullReduce(ReduceFn fn, unsigned x, ShapeExpr shape,
                                  Operation *op) {
  const Node &in = g.nodes[x];
  if (in.level == Level::Global)
    return passThrough(x, std::move(shape), op);
  ShapeExpr reduced = in.shape;
  unsigned perRow = x;
  if (in.level == Level::Column)
    perRow = rowReduce(fn == ReduceFn::Max ? ReduceFn::Max : ReduceFn::Sum, x,
                       keepLastOne(in.shape), op);
  unsigned n = make(NodeKind::FullReduce, g.nodes[perRow].computeType, shape,
                    {perRow}, op);
  Node &r = g.nodes[n];
  r.level = Level::Global;
  r.phase = 0;
  r.stage = g.nodes[perRow].stage + 1;
  r.fn = unsigned(fn);
  r.reducedShape = std::move(reduced);
  return n;
}

unsigned GraphBuilder::layerNorm(unsigned x, unsigned gamma, unsigned beta,
                                 double eps, Operation *op) {
  // As the interpreter: mean, then the biased variance of x - mean (two
  // passes, not E[x^2] - mean^2), then (x - mean) * inv * gamma + beta.
  Type t = g.nodes[x].computeType;
  ShapeExpr keep = keepLastOne(g.nodes[x].shape);
  unsigned mean = rowReduce(ReduceFn::Mean, x, keep, op);
  unsigned d = binary(BinaryFn::Sub, x, mean, op);
  unsigned var =
      rowReduce(ReduceFn::Mean, binary(BinaryFn::Mul, d, d, op), keep, op);
  unsigned sd = unary(UnaryFn::Sqrt,
                      binary(BinaryFn::Add, var, splat(eps, t, op), op), op);
  unsigned inv = binary(BinaryFn::Div, splat(1.0, t, op), sd, op);
  unsigned scaled =
      binary(BinaryFn::Mul, binary(BinaryFn::Mul, d, inv, op), gamma, op);
  return binary(BinaryFn::Add, scaled, beta, op);
}

FailureOr<unsigned> GraphBuilder::view(unsigned x, RankedTensorType to,
                                       Operation *op) {
  // Views here only add or drop size-1 dims: the other dims keep their
  // order, so the data stays where it is.
  const Node &in = g.nodes[x];
  SmallVector<DimExpr> kept;
  for (const DimExpr &d : in.shape)
    if (!d.isStaticOne())
      kept.push_back(d);
  ShapeExpr shape;
  size_t next = 0;
  for (int64_t d : to.getShape()) {
    if (d == 1) {
      shape.push_back(DimExpr{});
      continue;
    }
    if (next == kept.size())
      return fail(op, "it is not a view that only adds or drops size-1 dims");
    DimExpr dim = kept[next++];
    if (!ShapedType::isDynamic(d))
      dim = DimExpr{d, {}};
    shape.push_back(dim);
  }
  if (next != kept.size())
    return fail(op, "it is not a view that only adds or drops size-1 dims");

  if (in.kind == NodeKind::Leaf) {
    Node leaf = in;
    leaf.shape = shape;
    leaf.level = levelOfShape(shape);
    leaf.origin = op;
    g.nodes.push_back(std::move(leaf));
    return g.nodes.size() - 1;
  }
  if (in.level != Level::Global) {
    // A computed value is evaluated at the domain's coordinates; a view
    // that moves its dims against the domain (right-aligned) would need
    // another indexing of its inputs.
    auto strip = [](ArrayRef<DimExpr> s) {
      while (!s.empty() && s.front().isStaticOne())
        s = s.drop_front();
      return s;
    };
    if (strip(in.shape) != strip(shape))
      return fail(op, "it moves the dims of a computed value against the "
                      "iteration domain");
  }
  return passThrough(x, std::move(shape), op);
}

FailureOr<unsigned> GraphBuilder::reduce(Value input, ArrayRef<int64_t> dims,
                                         bool keep, ReduceFn fn,
                                         RankedTensorType type, Operation *op) {
  int64_t rank = cast<RankedTensorType>(input.getType()).getRank();
  SmallVector<int64_t> sorted;
  for (int64_t d : dims)
    sorted.push_back(d < 0 ? d + rank : d);
  llvm::sort(sorted);
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  ShapeExpr shape = pin(node(input).shape, type);
  if (sorted.empty())
    return passThrough(id(input), shape, op);
  bool all = int64_t(sorted.size()) == rank && sorted.front() == 0;
  bool lastOnly = sorted.size() == 1 && sorted.front() == rank - 1;
  if (lastOnly && (keep || rank == 1))
    return rowReduce(fn, id(input), shape, op);
  if (all)
    return fullReduce(fn, id(input), shape, op);
  if (lastOnly)
    return fail(op, "a reduction over the last dim needs keep_dims (its "
                    "result would not line up with the iteration domain)");
  return fail(op, "only reductions over the last dim or over every dim can "
                  "be compiled");
}

LogicalResult GraphBuilder::visit(Operation *op) {
  for (Type t : op->getResultTypes()) {
    auto ranked = dyn_cast<RankedTensorType>(t);
    if (!ranked || !isSupportedElement(ranked.getElementType()))
      return fail(op, "its result type is not supported");
  }
  auto resultType = [&](unsigned i = 0) {
    return cast<RankedTensorType>(op->getResult(i).getType());
  };
  auto define = [&](unsigned n, unsigned i = 0) {
    g.nodes[n].shape = pin(g.nodes[n].shape, resultType(i));
    Type element = resultType(i).getElementType();
    if (computeTypeOf(element) != element && g.nodes[n].kind != NodeKind::Leaf)
      g.nodes[n].roundTo = element;
    nodeOf[op->getResult(i)] = n;
    return success();
  };
  auto elementwise = [&](NodeKind kind, unsigned fn) {
    SmallVector<unsigned> inputs;
    ShapeExpr shape;
    for (Value v : op->getOperands()) {
      inputs.push_back(id(v));
      shape = broadcastShapes(shape, node(v).shape);
    }
    unsigned n = make(kind, computeTypeOf(resultType().getElementType()), shape,
                      inputs, op);
    g.nodes[n].fn = fn;
    return define(n);
  };
  auto floatOnly = [&](Type t) { return isa<FloatType>(t); };

  // The arithmetic ops, found through the interpreter's op-to-function map,
  // the one list of them (ir/InterpreterOps.cpp): a new unary or binary op
  // compiles once the interpreter evaluates it.
  if (std::optional<BinaryFn> fn = interp::binaryFnOf(op)) {
    Type t = resultType().getElementType();
    if (getElementTypeOrSelf(op->getOperand(0)) != t ||
        getElementTypeOrSelf(op->getOperand(1)) != t || t.isInteger(1))
      return fail(op, "its operands and result differ in element type or "
                      "are i1");
    if (*fn == BinaryFn::Pow && !floatOnly(t))
      return fail(op, "integer powers are not supported");
    return elementwise(NodeKind::Binary, unsigned(*fn));
  }
  if (std::optional<UnaryFn> fn = interp::unaryFnOf(op))
    return elementwise(NodeKind::Unary, unsigned(*fn));

  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case<CompareOp>([&](CompareOp o) -> LogicalResult {
        if (getElementTypeOrSelf(o.getLhs()) !=
            getElementTypeOrSelf(o.getRhs()))
          return fail(op, "its operands differ in element type");
        return elementwise(NodeKind::Compare, unsigned(o.getPredicate()));
      })
      .Case<SelectOp>([&](SelectOp o) -> LogicalResult {
        Type t = resultType().getElementType();
        if (getElementTypeOrSelf(o.getOnTrue()) != t ||
            getElementTypeOrSelf(o.getOnFalse()) != t)
          return fail(op, "its operands differ in element type");
        return elementwise(NodeKind::Select, 0);
      })
      .Case<CastOp>([&](auto) { return elementwise(NodeKind::Cast, 0); })
      .Case<ConstantOp>([&](ConstantOp c) -> LogicalResult {
        auto dense = dyn_cast<DenseElementsAttr>(c.getValue());
        if (!dense)
          return fail(op, "only dense constants are supported");
        RankedTensorType type = resultType();
        Type compute = computeTypeOf(type.getElementType());
        unsigned n;
        if (dense.isSplat()) {
          n = make(NodeKind::Splat, compute, shapeOfType(type, 0), {}, op);
          TypedAttr value = dense.getSplatValue<TypedAttr>();
          if (compute != type.getElementType())
            value = FloatAttr::get(
                compute, dense.getSplatValue<APFloat>().convertToFloat());
          g.nodes[n].scalar = value;
        } else {
          n = make(NodeKind::Leaf, compute, shapeOfType(type, 0), {}, op);
          g.nodes[n].memoryType = type.getElementType();
          g.nodes[n].array = dense;
        }
        return define(n);
      })
      .Case<BroadcastAsOp>([&](BroadcastAsOp o) {
        ShapeExpr shape =
            broadcastShapes(node(o.getInput()).shape, node(o.getLike()).shape);
        return define(passThrough(id(o.getInput()), shape, op));
      })
      .Case<ExpandDimsOp, ReshapeOp, ReshapeAsOp>([&](auto) -> LogicalResult {
        auto n = view(id(op->getOperand(0)), resultType(), op);
        if (failed(n))
          return failure();
        return define(*n);
      })
      .Case<ReduceSumOp, ReduceMeanOp, ReduceMaxOp>(
          [&](auto r) -> LogicalResult {
            ReduceFn fn = isa<ReduceSumOp>(op)    ? ReduceFn::Sum
                          : isa<ReduceMeanOp>(op) ? ReduceFn::Mean
                                                  : ReduceFn::Max;
            auto n = reduce(r.getInput(), r.getDims(), r.getKeepDims(), fn,
                            resultType(), op);
            if (failed(n))
              return failure();
            return define(*n);
          })
      .Case<SoftmaxOp, LogSoftmaxOp>([&](auto s) -> LogicalResult {
        int64_t rank = resultType().getRank();
        int64_t axis = s.getAxis();
        if (rank == 0 || (axis < 0 ? axis + rank : axis) != rank - 1)
          return fail(op, "only the last axis can be compiled");
        unsigned x = id(s.getInput());
        ShapeExpr keep = keepLastOne(g.nodes[x].shape);
        unsigned m = rowReduce(ReduceFn::Max, x, keep, op);
        unsigned d = binary(BinaryFn::Sub, x, m, op);
        if (isa<SoftmaxOp>(op)) {
          unsigned e = unary(UnaryFn::Exp, d, op);
          unsigned sum = rowReduce(ReduceFn::Sum, e, keep, op);
          return define(binary(BinaryFn::Div, e, sum, op));
        }
        unsigned sum =
            rowReduce(ReduceFn::Sum, unary(UnaryFn::Exp, d, op), keep, op);
        unsigned lse =
            binary(BinaryFn::Add, m, unary(UnaryFn::Log, sum, op), op);
        return define(binary(BinaryFn::Sub, x, lse, op));
      })
      .Case<LayerNormOp>([&](LayerNormOp o) {
        return define(layerNorm(id(o.getInput()), id(o.getGamma()),
                                id(o.getBeta()),
                                o.getEpsilon().convertToDouble(), op));
      })
      .Case<AddLayerNormOp>([&](AddLayerNormOp o) {
        unsigned sum =
            binary(BinaryFn::Add, id(o.getInput()), id(o.getResidual()), op);
        (void)define(sum, 0);
        return define(layerNorm(sum, id(o.getGamma()), id(o.getBeta()),
                                o.getEpsilon().convertToDouble(), op),
                      1);
      })
      .Case<DropoutOp>([&](DropoutOp o) -> LogicalResult {
        const Node &seed = node(o.getSeed());
        if (seed.level != Level::Global)
          return fail(op, "its seed is not a single value");
        double rate = o.getRate().convertToDouble();
        if (!(rate >= 0.0 && rate < 1.0))
          return fail(op, "its rate is not in [0, 1)");
        unsigned x = id(o.getInput());
        unsigned n = make(NodeKind::Dropout, g.nodes[x].computeType,
                          g.nodes[x].shape, {x, id(o.getSeed())}, op);
        g.nodes[n].rate = rate;
        g.nodes[n].offset = int64_t(o.getOffset());
        return define(n);
      })
      .Case<YieldOp>([&](YieldOp y) {
        for (Value v : y.getValues())
          g.results.push_back(id(v));
        return success();
      })
      .Default([&](Operation *) {
        return fail(op, "it is not an elementwise op, a row reduction or a "
                        "view");
      });
}

void GraphBuilder::placeResults() {
  unsigned rank = g.rank();
  bool hasFullReduce = false;
  for (const Node &n : g.nodes) {
    hasFullReduce |= n.kind == NodeKind::FullReduce;
    g.numStages = std::max(g.numStages, n.stage + 1);
  }
  g.parallel = !hasFullReduce;
  for (auto [i, type] : llvm::enumerate(g.resultTypes)) {
    // A result smaller than the domain along a row dim is computed on
    // several rows; if it may share storage with an operand that those rows
    // read, only the last of them may write it, and rows must run in order.
    ShapeExpr shape = shapeOfType(type, g.resultDims[i]);
    bool underCovers = false;
    for (unsigned d = 0; d + 1 < rank; ++d) {
      int64_t j = int64_t(d) - int64_t(rank - shape.size());
      bool one = j < 0 || shape[j].isStaticOne();
      underCovers |= one && !g.domain[d].isStaticOne();
    }
    bool mayAlias = llvm::is_contained(g.operandTypes, type);
    g.guardedResults.push_back(underCovers && mayAlias);
    if (underCovers && mayAlias)
      g.parallel = false;
  }
}

FailureOr<RegionGraph> GraphBuilder::build() {
  Block &body = fusion.getBody().front();
  unsigned dimIndex = 0;
  for (BlockArgument arg : body.getArguments()) {
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!type || !isSupportedElement(type.getElementType()))
      return fusion.emitError()
             << "cannot generate a CPU kernel: operand #" << arg.getArgNumber()
             << " has an unsupported type " << arg.getType();
    g.operandTypes.push_back(type);
    g.operandDims.push_back(dimIndex);
    Node leaf;
    leaf.kind = NodeKind::Leaf;
    leaf.operand = arg.getArgNumber();
    leaf.memoryType = type.getElementType();
    leaf.computeType = computeTypeOf(type.getElementType());
    leaf.shape = shapeOfType(type, dimIndex);
    leaf.level = levelOfShape(leaf.shape);
    g.nodes.push_back(std::move(leaf));
    nodeOf[arg] = g.nodes.size() - 1;
    dimIndex += type.getRank();
  }
  for (Type t : fusion.getResultTypes()) {
    auto type = dyn_cast<RankedTensorType>(t);
    if (!type || !isSupportedElement(type.getElementType()))
      return fusion.emitError()
             << "cannot generate a CPU kernel: a result has the unsupported "
                "type "
             << t;
    g.resultTypes.push_back(type);
    g.resultDims.push_back(dimIndex);
    dimIndex += type.getRank();
  }
  for (Operation &op : body)
    if (failed(visit(&op)))
      return failure();
  if (g.results.size() != g.resultTypes.size())
    return fusion.emitError() << "cannot generate a CPU kernel: the region "
                                 "yields a different number of results";

  // The domain is what the region reads and writes: an operand read only
  // through a view (positions [T] seen as [T, 1]) counts with the view's
  // shape, since its own would line up with the wrong dims.
  std::vector<bool> used(g.nodes.size(), false);
  for (const Node &n : g.nodes)
    for (unsigned i : n.inputs)
      used[i] = true;
  for (unsigned r : g.results)
    used[r] = true;
  for (auto [n, node] : llvm::enumerate(g.nodes))
    if (node.kind == NodeKind::Leaf && used[n])
      g.domain = broadcastShapes(g.domain, node.shape);
  for (auto [i, type] : llvm::enumerate(g.resultTypes))
    g.domain = broadcastShapes(g.domain, shapeOfType(type, g.resultDims[i]));
  for (const Node &n : g.nodes)
    if (n.shape.size() > g.domain.size())
      return fusion.emitError()
             << "cannot generate a CPU kernel: a value inside the region has "
                "more dims than every operand and result";
  placeResults();
  return std::move(g);
}

FailureOr<RegionGraph> codegen::buildRegionGraph(FusionOp fusion) {
  return GraphBuilder(fusion).build();
}

std::string codegen::structuralKey(const RegionGraph &g) {
  std::string key;
  llvm::raw_string_ostream os(key);
  auto shape = [&](const ShapeExpr &e) {
    os << "[";
    for (const DimExpr &d : e) {
      if (d.isStatic())
        os << d.size;
      for (unsigned s : d.sources)
        os << "d" << s;
      os << ",";
    }
    os << "]";
  };
  for (Type t : g.operandTypes)
    os << t << ";";
  os << "->";
  for (Type t : g.resultTypes)
    os << t << ";";
  os << "\n";
  for (const Node &n : g.nodes) {
    os << unsigned(n.kind) << " " << unsigned(n.level) << " " << n.stage << " "
       << n.phase << " " << n.computeType << " " << n.memoryType << " "
       << n.roundTo << " fn" << n.fn << " arg" << n.operand << " ";
    shape(n.shape);
    os << " in";
    for (unsigned i : n.inputs)
      os << " " << i;
    if (n.array)
      os << " " << Attribute(n.array);
    if (n.scalar)
      os << " " << Attribute(n.scalar);
    if (n.kind == NodeKind::Dropout)
      os << " rate" << llvm::bit_cast<uint64_t>(n.rate);
    shape(n.reducedShape);
    os << "\n";
  }
  os << "results";
  for (auto [r, guarded] : llvm::zip(g.results, g.guardedResults))
    os << " " << r << (guarded ? "g" : "");
  os << " domain";
  shape(g.domain);
  os << " stages" << g.numStages << (g.parallel ? " parallel" : "");
  return key;
}

SmallVector<int64_t> codegen::dropoutOffsets(const RegionGraph &g) {
  SmallVector<int64_t> offsets;
  for (const Node &n : g.nodes)
    if (n.kind == NodeKind::Dropout)
      offsets.push_back(n.offset);
  return offsets;
}
