//===- GpuRegionLowering.cpp - A region graph as a GPU kernel -------------===//

#include "codegen/cuda/GpuRegionLowering.h"

#include "codegen/cpu/KernelMath.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace loom;
using namespace loom::cpu;

namespace {

/// Emits one elementwise kernel: per element, every node of the graph.
class GpuKernelEmitter {
public:
  GpuKernelEmitter(const RegionGraph &g, ModuleOp module,
                   gpu::GPUModuleOp kernels, StringRef symbol)
      : g(g), kernels(kernels), symbol(symbol), b(module.getContext()),
        loc(module.getLoc()), m(b, loc, module, /*libm=*/false) {}

  void emit();

private:
  Value dimValue(const DimExpr &d);
  /// Per row dim of the domain, the stride of a tensor of `shape` (null
  /// where it broadcasts), then the column stride (null likewise).
  SmallVector<Value> stridesFor(const ShapeExpr &shape);
  Value offsetOf(ArrayRef<Value> strides);
  Value constantArray(const Node &node);
  Value value(unsigned n);

  const RegionGraph &g;
  gpu::GPUModuleOp kernels;
  std::string symbol;
  OpBuilder b;
  Location loc;
  KernelMath m;

  SmallVector<Value> tensors, dims, domain;
  // The current element: its index per row dim of the domain, its column.
  SmallVector<Value> idx;
  Value col;
  DenseMap<unsigned, Value> values;
  unsigned numConstants = 0;
};

Value GpuKernelEmitter::dimValue(const DimExpr &d) {
  if (d.isStatic())
    return m.i64(d.size);
  // NumPy: sizes agree or one of them is 1.
  Value v = dims[d.sources.front()];
  for (unsigned s : ArrayRef<unsigned>(d.sources).drop_front()) {
    Value isOne =
        b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, v, m.i64(1));
    v = b.create<arith::SelectOp>(loc, isOne, dims[s], v);
  }
  return v;
}

SmallVector<Value> GpuKernelEmitter::stridesFor(const ShapeExpr &shape) {
  size_t k = shape.size(), rank = g.rank();
  SmallVector<Value> sizes, strides(k);
  for (const DimExpr &d : shape)
    sizes.push_back(dimValue(d));
  Value running = m.i64(1);
  for (size_t j = k; j-- > 0;) {
    strides[j] = running;
    running = m.mul(running, sizes[j]);
  }
  auto broadcastable = [&](size_t j) -> Value {
    if (shape[j].isStaticOne())
      return nullptr;
    if (shape[j].isStatic())
      return strides[j];
    Value isOne = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq,
                                          sizes[j], m.i64(1));
    return b.create<arith::SelectOp>(loc, isOne, m.i64(0), strides[j]);
  };
  SmallVector<Value> out;
  for (size_t d = 0; d < rank; ++d) {
    int64_t j = int64_t(d) - int64_t(rank - k);
    out.push_back(j < 0 ? nullptr : broadcastable(j));
  }
  return out;
}

Value GpuKernelEmitter::offsetOf(ArrayRef<Value> strides) {
  Value offset = m.i64(0);
  for (auto [d, stride] : llvm::enumerate(strides))
    if (stride)
      offset =
          m.add(offset, m.mul(d + 1 == strides.size() ? col : idx[d], stride));
  return offset;
}

Value GpuKernelEmitter::constantArray(const Node &node) {
  // An internal global of the GPU module, as the CPU kernel's is of the
  // shared object.
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
      LLVM::Linkage::Internal, symbol + "_c" + std::to_string(numConstants++),
      data);
  return b.create<LLVM::AddressOfOp>(loc, global);
}

Value GpuKernelEmitter::value(unsigned n) {
  if (Value v = values.lookup(n))
    return v;
  const Node &node = g.nodes[n];
  SmallVector<Value> in;
  if (node.kind != NodeKind::Leaf)
    for (unsigned i : node.inputs)
      in.push_back(value(i));
  Value v;
  switch (node.kind) {
  case NodeKind::Leaf: {
    Value ptr = node.operand >= 0 ? tensors[node.operand] : constantArray(node);
    v = m.load(ptr, offsetOf(stridesFor(node.shape)), node.memoryType,
               node.computeType, 1);
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
    v = m.dropout(in[0], key, offsetOf(stridesFor(node.shape)), node.rate);
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
  case NodeKind::FullReduce:
    llvm_unreachable("declined by canEmitGpuKernel");
  }
  if (node.roundTo) {
    // Rounded to the op's f16/bf16 result, as the interpreter rounds.
    Value narrow = b.create<arith::TruncFOp>(loc, node.roundTo, v);
    v = b.create<arith::ExtFOp>(loc, v.getType(), narrow);
  }
  values[n] = v;
  return v;
}

void GpuKernelEmitter::emit() {
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
  auto func =
      b.create<gpu::GPUFuncOp>(loc, symbol, b.getFunctionType(argTypes, {}));
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  Block &entry = func.getBody().front();
  b.setInsertionPointToStart(&entry);
  for (unsigned i = 0; i < numTensors; ++i)
    tensors.push_back(entry.getArgument(i));
  for (unsigned i = 0; i < numDims; ++i)
    dims.push_back(entry.getArgument(numTensors + i));

  Value total = m.i64(1);
  for (const DimExpr &d : g.domain) {
    domain.push_back(dimValue(d));
    total = m.mul(total, domain.back());
  }
  Value cols = g.rank() == 0 ? m.i64(1) : domain.back();
  auto id = [&](Value index) -> Value {
    return b.create<arith::IndexCastUIOp>(loc, i64, index);
  };
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
  for (auto [i, type] : llvm::enumerate(g.resultTypes)) {
    ShapeExpr shape = shapeOfType(type, g.resultDims[i]);
    m.store(results[i], tensors[g.operandTypes.size() + i],
            offsetOf(stridesFor(shape)), type.getElementType());
  }
  b.setInsertionPointToEnd(&entry);
  b.create<gpu::ReturnOp>(loc);
}

} // namespace

LogicalResult cuda::canEmitGpuKernel(const RegionGraph &graph,
                                     std::string &why) {
  for (const Node &node : graph.nodes)
    if (node.kind == NodeKind::RowReduce || node.kind == NodeKind::FullReduce) {
      why = std::string(node.kind == NodeKind::RowReduce ? "a row" : "a full") +
            " reduction (" +
            (node.origin ? node.origin->getName().getStringRef().str()
                         : std::string("?")) +
            ") needs a block-per-row kernel, which the CUDA target does not "
            "generate yet";
      return failure();
    }
  for (bool guarded : graph.guardedResults)
    if (guarded) {
      why = "a result broadcast over rows that shares storage with an "
            "operand needs ordered writes, which a GPU kernel does not give";
      return failure();
    }
  return success();
}

void cuda::emitGpuKernel(const RegionGraph &graph, ModuleOp module,
                         gpu::GPUModuleOp kernels, StringRef symbol) {
  GpuKernelEmitter(graph, module, kernels, symbol).emit();
}
