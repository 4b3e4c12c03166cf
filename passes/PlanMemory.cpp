//===- PlanMemory.cpp - Schedule, liveness and arena offsets --------------===//
//
// Gives every temporary of every function a byte offset in one arena, sized
// for the largest batch the bounds allow, so that the runtime allocates once
// and a kernel's output pointer is `arena + offset`:
//
//   // At most 128 rows of 8 floats: 4096 bytes per [batch, 8] value.
//   func.func @f(%x {loom.dims = ["batch", ""]}, %w {loom.param = "w"})
//       attributes {loom.arena_bytes = 8192, loom.naive_bytes = 12288,
//                   loom.live_lower_bound_bytes = 8192, ...} {
//     %a = loom.matmul %x, %w {loom.offsets = array<i64: 0>}
//     %b = loom.exp %a {loom.offsets = array<i64: 0>}     // in place over %a
//     %c = loom.reshape %b {loom.offsets = array<i64: 0>} // a view of %b
//     %d = loom.matmul %c, %w {loom.offsets = array<i64: 4096>}
//     %e = loom.relu %d              // returned: a persistent output
//     return %e
//
// 1. Sizes. `SymbolicShapes` names every dynamic dim from the inputs'
//    `loom.dims` and bounds each value's bytes (max-tokens, max-len,
//    max-batch); a dim it cannot name is an error.
// 2. Schedule. The block order, which the frontend and the passes already
//    emit producer before consumer and close to its uses; no reordering.
// 3. Storage. Values share storage where no copy is needed: a reshape,
//    reshape_as or expand_dims is a view of its operand, as is a leading-dim
//    slice of an argument (the q/k/v rows of a packed projection weight). An
//    elementwise op (unary, binary, select, compare, cast, dropout, or a
//    loom.fusion result) writes in place over an operand of the same shape
//    and size whose storage it is the last to read.
// 4. Kinds. Storage rooted at an argument is persistent (parameters,
//    optimizer state, inputs, decode caches), as is a function result
//    (`loom.output`); constants are the executable's read-only data; the
//    rest are temporaries with a live range [first definition, last use].
//    A result named like an input ("param.w" for `loom.param = "w"`,
//    "exp_avg.w", "self_k.0") is written over that input, which is legal only
//    if nothing reads the input after the op that produces the result.
// 5. Offsets. Best fit, largest first (MemoryPlan.h), every buffer 64-byte
//    aligned. The plan is recorded as `loom.offsets` (one per result, -1
//    outside the arena) and, on the function, the arena size beside the most
//    bytes live at once (no layout of this schedule needs less), the sum of
//    all temporaries (no reuse at all), of those the 16-bit float copies
//    that mixed precision adds (loom.narrow_copy_bytes, where there are
//    any) and the persistent bytes.
//
//===----------------------------------------------------------------------===//

#include "abi/ModelAbi.h"
#include "ir/ArenaPlan.h"
#include "ir/ShapeUtils.h"
#include "passes/MemoryPlan.h"
#include "passes/Passes.h"
#include "passes/SymbolicShapes.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"

namespace loom {
#define GEN_PASS_DEF_LOOMPLANMEMORY
#include "passes/Passes.h.inc"
} // namespace loom

using namespace mlir;
using namespace loom;

namespace {

enum class StorageKind { Argument, Output, Constant, Temporary };

/// Ops whose result may overwrite an operand of the same shape: each output
/// element depends only on the input elements at its own index, or (row-wise
/// ops) only on its own row of the last dim, which a kernel reads whole
/// before it writes that row. Over the logits, cross_entropy_grad in place
/// saves a [tokens, vocab] buffer, the largest of a training step.
bool writesInPlace(Operation *op) {
  if (auto softmax = dyn_cast<SoftmaxOp>(op))
    return softmax.getAxis() ==
           uint64_t(cast<ShapedType>(softmax.getType()).getRank() - 1);
  if (auto logSoftmax = dyn_cast<LogSoftmaxOp>(op))
    return logSoftmax.getAxis() ==
           uint64_t(cast<ShapedType>(logSoftmax.getType()).getRank() - 1);
  return op->hasTrait<loom::OpTrait::ElementwiseMap>() ||
         isa<FusionOp, LayerNormOp, CrossEntropyGradOp>(op);
}

/// Bytes of one element of `v`. Padding makes a bf16 value and an f32 value
/// of 16 elements the same size, but one cannot overwrite the other element
/// by element.
int64_t elementWidth(Value v) {
  return elementByteWidth(cast<ShapedType>(v.getType()).getElementType());
}

/// Whether `op`'s result is its first operand's bytes, reinterpreted.
bool isView(Operation *op) {
  return op->hasTrait<loom::OpTrait::ViewOfOperand>();
}

/// A slice that is a contiguous piece of its operand: every dim before the
/// sliced one has size 1.
bool isContiguousSlice(SliceOp op) {
  auto type = cast<RankedTensorType>(op.getInput().getType());
  auto axis = normalizeAxis(op.getDim(), type.getRank());
  if (!axis)
    return false;
  for (int64_t i = 0; i < *axis; ++i)
    if (type.getDimSize(i) != 1)
      return false;
  return true;
}

class FunctionPlanner {
public:
  FunctionPlanner(func::FuncOp fn, const SizeBounds &bounds)
      : fn(fn), bounds(bounds) {}

  LogicalResult run();

private:
  LogicalResult computeBytes();
  void computeLiveness();
  void assignStorage();
  LogicalResult checkInPlaceOutputs();
  void recordPlan();

  Value rootOf(Value v) { return root.lookup(v); }
  StorageKind kindOf(Value storage) {
    if (isa<BlockArgument>(storage))
      return StorageKind::Argument;
    if (returned.contains(storage))
      return StorageKind::Output;
    if (isa_and_nonnull<ConstantOp>(storage.getDefiningOp()))
      return StorageKind::Constant;
    return StorageKind::Temporary;
  }
  int64_t stepOf(Value v) {
    auto result = dyn_cast<OpResult>(v);
    return result ? step.lookup(result.getOwner()) : -1;
  }

  func::FuncOp fn;
  SizeBounds bounds;
  SymbolicShapes shapes;
  Block *body = nullptr;
  llvm::DenseMap<Operation *, int64_t> step;
  llvm::DenseMap<Value, int64_t> bytes, lastUse;
  llvm::DenseSet<Value> returned;
  /// The value whose storage each value uses (itself when it owns it).
  llvm::DenseMap<Value, Value> root;
  llvm::DenseMap<Value, SmallVector<Value, 2>> members;
  llvm::DenseSet<Value> views;
};

LogicalResult FunctionPlanner::run() {
  if (!fn.getBody().hasOneBlock())
    return fn.emitError("loom-plan-memory: @")
           << fn.getSymName() << " has more than one block";
  body = &fn.getBody().front();
  if (failed(shapes.analyze(fn)) || failed(computeBytes()))
    return failure();
  computeLiveness();
  assignStorage();
  if (failed(checkInPlaceOutputs()))
    return failure();
  recordPlan();
  return success();
}

/// Every value's bytes at the bounds, rounded up to the alignment.
LogicalResult FunctionPlanner::computeBytes() {
  auto size = [&](Value v, Location loc) -> LogicalResult {
    auto type = cast<RankedTensorType>(v.getType());
    int64_t width = elementByteWidth(type.getElementType());
    std::optional<int64_t> n = shapes.bound(shapes.numel(v), bounds);
    int64_t total;
    if (!width)
      return emitError(loc, "loom-plan-memory: cannot place elements of ")
             << type.getElementType();
    if (!n || __builtin_mul_overflow(*n, width, &total) ||
        total > INT64_MAX - kArenaAlignment)
      return emitError(loc, "loom-plan-memory: the size of a ")
             << type << " value (" << shapes.shapeString(v)
             << ") overflows at these bounds";
    bytes[v] =
        (total + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
    return success();
  };
  for (BlockArgument arg : body->getArguments())
    if (failed(size(arg, fn.getLoc())))
      return failure();
  for (Operation &op : body->getOperations())
    for (Value r : op.getResults())
      if (failed(size(r, op.getLoc())))
        return failure();
  return success();
}

void FunctionPlanner::computeLiveness() {
  int64_t index = 0;
  for (Operation &op : body->getOperations())
    step[&op] = index++;
  auto lastUseOf = [&](Value v) {
    int64_t last = stepOf(v);
    for (Operation *user : v.getUsers())
      if (Operation *inBlock = body->findAncestorOpInBlock(*user))
        last = std::max(last, step.lookup(inBlock));
    return last;
  };
  for (BlockArgument arg : body->getArguments())
    lastUse[arg] = lastUseOf(arg);
  for (Operation &op : body->getOperations())
    for (Value r : op.getResults())
      lastUse[r] = lastUseOf(r);
  for (Value v : body->getTerminator()->getOperands())
    returned.insert(v);
  // An all-reduce runs from where it stands to where it is waited for: its
  // operands are read until then (and its results written from its step).
  for (auto allReduce : body->getOps<AllReduceOp>()) {
    int64_t wait = step.lookup(allReduce.waitPoint());
    for (Value operand : allReduce.getOperands())
      lastUse[operand] = std::max(lastUse[operand], wait);
  }
}

void FunctionPlanner::assignStorage() {
  auto join = [&](Value v, Value storage) {
    root[v] = storage;
    members[storage].push_back(v);
  };
  // The last step at which any value of `storage` is read, so far: values
  // that join later are made from reads of these, so a storage whose
  // values are all read for the last time at step s stays dead after s.
  auto endOf = [&](Value storage) {
    int64_t end = -1;
    for (Value m : members[storage])
      end = std::max(end, lastUse.lookup(m));
    return end;
  };
  for (BlockArgument arg : body->getArguments())
    join(arg, arg);
  for (Operation &op : body->without_terminator()) {
    llvm::SmallDenseSet<Value, 4> claimed;
    for (Value r : op.getResults()) {
      if (returned.contains(r)) {
        join(r, r);
        continue;
      }
      if (isView(&op)) {
        views.insert(r);
        join(r, rootOf(op.getOperand(0)));
        continue;
      }
      if (auto slice = dyn_cast<SliceOp>(op)) {
        Value storage = rootOf(slice.getInput());
        StorageKind kind = kindOf(storage);
        if ((kind == StorageKind::Argument || kind == StorageKind::Constant) &&
            isContiguousSlice(slice)) {
          views.insert(r);
          join(r, storage);
          continue;
        }
      }
      Value target;
      if (writesInPlace(&op))
        for (Value x : op.getOperands()) {
          Value storage = rootOf(x);
          // Another view of the same bytes may be read at other indices
          // (a broadcast row of a reshaped copy): no overwriting then.
          bool readOtherwise = llvm::any_of(op.getOperands(), [&](Value y) {
            return y != x && rootOf(y) == storage;
          });
          if (kindOf(storage) == StorageKind::Temporary && !readOtherwise &&
              !claimed.contains(storage) && endOf(storage) == step[&op] &&
              shapes.sameShape(x, r) && elementWidth(x) == elementWidth(r) &&
              bytes[storage] == bytes[r]) {
            target = storage;
            break;
          }
        }
      if (target) {
        claimed.insert(target);
        join(r, target);
      } else {
        join(r, r);
      }
    }
  }
}

/// The name of the input each argument is, as an output would name it.
static std::string inputName(func::FuncOp fn, unsigned i) {
  if (auto param = fn.getArgAttrOfType<StringAttr>(i, kParamAttr))
    return abi::kUpdatedParamPrefix + param.getValue().str();
  for (const char *attr : {kOptStateAttr, kInputAttr})
    if (auto name = fn.getArgAttrOfType<StringAttr>(i, attr))
      return name.getValue().str();
  return "";
}

LogicalResult FunctionPlanner::checkInPlaceOutputs() {
  llvm::StringMap<BlockArgument> inputs;
  for (BlockArgument arg : body->getArguments()) {
    std::string name = inputName(fn, arg.getArgNumber());
    if (!name.empty())
      inputs[name] = arg;
  }
  Operation *ret = body->getTerminator();
  for (auto [i, v] : llvm::enumerate(ret->getOperands())) {
    auto name = fn.getResultAttrOfType<StringAttr>(i, kOutputAttr);
    if (!name || !inputs.count(name.getValue()))
      continue;
    BlockArgument arg = inputs[name.getValue()];
    if (v == arg)
      continue;
    Operation *producer = v.getDefiningOp();
    if (!producer)
      return fn.emitError("loom-plan-memory: output \"")
             << name.getValue() << "\" of @" << fn.getSymName()
             << " must be written over its input, but it is another argument";
    // Nothing may read the input, or a view of it, after it is overwritten.
    for (Value m : members[arg]) {
      if (lastUse[m] <= step[producer])
        continue;
      for (Operation *user : m.getUsers()) {
        Operation *inBlock = body->findAncestorOpInBlock(*user);
        if (!inBlock || step[inBlock] <= step[producer])
          continue;
        InFlightDiagnostic diag =
            user->emitError("loom-plan-memory: output \"")
            << name.getValue() << "\" of @" << fn.getSymName()
            << " is written over its input, but this op reads the input "
               "after the op that writes it";
        diag.attachNote(producer->getLoc()) << "the output is written here";
        return diag;
      }
    }
  }
  return success();
}

void FunctionPlanner::recordPlan() {
  MLIRContext *ctx = fn.getContext();
  Builder b(ctx);

  // Temporaries: one buffer per storage, live from its first definition to
  // the last read of any value in it.
  std::vector<BufferLifetime> buffers;
  llvm::DenseMap<Value, size_t> bufferOf;
  int64_t naive = 0, narrow = 0;
  for (Operation &op : body->without_terminator())
    for (Value r : op.getResults()) {
      Value storage = rootOf(r);
      if (kindOf(storage) != StorageKind::Temporary)
        continue;
      if (!views.contains(r)) {
        naive += bytes[r];
        if (isa<BFloat16Type, Float16Type>(getElementTypeOrSelf(r)))
          narrow += bytes[r];
      }
      auto [it, inserted] = bufferOf.try_emplace(storage, buffers.size());
      if (inserted)
        buffers.push_back({step[&op], step[&op], bytes[storage]});
      BufferLifetime &buffer = buffers[it->second];
      buffer.end = std::max(buffer.end, lastUse[r]);
      buffer.bytes = std::max(buffer.bytes, bytes[r]);
    }
  ArenaLayout layout = packBuffers(buffers);

  for (Operation &op : body->without_terminator()) {
    op.removeAttr(kOffsetsAttr);
    SmallVector<int64_t> offsets;
    bool any = false;
    for (Value r : op.getResults()) {
      auto it = bufferOf.find(rootOf(r));
      offsets.push_back(it == bufferOf.end() ? -1 : layout.offsets[it->second]);
      any |= it != bufferOf.end();
    }
    if (any)
      op.setAttr(kOffsetsAttr, b.getDenseI64ArrayAttr(offsets));
  }

  // Persistent: every argument, every output that is not written over an
  // input, and what an in-place output outgrows its input by (a decode
  // cache grows by one position).
  int64_t persistent = 0;
  for (BlockArgument arg : body->getArguments())
    persistent += bytes[arg];
  llvm::StringMap<int64_t> inputBytes;
  for (BlockArgument arg : body->getArguments()) {
    std::string name = inputName(fn, arg.getArgNumber());
    if (!name.empty())
      inputBytes[name] = bytes[arg];
  }
  for (auto [i, v] : llvm::enumerate(body->getTerminator()->getOperands())) {
    auto name = fn.getResultAttrOfType<StringAttr>(i, kOutputAttr);
    auto input = name ? inputBytes.find(name.getValue()) : inputBytes.end();
    if (input == inputBytes.end())
      persistent += bytes[v];
    else
      persistent += std::max<int64_t>(0, bytes[v] - input->second);
  }

  auto i64 = [&](int64_t v) { return b.getI64IntegerAttr(v); };
  fn->setAttr(kArenaBytesAttr, i64(layout.arenaBytes));
  fn->setAttr(kLiveLowerBoundAttr, i64(liveLowerBound(buffers)));
  fn->setAttr(kNaiveBytesAttr, i64(naive));
  fn->setAttr(kPersistentBytesAttr, i64(persistent));
  if (narrow > 0)
    fn->setAttr(kNarrowCopyBytesAttr, i64(narrow));
  else
    fn->removeAttr(kNarrowCopyBytesAttr);
}

struct LoomPlanMemoryPass : loom::impl::LoomPlanMemoryBase<LoomPlanMemoryPass> {
  using LoomPlanMemoryBase::LoomPlanMemoryBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (maxTokens <= 0 || maxLen <= 0 || maxBatch <= 0) {
      module.emitError("loom-plan-memory: max-tokens, max-len and max-batch "
                       "must be positive");
      return signalPassFailure();
    }
    SizeBounds bounds{maxTokens, maxLen, maxBatch};
    bool ok = true;
    for (auto fn : module.getOps<func::FuncOp>())
      if (!fn.isExternal())
        ok &= succeeded(FunctionPlanner(fn, bounds).run());
    if (!ok)
      signalPassFailure();
  }
};

} // namespace
