//===- RegionLowering.cpp - A region graph as a kernel function -----------===//
//
// Planning comes first, per stage that walks the rows:
//   - the Row and Column nodes its rows need (from the reductions it
//     finishes and, in the last such stage, the results);
//   - the last column loop: every result is written there, after every read
//     of the row, so a result may overwrite its own operand;
//   - which Column values a later loop reloads from a per-row scratch buffer
//     instead of recomputing (exp(x - max) in softmax: recomputing costs more
//     than a store and a load from L1; x - mean in layer norm is cheaper to
//     recompute).
// Then the function's entry: pointers, sizes and strides from `dims`, the
// scratch buffer; the loops follow the plan (KernelLoops.cpp). LLVM hoists
// what is loop-invariant (the key of a dropout site, broadcasts of row
// values) and removes what is unused.
//
//===----------------------------------------------------------------------===//

#include "codegen/cpu/RegionLowering.h"
#include "codegen/cpu/KernelEmitter.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace loom;
using namespace loom::cpu;
using namespace loom::codegen;

/// Recomputing a value costs more than this: a later loop reloads it.
static constexpr int kScratchCost = 8;

//===----------------------------------------------------------------------===//
// Planning
//===----------------------------------------------------------------------===//

void KernelEmitter::collect(unsigned n, StagePlan &p) {
  const Node &node = g.nodes[n];
  if (node.level == Level::Global || !p.needed.insert(n).second)
    return;
  for (unsigned i : node.inputs)
    collect(i, p);
}

int KernelEmitter::cost(unsigned n) {
  if (costs[n] >= 0)
    return costs[n];
  const Node &node = g.nodes[n];
  int c = 1;
  switch (node.kind) {
  case NodeKind::Leaf:
    return costs[n] = 1;
  case NodeKind::Splat:
    return costs[n] = 0;
  case NodeKind::PassThrough:
    c = 0;
    break;
  case NodeKind::Dropout:
    c = 15;
    break;
  case NodeKind::Unary:
    switch (UnaryFn(node.fn)) {
    case UnaryFn::Exp:
    case UnaryFn::Log:
    case UnaryFn::Tanh:
    case UnaryFn::Erf:
    case UnaryFn::Sigmoid:
    case UnaryFn::Gelu:
      c = 10;
      break;
    case UnaryFn::Sin:
    case UnaryFn::Cos:
      c = 40;
      break;
    case UnaryFn::Sqrt:
    case UnaryFn::Rsqrt:
      c = 4;
      break;
    default:
      break;
    }
    break;
  case NodeKind::Binary:
    c = BinaryFn(node.fn) == BinaryFn::Pow   ? 40
        : BinaryFn(node.fn) == BinaryFn::Div ? 4
                                             : 1;
    break;
  default:
    break;
  }
  for (unsigned i : node.inputs)
    if (g.nodes[i].level == Level::Column)
      c += cost(i);
  return costs[n] = c;
}

void KernelEmitter::planScratch(StagePlan &p) {
  // From the last loop down: a value of an earlier phase that a loop needs
  // is recomputed there when cheap, else stored by its own loop, which is
  // planned after (so it sees the store as one of its targets).
  for (int q = p.lastLoop; q >= 0; --q) {
    llvm::DenseSet<unsigned> seen;
    std::function<void(unsigned)> visit = [&](unsigned n) {
      const Node &node = g.nodes[n];
      if (node.level != Level::Column || !seen.insert(n).second)
        return;
      if (int(node.phase) < q) {
        if (p.scratch.count(n))
          return;
        if (cost(n) >= kScratchCost) {
          p.scratch.insert(n);
          p.scratchStores[node.phase].push_back(n);
          return;
        }
      }
      for (unsigned i : node.inputs)
        visit(i);
    };
    for (unsigned r : p.reductions[q])
      visit(g.nodes[r].inputs[0]);
    for (unsigned s : SmallVector<unsigned>(p.scratchStores[q]))
      for (unsigned i : g.nodes[s].inputs)
        visit(i);
    if (q == p.lastLoop && p.writesResults)
      for (unsigned r : g.results)
        visit(r);
  }
}

void KernelEmitter::plan() {
  costs.assign(g.nodes.size(), -1);
  int finalStage = -1;
  for (unsigned r : g.results)
    if (g.nodes[r].level != Level::Global)
      finalStage = std::max(finalStage, int(g.nodes[r].stage));
  for (auto [n, node] : llvm::enumerate(g.nodes))
    if (node.kind == NodeKind::FullReduce)
      plans[node.stage - 1].fullReduces.push_back(n);
  if (finalStage >= 0)
    plans[finalStage].writesResults = true;

  for (auto &[stage, p] : plans) {
    p.stage = stage;
    for (unsigned f : p.fullReduces)
      collect(g.nodes[f].inputs[0], p);
    if (p.writesResults)
      for (unsigned r : g.results)
        collect(r, p);
    for (unsigned n = 0; n < g.nodes.size(); ++n) {
      const Node &node = g.nodes[n];
      if (!p.needed.count(n))
        continue;
      if (node.kind == NodeKind::RowReduce)
        p.lastLoop = std::max(p.lastLoop, int(g.nodes[node.inputs[0]].phase));
      if (p.writesResults && node.level == Level::Column &&
          llvm::is_contained(g.results, n))
        p.lastLoop = std::max(p.lastLoop, int(node.phase));
    }
    p.reductions.resize(p.lastLoop + 1);
    p.scratchStores.resize(p.lastLoop + 1);
    for (unsigned n = 0; n < g.nodes.size(); ++n)
      if (p.needed.count(n) && g.nodes[n].kind == NodeKind::RowReduce)
        p.reductions[g.nodes[g.nodes[n].inputs[0]].phase].push_back(n);
    planScratch(p);
  }
}

//===----------------------------------------------------------------------===//
// Set-up
//===----------------------------------------------------------------------===//

Value KernelEmitter::dimValue(const DimExpr &d) { return m.dimValue(d, dims); }

Access KernelEmitter::accessFor(const ShapeExpr &shape, Value ptr) {
  Access a;
  a.ptr = ptr;
  SmallVector<Value> strides = m.domainStrides(shape, g.rank(), dims);
  a.rowStrides.assign(strides.begin(), strides.end() - (g.rank() ? 1 : 0));
  if (!shape.empty()) {
    a.colStride = strides.back();
    a.unitColumn = shape.back().isStatic() && shape.back().size != 1;
  }
  return a;
}

void KernelEmitter::setUp() {
  MLIRContext *ctx = b.getContext();
  auto ptrType = LLVM::LLVMPointerType::get(ctx);
  Type i64 = b.getI64Type();
  unsigned numTensors = g.operandTypes.size() + g.resultTypes.size();
  for (unsigned i = 0; i < numTensors; ++i) {
    Value addr = b.create<LLVM::GEPOp>(loc, ptrType, ptrType, argsPtr,
                                       ArrayRef<LLVM::GEPArg>{int32_t(i)});
    basePtrs.push_back(b.create<LLVM::LoadOp>(loc, ptrType, addr, 8));
  }
  unsigned numDims = 0;
  for (auto t : g.operandTypes)
    numDims += t.getRank();
  for (auto t : g.resultTypes)
    numDims += t.getRank();
  for (unsigned i = 0; i < numDims; ++i) {
    Value addr = b.create<LLVM::GEPOp>(loc, ptrType, i64, dimsPtr,
                                       ArrayRef<LLVM::GEPArg>{int32_t(i)});
    dims.push_back(b.create<LLVM::LoadOp>(loc, i64, addr, 8));
  }
  for (const DimExpr &d : g.domain)
    domain.push_back(dimValue(d));
  cols = g.rank() == 0 ? m.i64(1) : domain.back();
  // A caller that counts rows differently (operands seen through views
  // line up differently) must not make the kernel leave its domain.
  Value rows = m.i64(1);
  for (size_t d = 0; d + 1 < domain.size(); ++d)
    rows = m.mul(rows, domain[d]);
  rowEnd = b.create<arith::MinSIOp>(loc, rowEnd, rows);

  // Every column loop assumes unit strides along columns; a tensor that
  // broadcasts along columns at run time sends all columns to the scalar
  // loop, which handles any stride.
  Value allUnit = b.create<arith::ConstantIntOp>(loc, 1, 1);
  auto requireUnit = [&](const ShapeExpr &shape, Level level) {
    if (level != Level::Column || shape.empty() || shape.back().isStatic())
      return;
    Value same = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq,
                                         dimValue(shape.back()), cols);
    allUnit = b.create<arith::AndIOp>(loc, allUnit, same);
  };

  unsigned numConstants = 0;
  for (auto [n, node] : llvm::enumerate(g.nodes)) {
    if (node.kind == NodeKind::Leaf) {
      Value ptr;
      if (node.operand >= 0) {
        ptr = basePtrs[node.operand];
      } else {
        // A constant array: an internal global of the shared object.
        Type storage = m.storageType(node.memoryType);
        int64_t count = node.array.getNumElements();
        auto flat = RankedTensorType::get({count}, storage);
        DenseElementsAttr data;
        if (node.memoryType.isInteger(1)) {
          SmallVector<int8_t> bytes;
          DenseElementsAttr array = node.array;
          for (bool v : array.getValues<bool>())
            bytes.push_back(v);
          data = DenseElementsAttr::get(flat, ArrayRef<int8_t>(bytes));
        } else {
          data = DenseElementsAttr(node.array).reshape(flat);
        }
        OpBuilder top(module.getBodyRegion());
        auto global = top.create<LLVM::GlobalOp>(
            loc, LLVM::LLVMArrayType::get(storage, count), /*isConstant=*/true,
            LLVM::Linkage::Internal,
            symbol + "_c" + std::to_string(numConstants++), data);
        ptr = b.create<LLVM::AddressOfOp>(loc, global);
      }
      leafAccess[n] = accessFor(node.shape, ptr);
      requireUnit(node.shape, node.level);
    } else if (node.kind == NodeKind::Dropout) {
      dropoutAccess[n] = accessFor(node.shape, nullptr);
      Value addr = b.create<LLVM::GEPOp>(
          loc, ptrType, i64, offsetsPtr,
          ArrayRef<LLVM::GEPArg>{int32_t(dropoutOffset.size())});
      dropoutOffset[n] = b.create<LLVM::LoadOp>(loc, i64, addr, 8);
      requireUnit(node.shape, node.level);
    } else if (node.kind == NodeKind::RowReduce ||
               node.kind == NodeKind::FullReduce) {
      Value count = m.i64(1);
      const ShapeExpr &reduced = node.reducedShape;
      if (node.kind == NodeKind::RowReduce)
        count = dimValue(reduced.back());
      else
        for (const DimExpr &d : reduced)
          count = m.mul(count, dimValue(d));
      counts[n] = b.create<arith::SIToFPOp>(loc, node.computeType, count);
    }
    if (node.kind == NodeKind::FullReduce) {
      // Rows that broadcast the reduced tensor see its elements again; only
      // the last row of each such run adds them.
      SmallVector<std::pair<unsigned, Value>> guards;
      size_t k = node.reducedShape.size(), rank = g.rank();
      for (size_t d = 0; d + 1 < rank; ++d) {
        int64_t j = int64_t(d) - int64_t(rank - k);
        DimExpr dim = j < 0 ? DimExpr{} : node.reducedShape[j];
        if (dim == g.domain[d])
          continue;
        guards.push_back(
            {unsigned(d), dim.isStaticOne() ? Value() : dimValue(dim)});
      }
      fullGuards[n] = std::move(guards);
    }
  }
  for (auto [i, type] : llvm::enumerate(g.resultTypes)) {
    ShapeExpr shape = shapeOfType(type, g.resultDims[i]);
    resultAccess.push_back(
        accessFor(shape, basePtrs[g.operandTypes.size() + i]));
    requireUnit(shape, g.nodes[g.results[i]].level);
    SmallVector<unsigned> guards;
    if (g.guardedResults[i])
      for (size_t d = 0; d + 1 < g.rank(); ++d) {
        int64_t j = int64_t(d) - int64_t(g.rank() - shape.size());
        if ((j < 0 || shape[j].isStaticOne()) && !g.domain[d].isStaticOne())
          guards.push_back(d);
      }
    resultGuards.push_back(std::move(guards));
  }
  auto vectorEnd = [&](unsigned step) -> Value {
    if (lanes == 1)
      return m.i64(0);
    Value whole = b.create<arith::SubIOp>(
        loc, cols, b.create<arith::RemUIOp>(loc, cols, m.i64(step)));
    return b.create<arith::SelectOp>(loc, allUnit, whole, m.i64(0));
  };
  vecEnd = vectorEnd(lanes);
  unrolledEnd = vectorEnd(lanes * kReductionUnroll);
}

void KernelEmitter::allocateScratch() {
  // One buffer per call: a row of each reloaded value, and a row for each
  // guarded result to write its non-final rows into.
  SmallVector<std::pair<unsigned, unsigned>> rows; // node, bytes per column
  llvm::DenseSet<unsigned> all;
  for (auto &[stage, p] : plans)
    for (unsigned n = 0; n < g.nodes.size(); ++n)
      if (p.scratch.count(n) && all.insert(n).second)
        rows.push_back({n, std::max(1u, m.storageType(g.nodes[n].computeType)
                                                .getIntOrFloatBitWidth() /
                                            8)});
  SmallVector<unsigned> redirectBytes;
  for (auto [i, type] : llvm::enumerate(g.resultTypes))
    redirectBytes.push_back(
        g.guardedResults[i]
            ? std::max(
                  1u,
                  m.storageType(type.getElementType()).getIntOrFloatBitWidth() /
                      8)
            : 0);
  redirectPtr.assign(g.resultTypes.size(), Value());
  if (rows.empty() &&
      llvm::all_of(redirectBytes, [](unsigned x) { return x == 0; }))
    return;

  MLIRContext *ctx = b.getContext();
  auto ptrType = LLVM::LLVMPointerType::get(ctx);
  Value total = m.i64(64);
  SmallVector<Value> offsets;
  auto reserve = [&](unsigned bytesPerColumn) {
    offsets.push_back(total);
    // Whole rows, rounded to 64 bytes so rows do not share cache lines.
    Value bytes = m.mul(cols, m.i64(bytesPerColumn));
    bytes = b.create<arith::AndIOp>(loc, m.add(bytes, m.i64(63)),
                                    m.i64(~int64_t(63)));
    total = m.add(total, m.add(bytes, m.i64(64)));
  };
  for (auto [n, bytes] : rows)
    reserve(bytes);
  for (unsigned bytes : redirectBytes)
    if (bytes)
      reserve(bytes);

  if (!module.lookupSymbol<LLVM::LLVMFuncOp>("malloc")) {
    OpBuilder top(module.getBodyRegion());
    top.create<LLVM::LLVMFuncOp>(
        loc, "malloc", LLVM::LLVMFunctionType::get(ptrType, {b.getI64Type()}));
    top.create<LLVM::LLVMFuncOp>(
        loc, "free",
        LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx), {ptrType}));
  }
  scratchBase =
      b.create<LLVM::CallOp>(loc, ptrType, "malloc", ValueRange{total})
          .getResult();
  unsigned next = 0;
  auto at = [&](Value offset) {
    return b.create<LLVM::GEPOp>(loc, ptrType, b.getI8Type(), scratchBase,
                                 ValueRange{offset});
  };
  for (auto [n, bytes] : rows)
    scratchPtr[n] = at(offsets[next++]);
  for (auto [i, bytes] : llvm::enumerate(redirectBytes))
    if (bytes)
      redirectPtr[i] = at(offsets[next++]);
}

Value KernelEmitter::rowOffset(const Access &a) {
  Value off = m.i64(0);
  for (auto [d, stride] : llvm::enumerate(a.rowStrides))
    if (stride)
      off = m.add(off, m.mul(idx[d], stride));
  return off;
}

Value KernelEmitter::columnOffset(const Access &a, Value rowOff,
                                  const ColumnCtx &ctx) {
  if (!a.colStride)
    return rowOff;
  if (ctx.lanes > 1 || a.unitColumn)
    return m.add(rowOff, ctx.col);
  return m.add(rowOff, m.mul(ctx.col, a.colStride));
}

void KernelEmitter::emit() {
  plan();
  MLIRContext *ctx = b.getContext();
  auto ptrType = LLVM::LLVMPointerType::get(ctx);
  Type i64 = b.getI64Type();
  b.setInsertionPointToEnd(module.getBody());
  bool dropouts = !dropoutOffsets(g).empty();
  SmallVector<Type> args = {ptrType, ptrType, i64, i64};
  if (dropouts)
    args.push_back(ptrType);
  auto fn = b.create<func::FuncOp>(loc, symbol, b.getFunctionType(args, {}));
  // Kernels that differ only in their dropout offsets call this one with
  // their own; inlined into each of them, it would be compiled once per
  // offset.
  if (dropouts)
    fn->setAttr("no_inline", b.getUnitAttr());
  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToStart(entry);
  argsPtr = entry->getArgument(0);
  dimsPtr = entry->getArgument(1);
  rowBegin = entry->getArgument(2);
  rowEnd = entry->getArgument(3);
  if (dropouts)
    offsetsPtr = entry->getArgument(4);

  setUp();
  allocateScratch();
  for (unsigned s = 0; s < g.numStages; ++s) {
    emitGlobals(s);
    auto it = plans.find(s);
    if (it != plans.end())
      emitRowLoop(it->second);
  }
  emitGlobalResults();
  if (scratchBase)
    b.create<LLVM::CallOp>(loc, TypeRange{}, "free", ValueRange{scratchBase});
  b.create<func::ReturnOp>(loc);
}

void cpu::emitKernel(const RegionGraph &graph, ModuleOp module,
                     StringRef symbol, const KernelOptions &options) {
  KernelEmitter(graph, module, symbol, std::max(1u, options.lanes),
                options.libm)
      .emit();
}

void cpu::emitDropoutWrapper(ModuleOp module, StringRef symbol, StringRef impl,
                             ArrayRef<int64_t> offsets) {
  OpBuilder b(module.getContext());
  Location loc = module.getLoc();
  auto ptrType = LLVM::LLVMPointerType::get(b.getContext());
  Type i64 = b.getI64Type();
  b.setInsertionPointToEnd(module.getBody());
  auto data = DenseElementsAttr::get(
      RankedTensorType::get({int64_t(offsets.size())}, i64), offsets);
  auto global = b.create<LLVM::GlobalOp>(
      loc, LLVM::LLVMArrayType::get(i64, offsets.size()), /*isConstant=*/true,
      LLVM::Linkage::Internal, (symbol + "_offsets").str(), data);
  auto fn = b.create<func::FuncOp>(
      loc, symbol, b.getFunctionType({ptrType, ptrType, i64, i64}, {}));
  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToStart(entry);
  SmallVector<Value> args(entry->getArguments());
  args.push_back(b.create<LLVM::AddressOfOp>(loc, global));
  b.create<func::CallOp>(loc, impl, TypeRange{}, args);
  b.create<func::ReturnOp>(loc);
}
