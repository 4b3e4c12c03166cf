//===- GpuRegionLowering.cpp - A region graph as a GPU kernel -------------===//

#include "codegen/cuda/GpuRegionLowering.h"

#include "codegen/common/KernelMath.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "llvm/ADT/DenseSet.h"

using namespace mlir;
using namespace loom;
using namespace loom::codegen;
using namespace loom::cuda;

namespace {

/// Emits the kernel of one RegionGraph in one of the three launch shapes
/// (GpuRegionLowering.h).
class GpuKernelEmitter {
public:
  GpuKernelEmitter(const RegionGraph &g, ModuleOp module,
                   gpu::GPUModuleOp kernels, StringRef symbol)
      : g(g), kernels(kernels), symbol(symbol), b(module.getContext()),
        loc(module.getLoc()), m(b, loc, module, /*libm=*/false) {}

  void emit();

private:
  /// Entry block: arguments, domain sizes; the gpu.func.
  void setUp();
  void emitElementwise();
  void emitRowwise();
  /// Records the launch shape and block size (blockThreads) on the kernel.
  void setLaunch(StringRef shape);
  /// The row and global values the stage needs, of phase <= `phase` and
  /// stage <= `stage`, not computed yet: at the current point (the row
  /// scope), so that the column loops that follow may use them.
  void emitRowValues(unsigned phase, unsigned stage);
  /// One pass of the block over rows, computing what stage `stage` needs;
  /// the last stage writes the results.
  void emitStage(unsigned stage);
  Value isLast(unsigned d);
  /// Adds `n` and what it is computed from to `needed`, down to the totals
  /// of earlier stages.
  void collect(unsigned n);
  /// The block-wide `fn` of each thread's `v`, the same in every thread.
  Value blockReduce(ReduceFn fn, Value v);
  Value id(Value index);
  static ReduceFn accumulation(const Node &r) {
    return ReduceFn(r.fn) == ReduceFn::Max ? ReduceFn::Max : ReduceFn::Sum;
  }
  Value dimValue(const DimExpr &d);
  /// Per row dim of the domain, the stride of a tensor of `shape` (null
  /// where it broadcasts), then the column stride (null likewise).
  SmallVector<Value> stridesFor(const ShapeExpr &shape);
  /// Strides of node `n`'s (a leaf's or a dropout site's) and of result
  /// `i`'s shape, computed once in the entry block.
  ArrayRef<Value> nodeStrides(unsigned n) { return strides[n]; }
  ArrayRef<Value> resultStrides(unsigned i) { return resultStride[i]; }
  Value offsetOf(ArrayRef<Value> strides);
  /// Stores `v` as result `i`'s element at the current row and column.
  void storeResult(unsigned i, Value v);
  Value constantArray(const Node &node);
  Value value(unsigned n);

  const RegionGraph &g;
  gpu::GPUModuleOp kernels;
  std::string symbol;
  OpBuilder b;
  Location loc;
  KernelMath m;

  gpu::GPUFuncOp func;
  SmallVector<Value> tensors, dims, domain;
  Value cols, rows, total;
  // The current element: its index per row dim of the domain, its column.
  SmallVector<Value> idx;
  Value col;
  // Values of Global and Row nodes (valid in the current row) and of
  // Column nodes (valid in the current column loop's body).
  DenseMap<unsigned, Value> rowValues, columnValues;
  DenseMap<unsigned, LLVM::GlobalOp> arrays;
  DenseMap<unsigned, SmallVector<Value>> strides;
  SmallVector<SmallVector<Value>> resultStride;
  LLVM::GlobalOp shared;
  // What the current stage computes (emitStage).
  DenseSet<unsigned> needed;
  // Values of FullReduce nodes, known after their stage.
  DenseMap<unsigned, Value> globals;
  Value rowCol;
};

Value GpuKernelEmitter::dimValue(const DimExpr &d) {
  return m.dimValue(d, dims);
}

SmallVector<Value> GpuKernelEmitter::stridesFor(const ShapeExpr &shape) {
  return m.domainStrides(shape, g.rank(), dims);
}

Value GpuKernelEmitter::offsetOf(ArrayRef<Value> strides) {
  Value offset = m.i64(0);
  for (auto [d, stride] : llvm::enumerate(strides))
    if (stride)
      offset =
          m.add(offset, m.mul(d + 1 == strides.size() ? col : idx[d], stride));
  return offset;
}

void GpuKernelEmitter::storeResult(unsigned i, Value v) {
  m.store(v, tensors[g.operandTypes.size() + i], offsetOf(resultStrides(i)),
          g.resultTypes[i].getElementType());
}

Value GpuKernelEmitter::constantArray(const Node &node) {
  // An internal global of the GPU module, as the CPU kernel's is of the
  // shared object.
  unsigned n = &node - g.nodes.data();
  if (LLVM::GlobalOp global = arrays.lookup(n))
    return b.create<LLVM::AddressOfOp>(loc, global);
  Type storage = m.storageType(node.memoryType);
  int64_t count = node.array.getNumElements();
  auto flat = RankedTensorType::get({count}, storage);
  DenseElementsAttr array = node.array, data;
  if (node.memoryType.isInteger(1)) {
    SmallVector<int8_t> bytes;
    for (bool v : array.getValues<bool>())
      bytes.push_back(v);
    data = DenseElementsAttr::get(flat, ArrayRef<int8_t>(bytes));
  } else {
    data = array.reshape(flat);
  }
  OpBuilder top = OpBuilder::atBlockBegin(kernels.getBody());
  auto global = top.create<LLVM::GlobalOp>(
      loc, LLVM::LLVMArrayType::get(storage, count), /*isConstant=*/true,
      LLVM::Linkage::Internal, symbol + "_c" + std::to_string(arrays.size()),
      data);
  arrays[n] = global;
  return b.create<LLVM::AddressOfOp>(loc, global);
}

Value GpuKernelEmitter::value(unsigned n) {
  const Node &node = g.nodes[n];
  DenseMap<unsigned, Value> &values =
      node.level == Level::Column ? columnValues : rowValues;
  if (Value v = values.lookup(n))
    return v;
  SmallVector<Value> in;
  if (node.kind != NodeKind::Leaf)
    for (unsigned i : node.inputs)
      in.push_back(value(i));
  Value v;
  switch (node.kind) {
  case NodeKind::Leaf: {
    Value ptr = node.operand >= 0 ? tensors[node.operand] : constantArray(node);
    v = m.load(ptr, offsetOf(nodeStrides(n)), node.memoryType, node.computeType,
               1);
    break;
  }
  case NodeKind::Splat:
    v = b.create<arith::ConstantOp>(loc, node.scalar);
    break;
  case NodeKind::PassThrough:
    v = in[0];
    break;
  case NodeKind::Dropout: {
    // The site's offset is part of the kernel here (the CPU passes it at
    // run time so that sites share code); the mask is the interpreter's.
    Value key = m.dropoutKey(in[1], m.i64(node.offset));
    v = m.dropout(in[0], key, offsetOf(nodeStrides(n)), node.rate);
    break;
  }
  case NodeKind::Unary:
    v = m.unary(UnaryFn(node.fn), in[0]);
    break;
  case NodeKind::Binary:
    v = m.binary(BinaryFn(node.fn), in[0], in[1]);
    break;
  case NodeKind::Compare:
    v = m.compare(ComparePredicate(node.fn), in[0], in[1]);
    break;
  case NodeKind::Select:
    v = m.select(in[0], in[1], in[2]);
    break;
  case NodeKind::Cast:
    v = m.cast(in[0], node.computeType);
    break;
  case NodeKind::RowReduce:
    llvm_unreachable("computed by its column loop");
  case NodeKind::FullReduce:
    llvm_unreachable("computed after its stage's pass over the rows");
  }
  if (node.roundTo) {
    // Rounded to the op's f16/bf16 result, as the interpreter rounds.
    Value narrow = b.create<arith::TruncFOp>(loc, node.roundTo, v);
    v = b.create<arith::ExtFOp>(loc, v.getType(), narrow);
  }
  values[n] = v;
  return v;
}

Value GpuKernelEmitter::id(Value index) {
  return b.create<arith::IndexCastUIOp>(loc, b.getI64Type(), index);
}

void GpuKernelEmitter::setUp() {
  MLIRContext *ctx = b.getContext();
  Type ptr = LLVM::LLVMPointerType::get(ctx), i64 = b.getI64Type();
  unsigned numTensors = g.operandTypes.size() + g.resultTypes.size();
  unsigned numDims = 0;
  for (auto t : g.operandTypes)
    numDims += t.getRank();
  for (auto t : g.resultTypes)
    numDims += t.getRank();
  SmallVector<Type> argTypes(numTensors, ptr);
  argTypes.append(numDims, i64);

  // Before gpu.module_end.
  b.setInsertionPoint(kernels.getBody()->getTerminator());
  func = b.create<gpu::GPUFuncOp>(loc, symbol, b.getFunctionType(argTypes, {}));
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  Block &entry = func.getBody().front();
  b.setInsertionPointToStart(&entry);
  for (unsigned i = 0; i < numTensors; ++i)
    tensors.push_back(entry.getArgument(i));
  for (unsigned i = 0; i < numDims; ++i)
    dims.push_back(entry.getArgument(numTensors + i));

  rows = m.i64(1);
  for (const DimExpr &d : g.domain)
    domain.push_back(dimValue(d));
  for (size_t d = 0; d + 1 < domain.size(); ++d)
    rows = m.mul(rows, domain[d]);
  cols = g.rank() == 0 ? m.i64(1) : domain.back();
  total = m.mul(rows, cols);
  // Strides do not change within a call: computed here, once.
  for (auto [n, node] : llvm::enumerate(g.nodes))
    if (node.kind == NodeKind::Leaf || node.kind == NodeKind::Dropout)
      strides[n] = stridesFor(node.shape);
  for (auto [i, type] : llvm::enumerate(g.resultTypes))
    resultStride.push_back(stridesFor(shapeOfType(type, g.resultDims[i])));
}

void GpuKernelEmitter::emitElementwise() {
  setLaunch(kLaunchElements);
  // One statement each: the order of the ops is the order of the IR.
  Value threads = id(b.create<gpu::BlockDimOp>(loc, gpu::Dimension::x));
  Value block = id(b.create<gpu::BlockIdOp>(loc, gpu::Dimension::x));
  Value thread = id(b.create<gpu::ThreadIdOp>(loc, gpu::Dimension::x));
  Value first = m.add(m.mul(block, threads), thread);
  Value grid = id(b.create<gpu::GridDimOp>(loc, gpu::Dimension::x));
  Value step = m.mul(grid, threads);

  auto loop = b.create<scf::ForOp>(loc, first, total, step);
  b.setInsertionPointToStart(loop.getBody());
  Value e = loop.getInductionVar();
  col = b.create<arith::RemUIOp>(loc, e, cols);
  Value row = b.create<arith::DivUIOp>(loc, e, cols);
  idx.assign(g.rank(), Value());
  for (size_t d = g.rank() - 1; g.rank() > 0 && d-- > 0;) {
    idx[d] = b.create<arith::RemUIOp>(loc, row, domain[d]);
    row = b.create<arith::DivUIOp>(loc, row, domain[d]);
  }
  // Every value first, then the stores: a result may share its storage
  // with an operand this element reads.
  SmallVector<Value> results;
  for (unsigned r : g.results)
    results.push_back(value(r));
  for (unsigned i = 0; i < results.size(); ++i)
    storeResult(i, results[i]);
}

void GpuKernelEmitter::emitRowValues(unsigned phase, unsigned stage) {
  for (auto [n, node] : llvm::enumerate(g.nodes))
    if (node.level != Level::Column && node.kind != NodeKind::RowReduce &&
        node.kind != NodeKind::FullReduce && node.phase <= phase &&
        node.stage <= stage && needed.count(n) && !rowValues.count(n))
      value(n);
}

Value GpuKernelEmitter::blockReduce(ReduceFn fn, Value v) {
  Type elem = v.getType();
  // Within a warp: butterfly shuffles leave the warp's total in every lane.
  for (int32_t offset = 16; offset > 0; offset /= 2) {
    auto shuffle =
        b.create<gpu::ShuffleOp>(loc, v, offset, 32, gpu::ShuffleMode::XOR);
    v = m.reductionStep(fn, v, shuffle.getShuffleResult());
  }
  // Across warps: one slot per warp in shared memory, then every thread
  // folds the slots in the same order (the same value everywhere).
  MLIRContext *ctx = b.getContext();
  auto sharedPtr = LLVM::LLVMPointerType::get(ctx, /*addressSpace=*/3);
  Value base = b.create<LLVM::AddressOfOp>(loc, sharedPtr, shared.getName());
  Value thread = id(b.create<gpu::ThreadIdOp>(loc, gpu::Dimension::x));
  Value threads = id(b.create<gpu::BlockDimOp>(loc, gpu::Dimension::x));
  Value lane = b.create<arith::RemUIOp>(loc, thread, m.i64(32));
  Value warp = b.create<arith::DivUIOp>(loc, thread, m.i64(32));
  Value warps =
      b.create<arith::DivUIOp>(loc, m.add(threads, m.i64(31)), m.i64(32));
  auto slot = [&](Value i) -> Value {
    return b.create<LLVM::GEPOp>(loc, sharedPtr, elem, base, ValueRange{i});
  };
  // The slots may still be read for the previous reduction.
  b.create<gpu::BarrierOp>(loc);
  Value leader =
      b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, lane, m.i64(0));
  Value mine = slot(warp);
  auto onlyLeader = b.create<scf::IfOp>(loc, leader, /*withElseRegion=*/false);
  OpBuilder::atBlockBegin(&onlyLeader.getThenRegion().front())
      .create<LLVM::StoreOp>(loc, v, mine);
  b.create<gpu::BarrierOp>(loc);
  auto fold = b.create<scf::ForOp>(
      loc, m.i64(0), warps, m.i64(1), ValueRange{m.reductionInit(fn, elem, 1)},
      [&](OpBuilder &nested, Location, Value w, ValueRange acc) {
        Value x = nested.create<LLVM::LoadOp>(loc, elem, slot(w));
        nested.create<scf::YieldOp>(loc, m.reductionStep(fn, acc[0], x));
      });
  return fold.getResult(0);
}

Value GpuKernelEmitter::isLast(unsigned d) {
  return b.create<arith::CmpIOp>(
      loc, arith::CmpIPredicate::eq, idx[d],
      b.create<arith::SubIOp>(loc, domain[d], m.i64(1)));
}

void GpuKernelEmitter::collect(unsigned n) {
  if (!needed.insert(n).second || g.nodes[n].kind == NodeKind::FullReduce)
    return;
  for (unsigned i : g.nodes[n].inputs)
    collect(i);
}

void GpuKernelEmitter::emitStage(unsigned stage) {
  bool last = stage + 1 == g.numStages;
  needed.clear();
  for (auto [n, node] : llvm::enumerate(g.nodes))
    if (node.kind == NodeKind::FullReduce && node.stage == stage + 1)
      collect(node.inputs[0]);
  if (last)
    for (unsigned r : g.results)
      if (g.nodes[r].level != Level::Global)
        collect(r);
  // A last stage with only global results has no pass over the rows.
  if (needed.empty())
    return;
  // The column loops a row needs: loop q accumulates the needed row
  // reductions of phase q + 1 (those of earlier stages again: row values
  // are not kept between stages); the last stage's last loop writes the
  // column results.
  unsigned lastLoop = 0;
  for (unsigned n : needed)
    if (g.nodes[n].kind == NodeKind::RowReduce)
      lastLoop = std::max(lastLoop, g.nodes[n].phase - 1);
  if (last)
    for (unsigned r : g.results)
      if (g.nodes[r].level == Level::Column)
        lastLoop = std::max(lastLoop, g.nodes[r].phase);
  SmallVector<unsigned> fullReduces;
  SmallVector<Value> fullInits;
  for (auto [n, node] : llvm::enumerate(g.nodes))
    if (node.kind == NodeKind::FullReduce && node.stage == stage + 1) {
      fullReduces.push_back(n);
      fullInits.push_back(
          m.reductionInit(accumulation(node), node.computeType, 1));
    }

  Value thread = id(b.create<gpu::ThreadIdOp>(loc, gpu::Dimension::x));
  Value threads = id(b.create<gpu::BlockDimOp>(loc, gpu::Dimension::x));
  // One stage: blocks stride over rows. Several: one block takes every
  // row in order, since a stage needs the last one's totals.
  Value firstRow = m.i64(0), rowStep = m.i64(1);
  if (g.numStages == 1) {
    firstRow = id(b.create<gpu::BlockIdOp>(loc, gpu::Dimension::x));
    rowStep = id(b.create<gpu::GridDimOp>(loc, gpu::Dimension::x));
  }
  auto rowLoop = b.create<scf::ForOp>(loc, firstRow, rows, rowStep, fullInits);
  OpBuilder::InsertionGuard rowGuard(b);
  if (!rowLoop.getBody()->empty())
    rowLoop.getBody()->back().erase(); // the builder's yield, added below
  b.setInsertionPointToEnd(rowLoop.getBody());
  Value row = rowLoop.getInductionVar();
  idx.assign(g.rank(), Value());
  for (size_t d = g.rank() - 1; g.rank() > 0 && d-- > 0;) {
    idx[d] = d == 0 ? row : b.create<arith::RemUIOp>(loc, row, domain[d]);
    if (d > 0)
      row = b.create<arith::DivUIOp>(loc, row, domain[d]);
  }
  rowValues = globals;
  for (unsigned q = 0; q <= lastLoop; ++q) {
    col = rowCol; // row values have no column
    emitRowValues(q, stage);
    SmallVector<unsigned> reductions;
    SmallVector<Value> inits;
    for (auto [n, node] : llvm::enumerate(g.nodes))
      if (node.kind == NodeKind::RowReduce && node.phase == q + 1 &&
          needed.count(n)) {
        reductions.push_back(n);
        inits.push_back(
            m.reductionInit(accumulation(node), node.computeType, 1));
      }
    bool writes = last && q == lastLoop;
    auto loop = b.create<scf::ForOp>(loc, thread, cols, threads, inits);
    {
      OpBuilder::InsertionGuard guard(b);
      // Without loop-carried values the builder made a yield already.
      if (!loop.getBody()->empty() && isa<scf::YieldOp>(loop.getBody()->back()))
        loop.getBody()->back().erase();
      b.setInsertionPointToEnd(loop.getBody());
      col = loop.getInductionVar();
      columnValues.clear();
      SmallVector<Value> next, results;
      for (auto [i, r] : llvm::enumerate(reductions))
        next.push_back(m.reductionStep(accumulation(g.nodes[r]),
                                       loop.getRegionIterArgs()[i],
                                       value(g.nodes[r].inputs[0])));
      if (writes) {
        // Every read of this column first: a result may share storage
        // with an operand.
        for (unsigned r : g.results)
          results.push_back(g.nodes[r].level == Level::Column ? value(r)
                                                              : Value());
        for (unsigned i = 0; i < results.size(); ++i)
          if (results[i])
            storeResult(i, results[i]);
      }
      b.create<scf::YieldOp>(loc, next);
      columnValues.clear();
    }
    col = rowCol;
    for (auto [i, r] : llvm::enumerate(reductions)) {
      const Node &node = g.nodes[r];
      Value v = blockReduce(accumulation(node), loop.getResult(i));
      if (ReduceFn(node.fn) == ReduceFn::Mean)
        v = b.create<arith::DivFOp>(
            loc, v,
            b.create<arith::SIToFPOp>(loc, node.computeType,
                                      dimValue(node.reducedShape.back())));
      if (node.roundTo) {
        Value narrow = b.create<arith::TruncFOp>(loc, node.roundTo, v);
        v = b.create<arith::ExtFOp>(loc, v.getType(), narrow);
      }
      rowValues[r] = v;
    }
  }
  emitRowValues(lastLoop + 1, stage);
  if (last) {
    // Row results: one value per row, written by thread 0.
    Value first = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, thread,
                                          m.i64(0));
    auto onlyFirst = b.create<scf::IfOp>(loc, first, /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&onlyFirst.getThenRegion().front());
    for (auto [i, r] : llvm::enumerate(g.results))
      if (g.nodes[r].level == Level::Row)
        storeResult(i, rowValues.lookup(r));
  }
  // This row's share of each total (the same in every thread). A row that
  // broadcasts the reduced tensor sees its elements again: only the last
  // row of each such run adds them, as on the CPU.
  SmallVector<Value> next;
  for (auto [i, f] : llvm::enumerate(fullReduces)) {
    const Node &node = g.nodes[f];
    Value x = rowValues.lookup(node.inputs[0]);
    Value keep = b.create<arith::ConstantIntOp>(loc, 1, 1);
    size_t k = node.reducedShape.size(), rank = g.rank();
    for (size_t d = 0; d + 1 < rank; ++d) {
      int64_t j = int64_t(d) - int64_t(rank - k);
      DimExpr dim = j < 0 ? DimExpr{} : node.reducedShape[j];
      if (dim == g.domain[d])
        continue;
      Value cond = isLast(d);
      if (!dim.isStaticOne())
        cond = b.create<arith::OrIOp>(
            loc, cond,
            b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq,
                                    dimValue(dim), domain[d]));
      keep = b.create<arith::AndIOp>(loc, keep, cond);
    }
    x = b.create<arith::SelectOp>(
        loc, keep, x, m.reductionInit(accumulation(node), node.computeType, 1));
    next.push_back(
        m.reductionStep(accumulation(node), rowLoop.getRegionIterArgs()[i], x));
  }
  b.create<scf::YieldOp>(loc, next);
  b.setInsertionPointAfter(rowLoop);
  for (auto [i, f] : llvm::enumerate(fullReduces)) {
    const Node &node = g.nodes[f];
    Value v = rowLoop.getResult(i);
    if (ReduceFn(node.fn) == ReduceFn::Mean) {
      Value count = m.i64(1);
      for (const DimExpr &d : node.reducedShape)
        count = m.mul(count, dimValue(d));
      v = b.create<arith::DivFOp>(
          loc, v, b.create<arith::SIToFPOp>(loc, node.computeType, count));
    }
    if (node.roundTo) {
      Value narrow = b.create<arith::TruncFOp>(loc, node.roundTo, v);
      v = b.create<arith::ExtFOp>(loc, v.getType(), narrow);
    }
    globals[f] = v;
  }
}

void GpuKernelEmitter::emitRowwise() {
  setLaunch(g.numStages == 1 ? kLaunchRows : kLaunchBlock);
  // Slots for one value per warp, of the widest element type.
  {
    OpBuilder top = OpBuilder::atBlockBegin(kernels.getBody());
    shared = top.create<LLVM::GlobalOp>(
        loc, LLVM::LLVMArrayType::get(b.getF64Type(), 32),
        /*isConstant=*/false, LLVM::Linkage::Internal, symbol + "_warps",
        Attribute(), /*alignment=*/8, /*addrSpace=*/3);
  }
  rowCol = m.i64(0);
  for (unsigned s = 0; s < g.numStages; ++s)
    emitStage(s);
  // Global results: the same for every row; thread 0 of block 0 writes.
  bool any = llvm::any_of(
      g.results, [&](unsigned r) { return g.nodes[r].level == Level::Global; });
  if (!any)
    return;
  rowValues = globals;
  col = rowCol;
  SmallVector<Value> values;
  for (unsigned r : g.results)
    values.push_back(g.nodes[r].level == Level::Global ? value(r) : Value());
  Value thread = id(b.create<gpu::ThreadIdOp>(loc, gpu::Dimension::x));
  Value block = id(b.create<gpu::BlockIdOp>(loc, gpu::Dimension::x));
  Value first = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq,
                                        m.add(thread, block), m.i64(0));
  auto onlyFirst = b.create<scf::IfOp>(loc, first, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&onlyFirst.getThenRegion().front());
  for (unsigned i = 0; i < values.size(); ++i)
    if (values[i])
      storeResult(i, values[i]); // rank 0: offset 0
}

void GpuKernelEmitter::setLaunch(StringRef shape) {
  func->setAttr(kLaunchAttr, b.getStringAttr(shape));
  int32_t threads = blockThreads(g, shape);
  // The launch bound (PTX's .maxntid): ptxas may give each thread as many
  // registers as blocks of this size leave; the runtime launches with it.
  func.setKnownBlockSizeAttr(b.getDenseI32ArrayAttr({threads, 1, 1}));
}

void GpuKernelEmitter::emit() {
  setUp();
  bool reduces = llvm::any_of(g.nodes, [](const Node &node) {
    return node.kind == NodeKind::RowReduce ||
           node.kind == NodeKind::FullReduce;
  });
  if (reduces)
    emitRowwise();
  else
    emitElementwise();
  b.setInsertionPointToEnd(&func.getBody().front());
  b.create<gpu::ReturnOp>(loc);
}

} // namespace

int32_t cuda::blockThreads(const RegionGraph &graph, StringRef launch) {
  if (launch == kLaunchBlock)
    return 1024; // one block does all the work: as many threads as may be
  if (launch == kLaunchElements || graph.domain.empty() ||
      !graph.domain.back().isStatic())
    return 256;
  // A block per row: two columns per thread and phase, at least a warp, at
  // most 512 threads (a d_model of 512 gets 256, a head of 64 gets 32).
  int64_t cols = graph.domain.back().size;
  int64_t threads = std::clamp<int64_t>((cols + 1) / 2, 32, 512);
  return static_cast<int32_t>((threads + 31) / 32 * 32);
}

LogicalResult cuda::canEmitGpuKernel(const RegionGraph &graph,
                                     std::string &why) {
  // Every address and dim is a kernel parameter (8 bytes each), and a
  // launch carries at most kMaxParameterBytes of them.
  int64_t words = graph.operandTypes.size() + graph.resultTypes.size();
  for (auto types : {ArrayRef(graph.operandTypes), ArrayRef(graph.resultTypes)})
    for (RankedTensorType type : types)
      words += type.getRank();
  if (8 * words > kMaxParameterBytes) {
    why = "its " + std::to_string(words) + " addresses and dims take " +
          std::to_string(8 * words) +
          " bytes of kernel parameters, more than "
          "the " +
          std::to_string(kMaxParameterBytes) + " a launch carries";
    return failure();
  }
  for (bool guarded : graph.guardedResults)
    if (guarded) {
      why = "a result broadcast over rows, which may share storage with an "
            "operand other rows read, needs ordered writes, which a GPU kernel "
            "does not give";
      return failure();
    }
  return success();
}

void cuda::emitGpuKernel(const RegionGraph &graph, ModuleOp module,
                         gpu::GPUModuleOp kernels, StringRef symbol) {
  GpuKernelEmitter(graph, module, kernels, symbol).emit();
}
