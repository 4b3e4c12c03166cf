//===- KernelLoops.cpp - The loops and values of one kernel ---------------===//
//
// A value is computed where its level puts it: global values once per call
// (or after the row loop whose reductions they read), row values once per
// row between column loops, column values inside a column loop, as vectors
// of `lanes` columns or one column in the remainder loop. Within a column
// loop's body every read comes before every write.
//
//===----------------------------------------------------------------------===//

#include "codegen/cpu/KernelEmitter.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace loom;
using namespace loom::cpu;

//===----------------------------------------------------------------------===//
// Values
//===----------------------------------------------------------------------===//

Value KernelEmitter::scalarOf(unsigned n) {
  const Node &node = g.nodes[n];
  if (node.kind == NodeKind::Splat)
    return constantOf(node, 1);
  return node.level == Level::Global ? globals.lookup(n) : rowValues.lookup(n);
}

Value KernelEmitter::constantOf(const Node &node, unsigned count) {
  TypedAttr attr = node.scalar;
  if (count > 1)
    attr = DenseElementsAttr::get(VectorType::get({count}, node.computeType),
                                  Attribute(attr));
  return b.create<arith::ConstantOp>(loc, attr);
}

Value KernelEmitter::apply(const Node &node, ArrayRef<Value> in) {
  switch (node.kind) {
  case NodeKind::Unary:
    return m.unary(UnaryFn(node.fn), in[0]);
  case NodeKind::Binary:
    return m.binary(BinaryFn(node.fn), in[0], in[1]);
  case NodeKind::Compare:
    return m.compare(ComparePredicate(node.fn), in[0], in[1]);
  case NodeKind::Select:
    return m.select(in[0], in[1], in[2]);
  case NodeKind::Cast:
    return m.cast(in[0], node.computeType);
  default:
    return in[0];
  }
}

Value KernelEmitter::rounded(const Node &node, Value v) {
  if (!node.roundTo)
    return v;
  unsigned count = 1;
  if (auto vec = dyn_cast<VectorType>(v.getType()))
    count = vec.getNumElements();
  Value narrow =
      b.create<arith::TruncFOp>(loc, m.typeOf(node.roundTo, count), v);
  return b.create<arith::ExtFOp>(loc, v.getType(), narrow);
}

Value KernelEmitter::computeScalar(unsigned n, bool inRow) {
  const Node &node = g.nodes[n];
  return rounded(node, computeUnrounded(n, inRow));
}

Value KernelEmitter::computeUnrounded(unsigned n, bool inRow) {
  const Node &node = g.nodes[n];
  switch (node.kind) {
  case NodeKind::Leaf:
    return m.load(leafAccess[n].ptr, inRow ? rowOffsets[n] : m.i64(0),
                  node.memoryType, node.computeType, 1);
  case NodeKind::Splat:
    return constantOf(node, 1);
  case NodeKind::PassThrough:
    return scalarOf(node.inputs[0]);
  case NodeKind::Dropout: {
    Value key = m.dropoutKey(scalarOf(node.inputs[1]), dropoutOffset[n]);
    return m.dropout(scalarOf(node.inputs[0]), key,
                     inRow ? rowOffsets[n] : m.i64(0), node.rate);
  }
  default: {
    SmallVector<Value> in;
    for (unsigned i : node.inputs)
      in.push_back(scalarOf(i));
    return apply(node, in);
  }
  }
}

bool KernelEmitter::loadedFromScratch(unsigned n, const ColumnCtx &ctx) const {
  return ctx.plan->scratch.count(n) && int(g.nodes[n].phase) < int(ctx.loop);
}

ArrayRef<unsigned> KernelEmitter::columnInputs(unsigned n,
                                               const ColumnCtx &ctx) const {
  const Node &node = g.nodes[n];
  if (node.level != Level::Column || ctx.memo.count(n) ||
      loadedFromScratch(n, ctx))
    return {};
  switch (node.kind) {
  case NodeKind::Leaf:
  case NodeKind::Splat:
    return {};
  case NodeKind::PassThrough:
  case NodeKind::Dropout: // its key, input 1, is a scalar
    return ArrayRef<unsigned>(node.inputs).take_front(1);
  default:
    return node.inputs;
  }
}

Value KernelEmitter::columnValue(unsigned root, ColumnCtx &ctx) {
  // A region may chain thousands of ops (a fused elementwise chain), and a
  // node's value needs its inputs' first: the column-level inputs are
  // computed deepest first from an explicit stack, in the order a recursion
  // would visit them, so that the depth of the emitter's own stack stays
  // the same whatever the chain's length.
  struct Frame {
    unsigned node;
    unsigned next; // the next of columnInputs(node) to visit
  };
  SmallVector<Frame> stack{{root, 0}};
  while (true) {
    Frame &frame = stack.back();
    ArrayRef<unsigned> inputs = columnInputs(frame.node, ctx);
    if (frame.next < inputs.size()) {
      unsigned input = inputs[frame.next++];
      // A scalar input is splat where its user reads it.
      if (g.nodes[input].level == Level::Column)
        stack.push_back({input, 0});
      continue;
    }
    Value v = columnNodeValue(frame.node, ctx);
    stack.pop_back();
    if (stack.empty())
      return v;
  }
}

Value KernelEmitter::columnNodeValue(unsigned n, ColumnCtx &ctx) {
  const Node &node = g.nodes[n];
  if (node.level != Level::Column)
    return node.kind == NodeKind::Splat ? constantOf(node, ctx.lanes)
                                        : m.splat(scalarOf(n), ctx.lanes);
  if (Value v = ctx.memo.lookup(n))
    return v;
  Value v;
  if (loadedFromScratch(n, ctx)) {
    v = m.load(scratchPtr[n], ctx.col, node.computeType, node.computeType,
               ctx.lanes);
  } else {
    switch (node.kind) {
    case NodeKind::Leaf: {
      const Access &a = leafAccess[n];
      v = m.load(a.ptr, columnOffset(a, rowOffsets[n], ctx), node.memoryType,
                 node.computeType, ctx.lanes);
      break;
    }
    case NodeKind::Splat:
      v = constantOf(node, ctx.lanes);
      break;
    case NodeKind::PassThrough:
      v = columnValue(node.inputs[0], ctx);
      break;
    case NodeKind::Dropout: {
      // The element's linear index in the dropout's own shape.
      Value index = columnOffset(dropoutAccess[n], rowOffsets[n], ctx);
      if (ctx.lanes > 1) {
        SmallVector<int64_t> iota;
        for (unsigned i = 0; i < ctx.lanes; ++i)
          iota.push_back(i);
        auto type = VectorType::get({ctx.lanes}, b.getI64Type());
        Value steps = b.create<arith::ConstantOp>(
            loc, DenseElementsAttr::get(type, ArrayRef<int64_t>(iota)));
        index = b.create<arith::AddIOp>(loc, m.splat(index, ctx.lanes), steps);
      }
      Value key = m.dropoutKey(scalarOf(node.inputs[1]), dropoutOffset[n]);
      v = m.dropout(columnValue(node.inputs[0], ctx), key, index, node.rate);
      break;
    }
    default: {
      SmallVector<Value> in;
      for (unsigned i : node.inputs)
        in.push_back(columnValue(i, ctx));
      v = apply(node, in);
      break;
    }
    }
    v = rounded(node, v);
  }
  ctx.memo[n] = v;
  return v;
}

template <typename BodyFn>
scf::ForOp KernelEmitter::emitFor(Value lb, Value ub, Value step,
                                  ValueRange inits, BodyFn body) {
  return b.create<scf::ForOp>(
      loc, lb, ub, step, inits,
      [&](OpBuilder &nested, Location, Value iv, ValueRange args) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(nested.getInsertionBlock(),
                            nested.getInsertionPoint());
        SmallVector<Value> yields = body(iv, args);
        b.create<scf::YieldOp>(loc, yields);
      });
}

void KernelEmitter::emitGlobals(unsigned stage) {
  for (auto [n, node] : llvm::enumerate(g.nodes))
    if (node.level == Level::Global && node.stage == stage &&
        node.kind != NodeKind::FullReduce)
      globals[n] = computeScalar(n, /*inRow=*/false);
}

void KernelEmitter::emitRowNodes(const StagePlan &p, unsigned phase) {
  for (auto [n, node] : llvm::enumerate(g.nodes))
    if (node.level == Level::Row && node.phase == phase &&
        node.kind != NodeKind::RowReduce && p.needed.count(n))
      rowValues[n] = computeScalar(n, /*inRow=*/true);
}

void KernelEmitter::emitColumnLoop(const StagePlan &p, unsigned q) {
  ArrayRef<unsigned> reductions = p.reductions[q];
  bool writes = p.writesResults && int(q) == p.lastLoop;
  auto body = [&](unsigned count) {
    return [&, count](Value col, ValueRange accs) {
      ColumnCtx ctx{&p, q, count, col, {}};
      SmallVector<Value> xs, stored, results;
      for (unsigned r : reductions)
        xs.push_back(columnValue(g.nodes[r].inputs[0], ctx));
      for (unsigned s : p.scratchStores[q])
        stored.push_back(columnValue(s, ctx));
      if (writes)
        for (unsigned r : g.results)
          results.push_back(g.nodes[r].level == Level::Column
                                ? columnValue(r, ctx)
                                : Value());
      // Every read of this column is above; the writes follow.
      for (auto [s, v] : llvm::zip(p.scratchStores[q], stored))
        m.store(v, scratchPtr[s], col, g.nodes[s].computeType);
      for (auto [k, v] : llvm::enumerate(results))
        if (v)
          m.store(v, resultPtr[k],
                  columnOffset(resultAccess[k], resultOffset[k], ctx),
                  g.resultTypes[k].getElementType());
      SmallVector<Value> next;
      for (auto [r, acc, x] : llvm::zip(reductions, accs, xs))
        next.push_back(m.reductionStep(accumulation(g.nodes[r]), acc, x));
      return next;
    };
  };
  SmallVector<Value> partial;
  for (unsigned r : reductions)
    partial.push_back(
        m.reductionInit(accumulation(g.nodes[r]), g.nodes[r].computeType, 1));
  if (lanes > 1) {
    SmallVector<Value> inits;
    for (unsigned r : reductions)
      inits.push_back(m.reductionInit(accumulation(g.nodes[r]),
                                      g.nodes[r].computeType, lanes));
    Value start = m.i64(0);
    if (!reductions.empty()) {
      size_t n = reductions.size();
      SmallVector<Value> unrolledInits;
      for (unsigned u = 0; u < kReductionUnroll; ++u)
        unrolledInits.append(inits);
      scf::ForOp unrolled =
          emitFor(start, unrolledEnd, m.i64(lanes * kReductionUnroll),
                  unrolledInits, [&](Value col, ValueRange accs) {
                    SmallVector<Value> next;
                    for (unsigned u = 0; u < kReductionUnroll; ++u) {
                      Value c = m.add(col, m.i64(u * lanes));
                      next.append(body(lanes)(c, accs.slice(u * n, n)));
                    }
                    return next;
                  });
      for (auto [i, r] : llvm::enumerate(reductions)) {
        inits[i] = unrolled.getResult(i);
        for (unsigned u = 1; u < kReductionUnroll; ++u)
          inits[i] = m.reductionStep(accumulation(g.nodes[r]), inits[i],
                                     unrolled.getResult(u * n + i));
      }
      start = unrolledEnd;
    }
    scf::ForOp vectorLoop =
        emitFor(start, vecEnd, m.i64(lanes), inits, body(lanes));
    for (auto [i, r] : llvm::enumerate(reductions))
      partial[i] =
          m.reductionFinish(accumulation(g.nodes[r]), vectorLoop.getResult(i));
  }
  scf::ForOp tail = emitFor(vecEnd, cols, m.i64(1), partial, body(1));
  for (auto [i, r] : llvm::enumerate(reductions)) {
    Value v = tail.getResult(i);
    if (ReduceFn(g.nodes[r].fn) == ReduceFn::Mean)
      v = b.create<arith::DivFOp>(loc, v, counts[r]);
    rowValues[r] = rounded(g.nodes[r], v);
  }
}

void KernelEmitter::emitRowLoop(const StagePlan &p) {
  SmallVector<Value> inits;
  for (unsigned f : p.fullReduces)
    inits.push_back(
        m.reductionInit(accumulation(g.nodes[f]), g.nodes[f].computeType, 1));
  scf::ForOp loop = emitFor(
      rowBegin, rowEnd, m.i64(1), inits, [&](Value row, ValueRange accs) {
        // The row's index along each row dim of the domain.
        unsigned rowDims = g.rank() ? g.rank() - 1 : 0;
        idx.assign(rowDims, Value());
        Value rest = row;
        for (unsigned d = rowDims; d-- > 1;) {
          idx[d] = b.create<arith::RemUIOp>(loc, rest, domain[d]);
          rest = b.create<arith::DivUIOp>(loc, rest, domain[d]);
        }
        if (rowDims)
          idx[0] = rest;
        auto isLast = [&](unsigned d) {
          return b.create<arith::CmpIOp>(
              loc, arith::CmpIPredicate::eq, idx[d],
              b.create<arith::SubIOp>(loc, domain[d], m.i64(1)));
        };

        rowValues.clear();
        rowOffsets.clear();
        for (unsigned n = 0; n < g.nodes.size(); ++n) {
          if (!p.needed.count(n))
            continue;
          if (g.nodes[n].kind == NodeKind::Leaf)
            rowOffsets[n] = rowOffset(leafAccess[n]);
          else if (g.nodes[n].kind == NodeKind::Dropout)
            rowOffsets[n] = rowOffset(dropoutAccess[n]);
        }
        resultPtr.assign(g.resultTypes.size(), Value());
        resultOffset.assign(g.resultTypes.size(), Value());
        if (p.writesResults)
          for (auto [k, r] : llvm::enumerate(g.results)) {
            if (g.nodes[r].level == Level::Global)
              continue;
            resultPtr[k] = resultAccess[k].ptr;
            resultOffset[k] = rowOffset(resultAccess[k]);
            if (resultGuards[k].empty())
              continue;
            // Not the last row that maps to these elements: write elsewhere.
            Value last = b.create<arith::ConstantIntOp>(loc, 1, 1);
            for (unsigned d : resultGuards[k])
              last = b.create<arith::AndIOp>(loc, last, isLast(d));
            resultPtr[k] = b.create<LLVM::SelectOp>(loc, last, resultPtr[k],
                                                    redirectPtr[k]);
            resultOffset[k] =
                b.create<arith::SelectOp>(loc, last, resultOffset[k], m.i64(0));
          }

        emitRowNodes(p, 0);
        for (int q = 0; q <= p.lastLoop; ++q) {
          emitColumnLoop(p, q);
          emitRowNodes(p, q + 1);
        }
        if (p.writesResults)
          for (auto [k, r] : llvm::enumerate(g.results))
            if (g.nodes[r].level == Level::Row)
              m.store(scalarOf(r), resultPtr[k], resultOffset[k],
                      g.resultTypes[k].getElementType());

        SmallVector<Value> next;
        for (auto [f, acc] : llvm::zip(p.fullReduces, accs)) {
          const Node &node = g.nodes[f];
          Value x = scalarOf(node.inputs[0]);
          Value keep = b.create<arith::ConstantIntOp>(loc, 1, 1);
          for (auto [d, size] : fullGuards[f]) {
            Value cond = isLast(d);
            if (size)
              cond = b.create<arith::OrIOp>(
                  loc, cond,
                  b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, size,
                                          domain[d]));
            keep = b.create<arith::AndIOp>(loc, keep, cond);
          }
          x = b.create<arith::SelectOp>(
              loc, keep, x,
              m.reductionInit(accumulation(node), node.computeType, 1));
          next.push_back(m.reductionStep(accumulation(node), acc, x));
        }
        return next;
      });
  for (auto [i, f] : llvm::enumerate(p.fullReduces)) {
    Value v = loop.getResult(i);
    if (ReduceFn(g.nodes[f].fn) == ReduceFn::Mean)
      v = b.create<arith::DivFOp>(loc, v, counts[f]);
    globals[f] = rounded(g.nodes[f], v);
  }
}

void KernelEmitter::emitGlobalResults() {
  auto write = [&] {
    for (auto [k, r] : llvm::enumerate(g.results))
      if (g.nodes[r].level == Level::Global)
        m.store(scalarOf(r), resultAccess[k].ptr, m.i64(0),
                g.resultTypes[k].getElementType());
  };
  bool any = llvm::any_of(
      g.results, [&](unsigned r) { return g.nodes[r].level == Level::Global; });
  if (!any)
    return;
  if (!g.parallel) {
    write();
    return;
  }
  // Every call of a parallel kernel computes the global values; the one
  // that starts at row 0 writes them.
  Value first = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, rowBegin,
                                        m.i64(0));
  b.create<scf::IfOp>(loc, first, [&](OpBuilder &nested, Location) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(nested.getInsertionBlock(), nested.getInsertionPoint());
    write();
    b.create<scf::YieldOp>(loc);
  });
}
