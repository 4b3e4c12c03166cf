//===- Interpreter.cpp - The reference interpreter ------------------------===//
//
// Element kinds, rounding, and the evaluation loop: argument checks, one op at
// a time through `evaluateOp` (InterpreterOps.cpp), a check of each result
// against its declared type, rounding, and freeing each value after its last
// use so that a large model's activations do not all stay alive at once.
//
//===----------------------------------------------------------------------===//

#include "ir/Interpreter.h"
#include "ir/ArenaPlan.h"
#include "ir/InterpreterKernels.h"
#include "ir/InterpreterOps.h"
#include "ir/ShapeUtils.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

using namespace mlir;
using namespace loom;

//===----------------------------------------------------------------------===//
// Element kinds and tensors
//===----------------------------------------------------------------------===//

llvm::Expected<DType> loom::dtypeOfType(Type type) {
  if (type.isF16())
    return DType::F16;
  if (type.isBF16())
    return DType::BF16;
  if (type.isF32())
    return DType::F32;
  if (type.isF64())
    return DType::F64;
  if (type.isSignlessInteger(1))
    return DType::I1;
  if (type.isSignlessInteger(32))
    return DType::I32;
  if (type.isSignlessInteger(64))
    return DType::I64;
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "unsupported element type " << type;
  return llvm::createStringError(os.str());
}

int64_t loom::shapeNumel(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

HostTensor::HostTensor(std::vector<int64_t> shape, DType kind)
    : shape(std::move(shape)), kind(kind) {
  data.assign(shapeNumel(this->shape), 0.0);
}

HostTensor::HostTensor(std::vector<int64_t> shape, DType kind,
                       std::vector<double> data)
    : shape(std::move(shape)), kind(kind), data(std::move(data)) {}

HostTensor HostTensor::scalar(double value, DType kind) {
  return HostTensor({}, kind, {value});
}

/// Rounds to a binary format with `mantissaBits` explicit fraction bits, a
/// smallest normal exponent `minExp` and a largest exponent `maxExp`, to
/// nearest with ties to even, with gradual underflow and overflow to infinity.
/// Rounding the double directly (not through float) avoids double rounding.
static double roundToFormat(double x, int mantissaBits, int minExp,
                            int maxExp) {
  if (x == 0.0 || !std::isfinite(x))
    return x;
  int exp = std::max(std::ilogb(x), minExp);
  double quantum = std::ldexp(1.0, exp - mantissaBits);
  // x / quantum is exact (a power-of-two scale) and nearbyint rounds half to
  // even in the default rounding mode.
  double r = std::nearbyint(x / quantum) * quantum;
  double maxFinite = std::ldexp(2.0 - std::ldexp(1.0, -mantissaBits), maxExp);
  if (std::fabs(r) > maxFinite)
    return std::copysign(INFINITY, x);
  return r;
}

double loom::roundToKind(double value, DType kind) {
  switch (kind) {
  case DType::F32:
    return static_cast<double>(static_cast<float>(value));
  case DType::BF16:
    return roundToFormat(value, 7, -126, 127);
  case DType::F16:
    return roundToFormat(value, 10, -14, 15);
  default:
    return value;
  }
}

void interp::roundInPlace(HostTensor &t) {
  switch (t.kind) {
  case DType::F32:
    for (double &v : t.data)
      v = static_cast<double>(static_cast<float>(v));
    return;
  case DType::BF16:
  case DType::F16:
    for (double &v : t.data)
      v = roundToKind(v, t.kind);
    return;
  default:
    return;
  }
}

//===----------------------------------------------------------------------===//
// Evaluation
//===----------------------------------------------------------------------===//

std::string interp::describeOp(Operation *op) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "'" << op->getName() << "' at ";
  op->getLoc().print(os);
  return os.str();
}

llvm::Error interp::opError(Operation *op, const llvm::Twine &message) {
  return llvm::createStringError(describeOp(op) + ": " + message.str());
}

llvm::Error interp::checkFits(const HostTensor &t, Type type,
                              const llvm::Twine &what) {
  auto ranked = dyn_cast<RankedTensorType>(type);
  if (!ranked) {
    std::string s;
    llvm::raw_string_ostream os(s);
    os << type;
    return interp::kernelError(what + " has type " + s +
                               ", which the interpreter does not support");
  }
  auto kind = dtypeOfType(ranked.getElementType());
  if (!kind)
    return interp::kernelError(what + ": " + llvm::toString(kind.takeError()));
  bool shapeFits = t.rank() == ranked.getRank();
  for (int64_t i = 0; shapeFits && i < t.rank(); ++i)
    shapeFits = t.shape[i] >= 0 &&
                (ranked.isDynamicDim(i) || ranked.getDimSize(i) == t.shape[i]);
  if (*kind != t.kind || !shapeFits) {
    std::string s;
    llvm::raw_string_ostream os(s);
    os << type;
    return interp::kernelError(what + " is " + interp::typeString(t) +
                               " but its type is " + s);
  }
  if (static_cast<int64_t>(t.data.size()) != shapeNumel(t.shape))
    return interp::kernelError(what + " holds " + llvm::Twine(t.data.size()) +
                               " values for shape " +
                               interp::shapeString(t.shape));
  return llvm::Error::success();
}

namespace {

/// Runs functions of one module; `depth` bounds recursion through func.call.
class Evaluator : public interp::Callee {
public:
  Evaluator(ModuleOp module, InterpreterOptions options)
      : module(module), options(options) {}

  llvm::Expected<std::vector<HostTensor>>
  call(StringRef name, llvm::ArrayRef<const HostTensor *> args) override;
  bool f64() const override { return options.f64; }
  llvm::Expected<std::vector<HostTensor>>
  allReduce(llvm::ArrayRef<const HostTensor *> operands) override {
    if (options.allReduce)
      return options.allReduce(operands);
    return Callee::allReduce(operands);
  }

private:
  llvm::Expected<std::vector<HostTensor>>
  runBody(func::FuncOp fn, llvm::ArrayRef<const HostTensor *> args);

  ModuleOp module;
  InterpreterOptions options;
  int depth = 0;
};

/// A value of the function being run: an argument (borrowed) or an op's
/// result (owned until its last use).
struct Slot {
  HostTensor owned;
  const HostTensor *ptr = nullptr;
  size_t lastUse = 0;
};

} // namespace

llvm::Expected<std::vector<HostTensor>>
Evaluator::call(StringRef name, llvm::ArrayRef<const HostTensor *> args) {
  auto fn = module.lookupSymbol<func::FuncOp>(name);
  if (!fn)
    return interp::kernelError("no function @" + name + " in the module");
  if (fn.isExternal())
    return interp::kernelError("function @" + name + " has no body");
  FunctionType type = fn.getFunctionType();
  if (args.size() != type.getNumInputs())
    return interp::kernelError("function @" + name + " takes " +
                               llvm::Twine(type.getNumInputs()) +
                               " arguments, got " + llvm::Twine(args.size()));
  for (auto [i, arg] : llvm::enumerate(args))
    if (llvm::Error err =
            interp::checkFits(*arg, type.getInput(i),
                              "argument #" + llvm::Twine(i) + " of @" + name))
      return err;
  if (depth >= 64)
    return interp::kernelError("calls nest deeper than 64 at @" + name);
  ++depth;
  auto results = runBody(fn, args);
  --depth;
  return results;
}

llvm::Expected<std::vector<HostTensor>>
Evaluator::runBody(func::FuncOp fn, llvm::ArrayRef<const HostTensor *> args) {
  if (!fn.getBody().hasOneBlock())
    return interp::kernelError("function @" + fn.getSymName() +
                               " has more than one block");
  Block &body = fn.getBody().front();

  // Number every value and find the op index of its last use.
  llvm::DenseMap<Value, unsigned> slotOf;
  for (BlockArgument arg : body.getArguments())
    slotOf[arg] = slotOf.size();
  for (Operation &op : body)
    for (Value r : op.getResults())
      slotOf[r] = slotOf.size();
  std::vector<Slot> slots(slotOf.size());
  std::vector<Operation *> ops;
  for (Operation &op : body) {
    size_t index = ops.size();
    ops.push_back(&op);
    for (Value r : op.getResults())
      slots[slotOf[r]].lastUse = index;
    for (Value v : op.getOperands()) {
      auto it = slotOf.find(v);
      if (it == slotOf.end())
        return interp::opError(&op, "uses a value defined outside @" +
                                        fn.getSymName());
      slots[it->second].lastUse = index;
    }
  }
  for (auto [i, arg] : llvm::enumerate(args))
    slots[i].ptr = arg;

  ByteArena arena;
  if (options.useArenaPlan) {
    auto planned = ByteArena::forFunction(fn);
    if (!planned)
      return planned.takeError();
    if (planned->hasPlan() && options.f64)
      return interp::kernelError("the arena plan of @" + fn.getSymName() +
                                 " holds element types; it cannot run in f64");
    arena = std::move(*planned);
  }

  std::vector<const HostTensor *> operands;
  for (auto [index, op] : llvm::enumerate(ops)) {
    operands.clear();
    for (Value v : op->getOperands()) {
      Slot &slot = slots[slotOf[v]];
      const HostTensor *t = slot.ptr;
      if (!t)
        return interp::opError(op, "uses a value before it is defined");
      if (arena.offsetOf(v) >= 0)
        if (llvm::Error err = arena.load(v, slot.owned))
          return interp::opError(op, llvm::toString(std::move(err)));
      operands.push_back(t);
    }

    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      std::vector<HostTensor> results;
      for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
        Slot &slot = slots[slotOf[v]];
        bool usedAgain =
            llvm::is_contained(ret.getOperands().drop_front(i + 1), v);
        if (slot.ptr == &slot.owned && !usedAgain)
          results.push_back(std::move(slot.owned));
        else
          results.push_back(*slot.ptr);
      }
      return results;
    }

    auto results = interp::evaluateOp(op, operands, *this);
    if (!results)
      return results.takeError();
    if (results->size() != op->getNumResults())
      return interp::opError(op, "produced " + llvm::Twine(results->size()) +
                                     " results, expected " +
                                     llvm::Twine(op->getNumResults()));
    for (auto [r, t] : llvm::zip(op->getResults(), *results)) {
      if (llvm::Error err = interp::checkFits(t, r.getType(), "the result"))
        return interp::opError(op, llvm::toString(std::move(err)));
      if (!options.f64)
        interp::roundInPlace(t);
      if (arena.offsetOf(r) >= 0)
        if (llvm::Error err = arena.store(r, t))
          return interp::opError(op, llvm::toString(std::move(err)));
      Slot &slot = slots[slotOf[r]];
      slot.owned = std::move(t);
      slot.ptr = &slot.owned;
    }

    // Free what this op was the last to read (and results nobody reads).
    auto release = [&](Value v) {
      Slot &slot = slots[slotOf[v]];
      if (slot.lastUse != index)
        return;
      slot.owned = HostTensor();
      slot.ptr = nullptr;
    };
    for (Value v : op->getOperands())
      release(v);
    for (Value r : op->getResults())
      release(r);
  }
  return interp::kernelError("function @" + fn.getSymName() +
                             " ends without func.return");
}

Interpreter::Interpreter(ModuleOp module, InterpreterOptions options)
    : module(module), options(options) {}

llvm::Expected<std::vector<HostTensor>>
Interpreter::run(llvm::StringRef name, llvm::ArrayRef<HostTensor> args) const {
  std::vector<const HostTensor *> ptrs;
  for (const HostTensor &t : args)
    ptrs.push_back(&t);
  Evaluator evaluator(module, options);
  return evaluator.call(name, ptrs);
}
