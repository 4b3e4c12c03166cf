//===- FuseElementwise.cpp - Elementwise work into loom.fusion regions ----===//
//
// Partitions each function's elementwise ops, broadcasts and row reductions
// into loom.fusion regions, each the body of one future kernel:
//
//   %c = loom.constant dense<2.0>        %r:2 = loom.fusion(%x, %y) : ... {
//   %a = loom.mul %x, %c                 ^bb0(%x1: ..., %y1: ...):
//   %b = loom.add %a, %y          ==>      %c = loom.constant dense<2.0>
//   %s = loom.reduce_sum %b [1]            %a = loom.mul %x1, %c
//   %m = loom.matmul %b, %w                %b = loom.add %a, %y1
//   return %s, %m                          %s = loom.reduce_sum %b [1]
//                                          loom.yield %b, %s
//                                        }
//                                        %m = loom.matmul %r#0, %w
//
// What joins a region: elementwise ops (compare, select, cast and dropout
// included), reductions over trailing dims, softmax and log_softmax over the
// last dim, layer_norm and add_layer_norm (a kernel can run all of these row
// by row), and broadcast_as. Broadcasts and views (expand_dims, reshapes that
// only add or drop unit dims) read only by such ops, and scalar or splat
// constants, are cloned into every region that reads them instead of being
// passed in: the region then reads the small tensor, not its broadcast.
// Contractions, gathers and scatters, slices, concats, transposes and cross
// entropy stay outside.
//
// Groups form on a graph whose nodes are the ops and, once merged, groups:
//   1. producer-consumer: a producer joins its consumer's group when every
//      reader of the producer is in that group (walking from the end, so
//      chains fuse whole);
//   2. siblings: groups that read one value and have the same output type
//      (a static shape, or the type of the value they share) merge into one
//      multi-output region; this makes the Adam updates of all parameters of
//      one shape, which read the same schedule scalars, one region;
//   3. multi-output producer-consumer: a producer read elsewhere too joins
//      a consumer's group that already iterates over its output shape (or
//      any group, for a scalar) and is yielded for the other readers; the
//      residual sum before a layer norm, Adam's schedule and a value's bf16
//      copy (loom-mixed-precision's cast) go this way.
// A kernel that reduces a whole tensor to a scalar iterates over that
// tensor's shape: a group holding such a reduction merges only with groups
// that reduce a tensor of the same shape, read values that broadcast to it
// and compute values of it (or scalars). Gradient clipping's global norm,
// a sum of squares over every parameter, so becomes one region per shape.
// Rounds repeat until nothing merges. An op that fuses with nothing still
// becomes a region of its own: every elementwise kernel is a region. With
// `remarks`, each producer-consumer edge left between two regions says why.
//
// No merge may create a cycle: a group that feeds an outside op which feeds
// the group back. The graph keeps a topological order of its nodes (at first
// the block's order) and checks and repairs it per merge of x before y as
// Pearce and Kelly's dynamic topological sort does, visiting only nodes
// between x and y: the search forward from x through them must not reach y;
// the nodes it finds follow the merged group, the nodes before y that reach y
// precede it, and they are reordered among their own positions. The search
// has a budget so that the pass stays near linear on large models; a pair too
// far apart for it stays apart. The block ends up in this order.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/TypeSwitch.h"

#include <functional>
#include <numeric>
#include <optional>

namespace loom {
#define GEN_PASS_DEF_LOOMFUSEELEMENTWISE
#include "passes/Passes.h.inc"
} // namespace loom

using namespace mlir;
using namespace loom;

namespace {

/// Nodes one cycle check may visit before it gives up on a merge.
constexpr size_t kSearchBudget = 2048;
/// Constants up to this many elements (and splats) are cloned into regions.
constexpr int64_t kClonedConstantElements = 16;
/// Groups per output type that sibling fusion tries to join a group to.
constexpr size_t kSiblingLeaders = 4;
/// Ops one region may hold. A region is one kernel whose code generators
/// walk its expression trees recursively; an imported chain of tens of
/// thousands of ops would make one kernel too deep to walk and too large to
/// compile. The largest region of a real model (the base preset's optimizer
/// step, its parameters' updates fused as siblings) holds fewer than this.
constexpr size_t kMaxRegionOps = 4096;

enum class Role {
  /// Stays outside every region.
  Opaque,
  /// Belongs to exactly one region.
  Fusible,
  /// A broadcast or view read only by fusible ops: cloned into each region
  /// that reads it, and not a node of the graph (edges pass through it).
  Cloned,
};

/// Why two groups may not merge.
struct Decline {
  enum Kind { None, Cycle, TooFar, Domains, TooLarge } kind = None;
  /// For a cycle: the first op outside both groups on the path between them.
  Operation *via = nullptr;
  explicit operator bool() const { return kind != None; }
};

} // namespace

static bool isElementwise(Operation *op) {
  return op->hasTrait<loom::OpTrait::ElementwiseMap>();
}

static int64_t rankOf(Value v) {
  return cast<ShapedType>(v.getType()).getRank();
}

/// Whether `dims` are the last dims of a rank-`rank` tensor.
static bool areTrailingDims(ArrayRef<int64_t> dims, int64_t rank) {
  SmallVector<int64_t> sorted;
  for (int64_t d : dims)
    sorted.push_back(d < 0 ? d + rank : d);
  llvm::sort(sorted);
  for (auto [i, d] : llvm::enumerate(sorted))
    if (d != rank - int64_t(sorted.size()) + int64_t(i))
      return false;
  return true;
}

/// Whether a kernel can run `op` row by row; `why` says why a reduction
/// cannot.
static bool isRowWise(Operation *op, std::string *why = nullptr) {
  auto no = [&](const char *reason) {
    if (why)
      *why = reason;
    return false;
  };
  return llvm::TypeSwitch<Operation *, bool>(op)
      .Case<ReduceSumOp, ReduceMeanOp, ReduceMaxOp>([&](auto r) {
        return areTrailingDims(r.getDims(), rankOf(r.getInput())) ||
               no("it reduces dims that are not the trailing ones");
      })
      .Case<SoftmaxOp, LogSoftmaxOp>([&](auto s) {
        return int64_t(s.getAxis()) == rankOf(s.getInput()) - 1 ||
               no("its axis is not the last dim");
      })
      .Case<LayerNormOp, AddLayerNormOp>([](auto) { return true; })
      .Default([](Operation *) { return false; });
}

/// Whether `from` and `to` differ only in size-1 dims.
static bool onlyUnitDims(Type from, Type to) {
  auto strip = [](Type t) {
    SmallVector<int64_t> dims;
    for (int64_t d : cast<ShapedType>(t).getShape())
      if (d != 1)
        dims.push_back(d);
    return dims;
  };
  return strip(from) == strip(to);
}

/// The input shape of `op` when it reduces every dim of its input to a
/// scalar: a kernel with such a reduction iterates over that whole shape.
static std::optional<SmallVector<int64_t>> fullReductionInput(Operation *op) {
  if (!isa<ReduceSumOp, ReduceMeanOp, ReduceMaxOp>(op))
    return std::nullopt;
  auto result = dyn_cast<ShapedType>(op->getResult(0).getType());
  auto input = dyn_cast<ShapedType>(op->getOperand(0).getType());
  if (!result || !input || !input.hasRank() || result.getNumElements() != 1 ||
      input.getRank() == 0)
    return std::nullopt;
  return llvm::to_vector(input.getShape());
}

/// Whether a value of `shape` can be read by a kernel that iterates over
/// `domain`: right-aligned, each dim 1, the domain's, or dynamic in either.
static bool broadcastsInto(ArrayRef<int64_t> shape, ArrayRef<int64_t> domain) {
  if (shape.size() > domain.size())
    return false;
  for (size_t i = 0; i < shape.size(); ++i) {
    int64_t x = shape[shape.size() - 1 - i], y = domain[domain.size() - 1 - i];
    if (x != 1 && x != y && !ShapedType::isDynamic(x) &&
        !ShapedType::isDynamic(y))
      return false;
  }
  return true;
}

/// The shapes of the values in `types` that are not scalars (nor all 1s).
static SmallVector<SmallVector<int64_t>> nonScalarShapes(TypeRange types) {
  SmallVector<SmallVector<int64_t>> shapes;
  for (Type t : types)
    if (auto shaped = dyn_cast<ShapedType>(t);
        shaped && shaped.hasRank() &&
        llvm::any_of(shaped.getShape(), [](int64_t d) { return d != 1; }))
      shapes.push_back(llvm::to_vector(shaped.getShape()));
  return shapes;
}

static std::string shapeString(ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (auto [i, d] : llvm::enumerate(shape))
    s += (i ? "x" : "") +
         (ShapedType::isDynamic(d) ? std::string("?") : std::to_string(d));
  return s + "]";
}

static bool isBroadcastOrView(Operation *op) {
  if (isa<BroadcastAsOp>(op))
    return true;
  // A view that only adds or drops unit dims (expand_dims always does).
  if (op->hasTrait<loom::OpTrait::ViewOfOperand>())
    return onlyUnitDims(op->getOperand(0).getType(),
                        op->getResult(0).getType());
  return false;
}

static bool isClonedConstant(Operation *op) {
  auto c = dyn_cast<ConstantOp>(op);
  return c && (c.getValue().isSplat() ||
               c.getValue().getNumElements() <= kClonedConstantElements);
}

static std::string describe(Operation *op) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "'" << op->getName() << "' at " << op->getLoc();
  return s;
}

namespace {

class FusionGraph {
public:
  explicit FusionGraph(Block &body);

  /// Forms the groups.
  void fuse();
  /// A remark for each producer-consumer edge left between two groups.
  void explainDeclinedEdges();
  /// Writes each group as a loom.fusion and puts the block in graph order.
  LogicalResult rewrite();

private:
  unsigned find(unsigned v) {
    while (parent[v] != v)
      v = parent[v] = parent[parent[v]];
    return v;
  }
  template <typename Fn> void forEachSucc(unsigned g, Fn fn) {
    for (unsigned m : members[g])
      for (unsigned u : users[m])
        if (unsigned s = find(u); s != g)
          fn(s);
  }
  template <typename Fn> void forEachPred(unsigned g, Fn fn) {
    for (unsigned m : members[g])
      for (unsigned p : producers[m])
        if (unsigned s = find(p); s != g)
          fn(s);
  }
  /// The output type of group `g`: that of its last op.
  Type keyOf(unsigned g) { return ops[root[find(g)]]->getResult(0).getType(); }
  bool isFusible(unsigned v) { return role[v] == Role::Fusible; }

  Role classify(unsigned i);
  /// Merges the groups of `a` and `b` unless that makes a cycle; with
  /// `dryRun` only says whether it could.
  Decline merge(unsigned a, unsigned b, bool dryRun = false);
  bool fuseIntoSoleConsumers();
  bool fuseSiblings();
  bool fuseReaders(TypeRange valueTypes, ArrayRef<unsigned> readers,
                   std::optional<unsigned> self);
  bool fuseMultiOutput();
  /// Whether every reader of group `pg` outside it is in group `cg`.
  bool onlyFeeds(unsigned pg, unsigned cg);
  /// Whether group `pg`, read outside `cg` too, may join `cg` and be yielded:
  /// when `cg` computes values of `pg`'s output type already, or `pg`
  /// computes a scalar (that a kernel of `cg` computes once).
  bool sharesIterationSpace(unsigned pg, unsigned cg);
  /// Whether `v`, a result of a member of group `g`, is read outside it.
  bool readOutside(Value v, unsigned g);
  void writeRegion(unsigned g, ArrayRef<unsigned> groupMembers,
                   ArrayRef<Value> outputs);

  Block &body;
  Operation *terminator;
  std::vector<Operation *> ops;
  llvm::DenseMap<Operation *, unsigned> index;
  std::vector<Role> role;
  /// Readers and producers of each node, seen through cloned ops.
  std::vector<SmallVector<unsigned, 2>> users, producers;
  // Groups: union-find, members, position in the topological order, and
  // the last op (in block order) that defines the output type.
  std::vector<unsigned> parent, root;
  std::vector<SmallVector<unsigned, 1>> members;
  /// Per group: the input shape of its reductions to a scalar, if it has
  /// any, and the non-scalar shapes its members read and write. A kernel
  /// that reduces a whole tensor iterates over that tensor's shape: it
  /// cannot also reduce another shape (the sum of squares of every
  /// gradient, for clipping, is one reduction per shape), nor compute values
  /// of another (`fitsFullReduction`).
  std::vector<std::optional<SmallVector<int64_t>>> fullInput;
  std::vector<SmallVector<SmallVector<int64_t>>> readShapes, writtenShapes;
  /// Whether the groups may share a kernel as far as reductions to a
  /// scalar go; `why` says why not.
  bool fitsFullReduction(unsigned x, unsigned y, std::string *why = nullptr);
  std::vector<int64_t> ord;
  std::vector<unsigned> mark;
  unsigned epoch = 0;
  llvm::DenseMap<unsigned, FusionOp> written;
};

} // namespace

FusionGraph::FusionGraph(Block &body)
    : body(body), terminator(body.getTerminator()) {
  for (Operation &op : body.without_terminator()) {
    index[&op] = ops.size();
    ops.push_back(&op);
  }
  size_t n = ops.size();
  role.assign(n, Role::Opaque);
  users.resize(n);
  producers.resize(n);
  // From the end, so that an op's readers are classified before it.
  for (unsigned i = n; i-- > 0;) {
    role[i] = classify(i);
    auto &out = users[i];
    for (Operation *user : ops[i]->getUsers()) {
      Operation *top = body.findAncestorOpInBlock(*user);
      if (!top || top == terminator)
        continue;
      unsigned j = index.lookup(top);
      if (role[j] == Role::Cloned)
        out.append(users[j].begin(), users[j].end());
      else
        out.push_back(j);
    }
    llvm::sort(out);
    out.erase(std::unique(out.begin(), out.end()), out.end());
  }
  for (unsigned i = 0; i < n; ++i)
    if (role[i] != Role::Cloned)
      for (unsigned j : users[i])
        producers[j].push_back(i);

  parent.resize(n);
  std::iota(parent.begin(), parent.end(), 0);
  root = parent;
  ord.assign(parent.begin(), parent.end());
  members.resize(n);
  fullInput.resize(n);
  readShapes.resize(n);
  writtenShapes.resize(n);
  for (unsigned i = 0; i < n; ++i) {
    members[i].push_back(i);
    fullInput[i] = fullReductionInput(ops[i]);
    readShapes[i] = nonScalarShapes(ops[i]->getOperandTypes());
    writtenShapes[i] = nonScalarShapes(ops[i]->getResultTypes());
  }
  mark.assign(n, 0);
}

Role FusionGraph::classify(unsigned i) {
  Operation *op = ops[i];
  if (op->getNumRegions() || !isa_and_present<LoomDialect>(op->getDialect()))
    return Role::Opaque;
  if (isElementwise(op) || isRowWise(op))
    return Role::Fusible;
  if (!isBroadcastOrView(op))
    return Role::Opaque;
  bool onlyFusedReaders = !op->use_empty();
  for (Operation *user : op->getUsers()) {
    Operation *top = body.findAncestorOpInBlock(*user);
    onlyFusedReaders &=
        top && top != terminator && role[index.lookup(top)] != Role::Opaque;
  }
  if (onlyFusedReaders)
    return Role::Cloned;
  // A broadcast read elsewhere is materialized by a kernel; a view is not.
  return isa<BroadcastAsOp>(op) ? Role::Fusible : Role::Opaque;
}

Decline FusionGraph::merge(unsigned a, unsigned b, bool dryRun) {
  unsigned x = find(a), y = find(b);
  if (x == y)
    return {};
  if (!fitsFullReduction(x, y))
    return {Decline::Domains};
  if (members[x].size() + members[y].size() > kMaxRegionOps)
    return {Decline::TooLarge};
  if (ord[x] > ord[y])
    std::swap(x, y);
  int64_t lo = ord[x], hi = ord[y];

  // Forward from x through nodes before y: reaching y is a cycle. Each stack
  // entry carries the first node of its path, to name it in a remark.
  SmallVector<unsigned> after, before;
  SmallVector<std::pair<unsigned, unsigned>> stack;
  ++epoch;
  forEachSucc(x, [&](unsigned s) {
    if (s != y && ord[s] < hi)
      stack.push_back({s, s});
  });
  while (!stack.empty()) {
    auto [z, first] = stack.pop_back_val();
    if (mark[z] == epoch)
      continue;
    mark[z] = epoch;
    after.push_back(z);
    if (after.size() > kSearchBudget)
      return {Decline::TooFar};
    bool cycle = false;
    forEachSucc(z, [&, first = first](unsigned s) {
      if (s == y)
        cycle = true;
      else if (ord[s] < hi && mark[s] != epoch)
        stack.push_back({s, first});
    });
    if (cycle)
      return {Decline::Cycle, ops[first]};
  }

  // Backward from y through nodes after x: they must precede the merged
  // group. Not needed when nothing must follow it: it takes y's place.
  if (!after.empty()) {
    ++epoch;
    forEachPred(y, [&](unsigned s) {
      if (s != x && ord[s] > lo)
        stack.push_back({s, s});
    });
    while (!stack.empty()) {
      unsigned z = stack.pop_back_val().first;
      if (mark[z] == epoch)
        continue;
      mark[z] = epoch;
      before.push_back(z);
      if (before.size() > kSearchBudget)
        return {Decline::TooFar};
      forEachPred(z, [&](unsigned s) {
        if (ord[s] > lo && mark[s] != epoch)
          stack.push_back({s, s});
      });
    }
  }
  if (dryRun)
    return {};

  int64_t slot = hi;
  if (!after.empty()) {
    auto byOrd = [&](unsigned p, unsigned q) { return ord[p] < ord[q]; };
    llvm::sort(before, byOrd);
    llvm::sort(after, byOrd);
    SmallVector<int64_t> slots = {lo, hi};
    for (unsigned v : llvm::concat<unsigned>(before, after))
      slots.push_back(ord[v]);
    llvm::sort(slots);
    size_t k = 0;
    for (unsigned v : before)
      ord[v] = slots[k++];
    slot = slots[k++];
    for (unsigned v : after)
      ord[v] = slots[k++];
  }
  if (members[x].size() < members[y].size())
    std::swap(x, y);
  parent[y] = x;
  members[x].append(members[y].begin(), members[y].end());
  members[y].clear();
  ord[x] = slot;
  root[x] = std::max(root[x], root[y]);
  if (!fullInput[x])
    fullInput[x] = fullInput[y];
  for (auto *list : {&readShapes, &writtenShapes}) {
    for (SmallVector<int64_t> &shape : (*list)[y])
      if (!llvm::is_contained((*list)[x], shape))
        (*list)[x].push_back(std::move(shape));
    (*list)[y].clear();
  }
  return {};
}

bool FusionGraph::fitsFullReduction(unsigned x, unsigned y, std::string *why) {
  if (fullInput[x] && fullInput[y] &&
      !succeeded(verifyCompatibleShape(*fullInput[x], *fullInput[y]))) {
    if (why)
      *why = "the regions reduce a " + shapeString(*fullInput[x]) + " and a " +
             shapeString(*fullInput[y]) +
             " tensor to scalars, which no one kernel iterates over";
    return false;
  }
  const std::optional<SmallVector<int64_t>> &full =
      fullInput[x] ? fullInput[x] : fullInput[y];
  if (!full)
    return true;
  // It reads what broadcasts over the reduced shape, and writes that shape
  // or scalars.
  for (unsigned g : {x, y}) {
    for (const SmallVector<int64_t> &shape : readShapes[g])
      if (!broadcastsInto(shape, *full)) {
        if (why)
          *why = "one region reduces a " + shapeString(*full) +
                 " tensor to a scalar and the other reads " +
                 shapeString(shape) + " values, which do not broadcast to it";
        return false;
      }
    for (const SmallVector<int64_t> &shape : writtenShapes[g])
      if (failed(verifyCompatibleShape(shape, *full))) {
        if (why)
          *why = "one region reduces a " + shapeString(*full) +
                 " tensor to a scalar and the other computes " +
                 shapeString(shape) + " values";
        return false;
      }
  }
  return true;
}

bool FusionGraph::onlyFeeds(unsigned pg, unsigned cg) {
  bool sole = true;
  forEachSucc(pg, [&](unsigned s) { sole &= s == cg; });
  return sole;
}

bool FusionGraph::sharesIterationSpace(unsigned pg, unsigned cg) {
  auto key = cast<ShapedType>(keyOf(pg));
  if (key.getRank() == 0)
    return true;
  // The shape, not the element type: a cast of the producer's output to
  // bf16 (loom-mixed-precision's) iterates over the same elements.
  return llvm::any_of(members[cg], [&](unsigned m) {
    return llvm::any_of(ops[m]->getResultTypes(), [&](Type t) {
      auto shaped = dyn_cast<ShapedType>(t);
      return shaped && shaped.hasRank() && shaped.getShape() == key.getShape();
    });
  });
}

bool FusionGraph::fuseIntoSoleConsumers() {
  bool changed = false;
  for (unsigned c = ops.size(); c-- > 0;) {
    if (!isFusible(c))
      continue;
    for (unsigned p : producers[c])
      if (isFusible(p) && find(p) != find(c) && onlyFeeds(find(p), find(c)) &&
          !merge(p, c))
        changed = true;
  }
  return changed;
}

bool FusionGraph::fuseReaders(TypeRange valueTypes, ArrayRef<unsigned> readers,
                              std::optional<unsigned> self) {
  SmallVector<unsigned> groups;
  llvm::SmallDenseSet<unsigned> seen;
  for (unsigned u : readers) {
    unsigned g = find(u);
    if (isFusible(u) && !(self && g == find(*self)) && seen.insert(g).second)
      groups.push_back(g);
  }
  if (groups.size() < 2)
    return false;
  // Only groups of one output shape share a kernel's iteration space.
  llvm::MapVector<Type, SmallVector<unsigned>> byType;
  for (unsigned g : groups) {
    Type key = keyOf(g);
    if (cast<ShapedType>(key).hasStaticShape() ||
        llvm::is_contained(valueTypes, key))
      byType[key].push_back(g);
  }
  bool changed = false;
  for (auto &[key, candidates] : byType) {
    SmallVector<unsigned, kSiblingLeaders> leaders;
    for (unsigned g : candidates) {
      bool joined = false;
      for (unsigned leader : leaders) {
        if (find(leader) == find(g)) {
          joined = true;
          break;
        }
        if (!merge(leader, g)) {
          joined = changed = true;
          break;
        }
      }
      if (!joined && leaders.size() < kSiblingLeaders)
        leaders.push_back(g);
    }
  }
  return changed;
}

bool FusionGraph::fuseSiblings() {
  bool changed = false;
  for (BlockArgument arg : body.getArguments()) {
    SmallVector<unsigned> readers;
    for (Operation *user : arg.getUsers()) {
      Operation *top = body.findAncestorOpInBlock(*user);
      if (!top || top == terminator)
        continue;
      unsigned j = index.lookup(top);
      if (role[j] == Role::Cloned)
        readers.append(users[j].begin(), users[j].end());
      else
        readers.push_back(j);
    }
    changed |= fuseReaders(arg.getType(), readers, std::nullopt);
  }
  for (unsigned i = 0; i < ops.size(); ++i)
    if (role[i] != Role::Cloned && !isClonedConstant(ops[i]))
      changed |= fuseReaders(ops[i]->getResultTypes(), users[i], i);
  return changed;
}

bool FusionGraph::fuseMultiOutput() {
  bool changed = false;
  for (unsigned p = 0; p < ops.size(); ++p) {
    if (!isFusible(p))
      continue;
    SmallVector<unsigned> consumers;
    for (unsigned u : users[p])
      if (isFusible(u) && find(u) != find(p) &&
          !llvm::is_contained(consumers, find(u)))
        consumers.push_back(find(u));
    llvm::sort(consumers,
               [&](unsigned a, unsigned b) { return ord[a] < ord[b]; });
    for (unsigned c : consumers)
      if (find(c) != find(p) && sharesIterationSpace(find(p), find(c)) &&
          !merge(p, c))
        changed = true;
  }
  return changed;
}

void FusionGraph::fuse() {
  fuseIntoSoleConsumers();
  // Each round merges at least two groups or stops.
  for (bool changed = true; changed;) {
    changed = fuseSiblings();
    changed |= fuseIntoSoleConsumers();
    changed |= fuseMultiOutput();
  }
}

void FusionGraph::explainDeclinedEdges() {
  llvm::DenseSet<std::pair<unsigned, unsigned>> explained;
  for (unsigned c = 0; c < ops.size(); ++c) {
    for (unsigned p : producers[c]) {
      std::string why;
      if (!isFusible(p) && !isFusible(c))
        continue;
      if (!isFusible(p) || !isFusible(c)) {
        unsigned outside = isFusible(p) ? c : p;
        if (isRowWise(ops[outside], &why) || why.empty() ||
            !explained.insert({outside, outside}).second)
          continue;
        ops[outside]->emitRemark("stays outside regions: ") << why;
        continue;
      }
      unsigned pg = find(p), cg = find(c);
      if (pg == cg || !explained.insert({pg, cg}).second)
        continue;
      auto remark = ops[c]->emitRemark("not fused with its operand from ")
                    << describe(ops[p]) << ": ";
      if (!onlyFeeds(pg, cg) && !sharesIterationSpace(pg, cg)) {
        remark << "the producer's region is read elsewhere too, and this "
                  "region computes nothing of its output shape "
               << keyOf(pg);
        continue;
      }
      Decline d = merge(pg, cg, /*dryRun=*/true);
      if (d.kind == Decline::Cycle)
        remark << describe(d.via)
               << " depends on the producer's region and feeds the "
                  "consumer's, so one region would be a cycle";
      else if (d.kind == Decline::TooFar)
        remark << "the two are too far apart to rule out a cycle within "
               << kSearchBudget << " nodes";
      else if (d.kind == Decline::TooLarge)
        remark << "one region would hold more than " << kMaxRegionOps
               << " ops";
      else if (d.kind == Decline::Domains) {
        std::string why;
        fitsFullReduction(pg, cg, &why);
        remark << why;
      } else
        remark << "no round tried this merge";
    }
  }
}

bool FusionGraph::readOutside(Value v, unsigned g) {
  for (Operation *user : v.getUsers()) {
    Operation *top = body.findAncestorOpInBlock(*user);
    if (!top || top == terminator)
      return true;
    unsigned j = index.lookup(top);
    if (role[j] == Role::Cloned) {
      for (Value r : top->getResults())
        if (readOutside(r, g))
          return true;
    } else if (find(j) != g) {
      return true;
    }
  }
  return false;
}

void FusionGraph::writeRegion(unsigned g, ArrayRef<unsigned> groupMembers,
                              ArrayRef<Value> outputs) {
  auto *block = new Block();
  OpBuilder b(terminator->getContext());
  b.setInsertionPointToEnd(block);
  IRMapping map;
  SmallVector<Value> inputs;
  // A value the region reads: cloned in when it is a broadcast, view or
  // small constant, else an input (in order of first use).
  std::function<Value(Value)> resolve = [&](Value v) -> Value {
    if (Value inside = map.lookupOrNull(v))
      return inside;
    Operation *def = v.getDefiningOp();
    auto it = def ? index.find(def) : index.end();
    if (it != index.end() &&
        (role[it->second] == Role::Cloned || isClonedConstant(def))) {
      for (Value operand : def->getOperands())
        resolve(operand);
      b.clone(*def, map);
      return map.lookup(v);
    }
    inputs.push_back(v);
    Value arg = block->addArgument(v.getType(), v.getLoc());
    map.map(v, arg);
    return arg;
  };
  SmallPtrSet<Operation *, 16> memberOps;
  for (unsigned m : groupMembers) {
    for (Value operand : ops[m]->getOperands())
      resolve(operand);
    b.clone(*ops[m], map);
    memberOps.insert(ops[m]);
  }
  SmallVector<Value> yielded;
  for (Value v : outputs)
    yielded.push_back(map.lookup(v));
  Location loc = ops[root[g]]->getLoc();
  b.create<YieldOp>(loc, yielded);

  OpBuilder outer(terminator);
  auto fusion = outer.create<FusionOp>(loc, ValueRange(outputs).getTypes(),
                                       ValueRange(inputs));
  fusion.getBody().push_back(block);
  for (auto [output, r] : llvm::zip(outputs, fusion.getResults()))
    Value(output).replaceUsesWithIf(
        r, [&](OpOperand &use) { return !memberOps.contains(use.getOwner()); });
  written[g] = fusion;
}

LogicalResult FusionGraph::rewrite() {
  // What each group yields is decided on the IR as it was.
  llvm::MapVector<unsigned, SmallVector<unsigned>> groups;
  for (unsigned i = 0; i < ops.size(); ++i)
    if (isFusible(i))
      groups[find(i)].push_back(i);
  std::vector<SmallVector<Value>> outputs;
  for (auto &[g, groupMembers] : groups) {
    outputs.emplace_back();
    for (unsigned m : groupMembers)
      for (Value r : ops[m]->getResults())
        if (readOutside(r, g))
          outputs.back().push_back(r);
  }
  for (auto [group, out] : llvm::zip(groups, outputs))
    if (!out.empty()) // A group nobody reads is dead code.
      writeRegion(group.first, group.second, out);

  // Members, and the clones' originals, are now read only by each other.
  std::vector<bool> erased(ops.size(), false);
  for (unsigned i = ops.size(); i-- > 0;) {
    Operation *op = ops[i];
    if (role[i] == Role::Opaque && !isClonedConstant(op))
      continue;
    if (!op->use_empty()) {
      if (role[i] != Role::Opaque)
        return op->emitError("loom-fuse-elementwise: still read after "
                             "its region was written");
      continue;
    }
    op->erase();
    erased[i] = true;
  }

  SmallVector<std::pair<int64_t, Operation *>> order;
  for (unsigned i = 0; i < ops.size(); ++i)
    if (!erased[i] && role[i] == Role::Opaque)
      order.push_back({ord[i], ops[i]});
  for (auto [g, fusion] : written)
    order.push_back({ord[g], fusion});
  llvm::sort(order, llvm::less_first());
  for (auto [position, op] : order)
    op->moveBefore(terminator);
  return success();
}

namespace {

struct LoomFuseElementwisePass
    : loom::impl::LoomFuseElementwiseBase<LoomFuseElementwisePass> {
  using LoomFuseElementwiseBase::LoomFuseElementwiseBase;

  void runOnOperation() override {
    func::FuncOp fn = getOperation();
    // Loom's functions have one block; leave anything else alone.
    if (fn.isExternal() || !fn.getBody().hasOneBlock())
      return;
    FusionGraph graph(fn.getBody().front());
    graph.fuse();
    if (remarks)
      graph.explainDeclinedEdges();
    if (failed(graph.rewrite()))
      signalPassFailure();
  }
};

} // namespace
