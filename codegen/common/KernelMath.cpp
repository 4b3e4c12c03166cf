//===- KernelMath.cpp - Scalar and vector arithmetic for kernels ----------===//

#include "codegen/common/KernelMath.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"

#include <cmath>

using namespace mlir;
using namespace loom;
using namespace loom::codegen;

static unsigned lanesOf(Value v) {
  auto vec = dyn_cast<VectorType>(v.getType());
  return vec ? vec.getNumElements() : 1;
}

static bool isFloat(Value v) {
  return isa<FloatType>(getElementTypeOrSelf(v.getType()));
}

arith::FastMathFlagsAttr KernelMath::fastmath() {
  return arith::FastMathFlagsAttr::get(b.getContext(),
                                       arith::FastMathFlags::contract);
}

Type KernelMath::typeOf(Type elem, unsigned lanes) const {
  return lanes == 1 ? elem : VectorType::get({lanes}, elem);
}

Value KernelMath::constant(Type elem, double value, unsigned lanes) {
  if (!isa<FloatType>(elem))
    return intConstant(elem, int64_t(value), lanes);
  TypedAttr attr = b.getFloatAttr(elem, value);
  if (lanes > 1)
    attr = DenseElementsAttr::get(llvm::cast<ShapedType>(typeOf(elem, lanes)),
                                  attr);
  return b.create<arith::ConstantOp>(loc, attr);
}

Value KernelMath::intConstant(Type elem, int64_t value, unsigned lanes) {
  TypedAttr attr = b.getIntegerAttr(elem, value);
  if (lanes > 1)
    attr = DenseElementsAttr::get(llvm::cast<ShapedType>(typeOf(elem, lanes)),
                                  attr);
  return b.create<arith::ConstantOp>(loc, attr);
}

Value KernelMath::splat(Value scalar, unsigned lanes) {
  if (lanes == 1 || isa<VectorType>(scalar.getType()))
    return scalar;
  return b.create<vector::BroadcastOp>(loc, typeOf(scalar.getType(), lanes),
                                       scalar);
}

Value KernelMath::add(Value a, Value c) {
  return b.create<arith::AddIOp>(loc, a, c);
}

Value KernelMath::mul(Value a, Value c) {
  return b.create<arith::MulIOp>(loc, a, c);
}

Value KernelMath::dimValue(const DimExpr &d, ArrayRef<Value> dims) {
  if (d.isStatic())
    return i64(d.size);
  // NumPy: sizes agree or one of them is 1.
  Value v = dims[d.sources.front()];
  for (unsigned s : ArrayRef<unsigned>(d.sources).drop_front()) {
    Value isOne =
        b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, v, i64(1));
    v = b.create<arith::SelectOp>(loc, isOne, dims[s], v);
  }
  return v;
}

SmallVector<Value> KernelMath::domainStrides(const ShapeExpr &shape,
                                             size_t rank,
                                             ArrayRef<Value> dims) {
  size_t k = shape.size();
  SmallVector<Value> sizes, strides(k);
  for (const DimExpr &d : shape)
    sizes.push_back(dimValue(d, dims));
  Value running = i64(1);
  for (size_t j = k; j-- > 0;) {
    strides[j] = running;
    running = mul(running, sizes[j]);
  }
  SmallVector<Value> out;
  for (size_t d = 0; d < rank; ++d) {
    int64_t j = int64_t(d) - int64_t(rank - k);
    if (j < 0 || shape[j].isStaticOne()) {
      out.push_back(nullptr);
    } else if (shape[j].isStatic()) {
      out.push_back(strides[j]);
    } else {
      Value isOne = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq,
                                            sizes[j], i64(1));
      out.push_back(b.create<arith::SelectOp>(loc, isOne, i64(0), strides[j]));
    }
  }
  return out;
}

Value KernelMath::libmCall(StringRef f32Name, StringRef f64Name,
                           ValueRange args) {
  Type elem = getElementTypeOrSelf(args[0].getType());
  StringRef name = elem.isF64() ? f64Name : f32Name;
  if (!libm) {
    // Named by the f64 function: the math op of the same meaning.
    if (f64Name == "sin")
      return b.create<math::SinOp>(loc, args[0]);
    if (f64Name == "cos")
      return b.create<math::CosOp>(loc, args[0]);
    if (f64Name == "erf")
      return b.create<math::ErfOp>(loc, args[0]);
    if (f64Name == "tanh")
      return b.create<math::TanhOp>(loc, args[0]);
    if (f64Name == "pow")
      return b.create<math::PowFOp>(loc, args[0], args[1]);
  }
  auto fnType = FunctionType::get(b.getContext(),
                                  SmallVector<Type>(args.size(), elem), elem);
  if (!module.lookupSymbol<func::FuncOp>(name)) {
    OpBuilder top(module.getBodyRegion());
    auto decl = top.create<func::FuncOp>(loc, name, fnType);
    decl.setPrivate();
  }
  unsigned lanes = lanesOf(args[0]);
  if (lanes == 1)
    return b.create<func::CallOp>(loc, name, elem, args).getResult(0);
  // libm has no vector entry points we can rely on: one call per lane.
  Value out = constant(elem, 0.0, lanes);
  for (unsigned i = 0; i < lanes; ++i) {
    Value pos = b.create<arith::ConstantIntOp>(loc, i, 32);
    SmallVector<Value> scalars;
    for (Value a : args)
      scalars.push_back(b.create<vector::ExtractElementOp>(loc, a, pos));
    Value r = b.create<func::CallOp>(loc, name, elem, scalars).getResult(0);
    out = b.create<vector::InsertElementOp>(loc, r, out, pos);
  }
  return out;
}

Value KernelMath::unary(UnaryFn fn, Value x) {
  Type elem = getElementTypeOrSelf(x.getType());
  unsigned lanes = lanesOf(x);
  auto one = [&] { return constant(elem, 1.0, lanes); };
  auto fm = fastmath();
  // The polynomial approximations are for f32; f64 calls libm.
  auto erf = [&](Value v) -> Value {
    if (elem.isF64())
      return libmCall("erff", "erf", v);
    return b.create<math::ErfOp>(loc, v);
  };
  switch (fn) {
  case UnaryFn::Neg:
    return b.create<arith::NegFOp>(loc, x, fm);
  case UnaryFn::Abs:
    return b.create<math::AbsFOp>(loc, x);
  case UnaryFn::Exp:
    return b.create<math::ExpOp>(loc, x);
  case UnaryFn::Log:
    return b.create<math::LogOp>(loc, x);
  case UnaryFn::Sqrt:
    return b.create<math::SqrtOp>(loc, x);
  case UnaryFn::Rsqrt:
    // 1 / sqrt rather than an estimate: the interpreter's is exact.
    return b.create<arith::DivFOp>(loc, one(), b.create<math::SqrtOp>(loc, x),
                                   fm);
  case UnaryFn::Tanh:
    if (elem.isF64())
      return libmCall("tanhf", "tanh", x);
    return b.create<math::TanhOp>(loc, x);
  case UnaryFn::Sigmoid: {
    // exp(-x) overflows to inf for very negative x, which still gives 0.
    Value e = b.create<math::ExpOp>(loc, b.create<arith::NegFOp>(loc, x, fm));
    return b.create<arith::DivFOp>(
        loc, one(), b.create<arith::AddFOp>(loc, one(), e, fm), fm);
  }
  case UnaryFn::Relu: {
    // x < 0 ? 0 : x keeps NaN, as torch.relu does.
    Value zero = constant(elem, 0.0, lanes);
    Value neg =
        b.create<arith::CmpFOp>(loc, arith::CmpFPredicate::OLT, x, zero);
    return b.create<arith::SelectOp>(loc, neg, zero, x);
  }
  case UnaryFn::Gelu: {
    Value scaled =
        b.create<arith::MulFOp>(loc, x, constant(elem, M_SQRT1_2, lanes), fm);
    Value phi = b.create<arith::AddFOp>(loc, one(), erf(scaled), fm);
    Value half =
        b.create<arith::MulFOp>(loc, x, constant(elem, 0.5, lanes), fm);
    return b.create<arith::MulFOp>(loc, half, phi, fm);
  }
  case UnaryFn::Erf:
    return erf(x);
  case UnaryFn::Sin:
    return libmCall("sinf", "sin", x);
  case UnaryFn::Cos:
    return libmCall("cosf", "cos", x);
  }
  return x;
}

Value KernelMath::binary(BinaryFn fn, Value x, Value y) {
  auto fm = fastmath();
  if (isFloat(x)) {
    switch (fn) {
    case BinaryFn::Add:
      return b.create<arith::AddFOp>(loc, x, y, fm);
    case BinaryFn::Sub:
      return b.create<arith::SubFOp>(loc, x, y, fm);
    case BinaryFn::Mul:
      return b.create<arith::MulFOp>(loc, x, y, fm);
    case BinaryFn::Div:
      return b.create<arith::DivFOp>(loc, x, y, fm);
    case BinaryFn::Max:
      return b.create<arith::MaximumFOp>(loc, x, y);
    case BinaryFn::Min:
      return b.create<arith::MinimumFOp>(loc, x, y);
    case BinaryFn::Pow:
      return libmCall("powf", "pow", {x, y});
    }
  }
  switch (fn) {
  case BinaryFn::Add:
    return b.create<arith::AddIOp>(loc, x, y);
  case BinaryFn::Sub:
    return b.create<arith::SubIOp>(loc, x, y);
  case BinaryFn::Mul:
    return b.create<arith::MulIOp>(loc, x, y);
  case BinaryFn::Div: {
    // The interpreter rejects a zero divisor; a kernel must not trap on
    // one (nor on INT_MIN / -1), so both get a harmless divisor.
    Type elem = getElementTypeOrSelf(x.getType());
    unsigned lanes = lanesOf(x);
    Value zero = intConstant(elem, 0, lanes), one = intConstant(elem, 1, lanes);
    Value minusOne = intConstant(elem, -1, lanes);
    Value isZero =
        b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, y, zero);
    Value isMinusOne =
        b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, y, minusOne);
    Value safe = b.create<arith::SelectOp>(
        loc, b.create<arith::OrIOp>(loc, isZero, isMinusOne), one, y);
    Value q = b.create<arith::DivSIOp>(loc, x, safe);
    Value negated = b.create<arith::SubIOp>(loc, zero, x);
    return b.create<arith::SelectOp>(loc, isMinusOne, negated, q);
  }
  case BinaryFn::Max:
    return b.create<arith::MaxSIOp>(loc, x, y);
  case BinaryFn::Min:
    return b.create<arith::MinSIOp>(loc, x, y);
  case BinaryFn::Pow:
    break;
  }
  return x;
}

Value KernelMath::compare(ComparePredicate p, Value x, Value y) {
  if (isFloat(x)) {
    // `ne` is unordered (NaN != anything), the others ordered, as in C.
    arith::CmpFPredicate pred = arith::CmpFPredicate::OEQ;
    switch (p) {
    case ComparePredicate::eq:
      pred = arith::CmpFPredicate::OEQ;
      break;
    case ComparePredicate::ne:
      pred = arith::CmpFPredicate::UNE;
      break;
    case ComparePredicate::lt:
      pred = arith::CmpFPredicate::OLT;
      break;
    case ComparePredicate::le:
      pred = arith::CmpFPredicate::OLE;
      break;
    case ComparePredicate::gt:
      pred = arith::CmpFPredicate::OGT;
      break;
    case ComparePredicate::ge:
      pred = arith::CmpFPredicate::OGE;
      break;
    }
    return b.create<arith::CmpFOp>(loc, pred, x, y);
  }
  // i1 holds 0 and 1, not 0 and -1: compare it unsigned.
  bool u = getElementTypeOrSelf(x.getType()).isInteger(1);
  arith::CmpIPredicate pred = arith::CmpIPredicate::eq;
  switch (p) {
  case ComparePredicate::eq:
    pred = arith::CmpIPredicate::eq;
    break;
  case ComparePredicate::ne:
    pred = arith::CmpIPredicate::ne;
    break;
  case ComparePredicate::lt:
    pred = u ? arith::CmpIPredicate::ult : arith::CmpIPredicate::slt;
    break;
  case ComparePredicate::le:
    pred = u ? arith::CmpIPredicate::ule : arith::CmpIPredicate::sle;
    break;
  case ComparePredicate::gt:
    pred = u ? arith::CmpIPredicate::ugt : arith::CmpIPredicate::sgt;
    break;
  case ComparePredicate::ge:
    pred = u ? arith::CmpIPredicate::uge : arith::CmpIPredicate::sge;
    break;
  }
  return b.create<arith::CmpIOp>(loc, pred, x, y);
}

Value KernelMath::select(Value c, Value x, Value y) {
  return b.create<arith::SelectOp>(loc, c, x, y);
}

Value KernelMath::cast(Value x, Type to) {
  Type from = getElementTypeOrSelf(x.getType());
  unsigned lanes = lanesOf(x);
  Type toType = typeOf(to, lanes);
  if (from == to)
    return x;
  if (to.isInteger(1)) {
    if (isa<FloatType>(from))
      return b.create<arith::CmpFOp>(loc, arith::CmpFPredicate::UNE, x,
                                     constant(from, 0.0, lanes));
    return b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ne, x,
                                   intConstant(from, 0, lanes));
  }
  if (from.isInteger(1))
    return isa<FloatType>(to) ? Value(b.create<arith::UIToFPOp>(loc, toType, x))
                              : Value(b.create<arith::ExtUIOp>(loc, toType, x));
  if (isa<FloatType>(from) && isa<FloatType>(to)) {
    if (from.getIntOrFloatBitWidth() < to.getIntOrFloatBitWidth())
      return b.create<arith::ExtFOp>(loc, toType, x);
    return b.create<arith::TruncFOp>(loc, toType, x);
  }
  if (isa<FloatType>(to))
    return b.create<arith::SIToFPOp>(loc, toType, x);
  if (isa<FloatType>(from)) {
    // Truncate toward zero, saturating, NaN to 0 (fptosi alone is poison
    // out of range). The bounds are exact in f64.
    Type f64 = b.getF64Type();
    Value wide =
        from.isF64()
            ? x
            : Value(b.create<arith::ExtFOp>(loc, typeOf(f64, lanes), x));
    bool is64 = to.isInteger(64);
    double lo = is64 ? -9223372036854775808.0 : -2147483648.0;
    double hi = is64 ? 9223372036854774784.0 : 2147483647.0;
    Value clamped = b.create<arith::MinimumFOp>(
        loc, b.create<arith::MaximumFOp>(loc, wide, constant(f64, lo, lanes)),
        constant(f64, hi, lanes));
    Value isNan =
        b.create<arith::CmpFOp>(loc, arith::CmpFPredicate::UNO, wide, wide);
    clamped =
        b.create<arith::SelectOp>(loc, isNan, constant(f64, 0, lanes), clamped);
    return b.create<arith::FPToSIOp>(loc, toType, clamped);
  }
  if (from.getIntOrFloatBitWidth() < to.getIntOrFloatBitWidth())
    return b.create<arith::ExtSIOp>(loc, toType, x);
  return b.create<arith::TruncIOp>(loc, toType, x);
}

Value KernelMath::mix64(Value x) {
  // SplitMix64's finalizer, as abi/CounterRng.h; i64 multiplication wraps.
  unsigned lanes = lanesOf(x);
  Type i64 = b.getI64Type();
  auto shiftXor = [&](Value v, int64_t s) {
    Value shifted =
        b.create<arith::ShRUIOp>(loc, v, intConstant(i64, s, lanes));
    return b.create<arith::XOrIOp>(loc, v, shifted);
  };
  x = shiftXor(x, 30);
  x = b.create<arith::MulIOp>(
      loc, x, intConstant(i64, int64_t(0xbf58476d1ce4e5b9ULL), lanes));
  x = shiftXor(x, 27);
  x = b.create<arith::MulIOp>(
      loc, x, intConstant(i64, int64_t(0x94d049bb133111ebULL), lanes));
  return shiftXor(x, 31);
}

Value KernelMath::dropoutKey(Value seed, Value offset) {
  Type i64 = b.getI64Type();
  Value s = b.create<arith::AddIOp>(
      loc, seed, intConstant(i64, int64_t(0x9e3779b97f4a7c15ULL), 1));
  Value salt = b.create<arith::MulIOp>(
      loc, offset, intConstant(i64, int64_t(0xd6e8feb86659fd93ULL), 1));
  return mix64(b.create<arith::XOrIOp>(loc, mix64(s), salt));
}

Value KernelMath::dropout(Value x, Value key, Value index, double rate) {
  if (rate == 0.0)
    return x;
  unsigned lanes = lanesOf(x);
  Type i64 = b.getI64Type();
  Type elem = getElementTypeOrSelf(x.getType());
  // uniform = (h >> 11) * 2^-53 >= rate  <=>  (h >> 11) >= ceil(rate * 2^53),
  // exactly: both sides are integers below 2^53 scaled by a power of two.
  auto threshold = int64_t(std::ceil(rate * 9007199254740992.0));
  Value h = b.create<arith::AddIOp>(
      loc, splat(key, lanes),
      b.create<arith::MulIOp>(
          loc, index, intConstant(i64, int64_t(0x9e3779b97f4a7c15ULL), lanes)));
  Value bits =
      b.create<arith::ShRUIOp>(loc, mix64(h), intConstant(i64, 11, lanes));
  Value keep = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::uge, bits,
                                       intConstant(i64, threshold, lanes));
  Value scaled = b.create<arith::MulFOp>(
      loc, x, constant(elem, 1.0 / (1.0 - rate), lanes), fastmath());
  return b.create<arith::SelectOp>(loc, keep, scaled,
                                   constant(elem, 0.0, lanes));
}

Type KernelMath::storageType(Type memoryType) {
  return memoryType.isInteger(1) ? b.getI8Type() : memoryType;
}

Value KernelMath::load(Value ptr, Value offset, Type memoryType,
                       Type computeType, unsigned lanes) {
  Type storage = storageType(memoryType);
  auto ptrType = LLVM::LLVMPointerType::get(b.getContext());
  Value addr = b.create<LLVM::GEPOp>(loc, ptrType, storage, ptr,
                                     ValueRange{offset}, /*inbounds=*/true);
  unsigned align = std::max(1u, storage.getIntOrFloatBitWidth() / 8);
  Value v = b.create<LLVM::LoadOp>(loc, typeOf(storage, lanes), addr, align);
  if (memoryType.isInteger(1))
    return b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ne, v,
                                   intConstant(storage, 0, lanes));
  if (storage != computeType)
    return b.create<arith::ExtFOp>(loc, typeOf(computeType, lanes), v);
  return v;
}

void KernelMath::store(Value value, Value ptr, Value offset, Type memoryType) {
  Type storage = storageType(memoryType);
  unsigned lanes = lanesOf(value);
  if (memoryType.isInteger(1))
    value = b.create<arith::ExtUIOp>(loc, typeOf(storage, lanes), value);
  else if (getElementTypeOrSelf(value.getType()) != storage)
    value = b.create<arith::TruncFOp>(loc, typeOf(storage, lanes), value);
  auto ptrType = LLVM::LLVMPointerType::get(b.getContext());
  Value addr = b.create<LLVM::GEPOp>(loc, ptrType, storage, ptr,
                                     ValueRange{offset}, /*inbounds=*/true);
  unsigned align = std::max(1u, storage.getIntOrFloatBitWidth() / 8);
  b.create<LLVM::StoreOp>(loc, value, addr, align);
}

Value KernelMath::reductionInit(ReduceFn fn, Type elem, unsigned lanes) {
  return constant(elem, fn == ReduceFn::Max ? -INFINITY : 0.0, lanes);
}

Value KernelMath::reductionStep(ReduceFn fn, Value acc, Value x) {
  if (fn == ReduceFn::Max)
    return b.create<arith::MaximumFOp>(loc, acc, x);
  // reassoc lets LLVM reorder the sum (the interpreter's order is not
  // ours anyway); contract lets x*x + acc become an FMA.
  auto flags = arith::FastMathFlagsAttr::get(
      b.getContext(),
      arith::FastMathFlags::reassoc | arith::FastMathFlags::contract);
  return b.create<arith::AddFOp>(loc, acc, x, flags);
}

Value KernelMath::reductionFinish(ReduceFn fn, Value acc) {
  if (!isa<VectorType>(acc.getType()))
    return acc;
  auto kind = fn == ReduceFn::Max ? vector::CombiningKind::MAXIMUMF
                                  : vector::CombiningKind::ADD;
  return b.create<vector::ReductionOp>(loc, kind, acc,
                                       arith::FastMathFlags::reassoc);
}
