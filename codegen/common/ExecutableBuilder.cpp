//===- ExecutableBuilder.cpp - Planned modules to executables -------------===//

#include "codegen/common/ExecutableBuilder.h"

#include "abi/Version.h"
#include "codegen/common/LibraryCalls.h"
#include "codegen/common/RegionGraph.h"
#include "ir/ArenaPlan.h"
#include "ir/LoomDialect.h"
#include "ir/ShapeUtils.h"
#include "runtime/Executable.h"
#include "runtime/ExecutableValidation.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"

using namespace mlir;

namespace loom {
namespace {

using runtime::Buffer;
using runtime::Executable;
using runtime::Kernel;

FailureOr<Buffer::DType> dtypeOf(Operation *where, Type type) {
  Type element = cast<ShapedType>(type).getElementType();
  if (element.isF32())
    return Buffer::F32;
  if (element.isF64())
    return Buffer::F64;
  if (element.isF16())
    return Buffer::F16;
  if (element.isBF16())
    return Buffer::BF16;
  if (element.isInteger(32))
    return Buffer::I32;
  if (element.isInteger(64))
    return Buffer::I64;
  if (element.isInteger(1))
    return Buffer::I1;
  return where->emitError("no buffer type for element type ") << element;
}

/// Whether `op` may reinterpret its first operand's bytes: a view, or a
/// slice, which the memory plan places on its operand's storage when it is
/// a contiguous piece of it.
bool isViewOp(Operation *op) {
  return op->hasTrait<loom::OpTrait::ViewOfOperand>() || isa<SliceOp>(op);
}

/// The operand of `returned` when `returned` is a view of the same bytes
/// (a reshape, not a slice) of an op's result that nothing else uses; null
/// otherwise.
Value viewedOnlyHere(Value returned) {
  Operation *view = returned.getDefiningOp();
  if (!view || !view->hasTrait<loom::OpTrait::ViewOfOperand>())
    return {};
  Value source = view->getOperand(0);
  Operation *producer = source.getDefiningOp();
  if (!producer || isViewOp(producer) || isa<ConstantOp>(producer) ||
      !source.hasOneUse() || !returned.hasOneUse())
    return {};
  return source;
}

/// Writes the entry points of one module into one Executable.
class Writer {
public:
  Writer(const ExecutableOptions &options, KernelTarget &target)
      : options(options), target(target) {}

  FailureOr<Executable> run(ModuleOp module);

private:
  LogicalResult writeFunction(func::FuncOp fn);

  /// The buffer for `v` of `fn`, created on first use.
  FailureOr<int> bufferFor(Value v);
  FailureOr<int> newBuffer(Value v, const std::string &name, Buffer::Role role);
  void setShape(Buffer &buffer, Value v);
  /// A COLLECTIVE step of `symbol` on `args`, paired with its partner by
  /// `id`.
  LogicalResult emitCollective(Operation *op, StringRef symbol, ValueRange args,
                               int id);
  FailureOr<int> kernelFor(const std::string &name, const std::string &symbol,
                           Kernel::Kind kind, int numArgs, bool parallel);
  int symbolIndex(const std::string &name);
  LogicalResult writeConstant(Buffer &buffer, ConstantOp op);
  LogicalResult recordSignature(Kernel &kernel, FusionOp fusion);
  LogicalResult checkLibraryCall(Operation *op, const LibraryCall &call);

  const ExecutableOptions &options;
  KernelTarget &target;
  Executable exe;
  llvm::StringMap<int> stateBuffers;  // parameters and optimizer state
  llvm::StringMap<int> kernelIndices; // by kernel name
  llvm::StringMap<int> symbolIndices;

  // Per function.
  func::FuncOp fn;
  SymbolicShapes shapes;
  llvm::DenseMap<Value, int> buffers;
  runtime::EntryPoint *entry = nullptr;
};

int Writer::symbolIndex(const std::string &name) {
  auto [it, inserted] = symbolIndices.try_emplace(name, exe.symbols_size());
  if (inserted)
    exe.add_symbols(name);
  return it->second;
}

void Writer::setShape(Buffer &buffer, Value v) {
  ArrayRef<std::string> names = shapes.symbolNames();
  for (const SizeExpr &size : shapes.dims(v)) {
    runtime::Dim *dim = buffer.add_shape();
    if (std::optional<int64_t> constant = size.getConstant()) {
      dim->set_size(*constant);
      continue;
    }
    runtime::SizePoly *poly = dim->mutable_poly();
    for (const SizeExpr::Term &term : size.terms()) {
      runtime::Monomial *monomial = poly->add_terms();
      monomial->set_coefficient(term.coefficient);
      for (unsigned id : term.symbols)
        monomial->add_symbols(symbolIndex(names[id]));
    }
  }
}

FailureOr<int> Writer::newBuffer(Value v, const std::string &name,
                                 Buffer::Role role) {
  Operation *where = v.getDefiningOp() ? v.getDefiningOp() : fn.getOperation();
  FailureOr<Buffer::DType> dtype = dtypeOf(where, v.getType());
  if (failed(dtype))
    return failure();
  int index = exe.buffers_size();
  Buffer *buffer = exe.add_buffers();
  buffer->set_name(name);
  buffer->set_role(role);
  buffer->set_dtype(*dtype);
  setShape(*buffer, v);
  buffers[v] = index;
  return index;
}

LogicalResult Writer::writeConstant(Buffer &buffer, ConstantOp op) {
  auto value = dyn_cast<DenseElementsAttr>(op.getValue());
  if (!value)
    return op.emitError("an executable needs dense constants");
  std::string &data = *buffer.mutable_data();
  Type element = value.getElementType();
  auto append = [&](const void *bytes, size_t n) {
    data.append(static_cast<const char *>(bytes), n);
  };
  int64_t count = cast<ShapedType>(op.getType()).getNumElements();
  if (isa<FloatType>(element)) {
    if (!element.isF32() && !element.isF64())
      return op.emitError("an executable holds f32 and f64 constants only");
    auto values = value.getValues<APFloat>();
    for (int64_t i = 0; i < count; ++i) {
      APFloat f = value.isSplat() ? value.getSplatValue<APFloat>() : values[i];
      if (element.isF32()) {
        float x = f.convertToFloat();
        append(&x, sizeof x);
      } else {
        double x = f.convertToDouble();
        append(&x, sizeof x);
      }
    }
    return success();
  }
  auto values = value.getValues<APInt>();
  for (int64_t i = 0; i < count; ++i) {
    APInt x = value.isSplat() ? value.getSplatValue<APInt>() : values[i];
    if (element.isInteger(1)) {
      uint8_t byte = x.getBoolValue();
      append(&byte, 1);
    } else if (element.isInteger(32)) {
      int32_t word = static_cast<int32_t>(x.getSExtValue());
      append(&word, sizeof word);
    } else {
      int64_t word = x.getSExtValue();
      append(&word, sizeof word);
    }
  }
  return success();
}

/// The byte offset of a contiguous slice within its operand, when every dim
/// after the sliced one is static.
std::optional<int64_t> staticSliceOffset(SliceOp slice) {
  auto type = cast<RankedTensorType>(slice.getInput().getType());
  std::optional<int64_t> axis = normalizeAxis(slice.getDim(), type.getRank());
  if (!axis || slice.getStart() < 0)
    return std::nullopt;
  for (int64_t i = 0; i < *axis; ++i)
    if (type.getDimSize(i) != 1)
      return std::nullopt;
  int64_t inner = elementByteWidth(type.getElementType());
  for (int64_t i = *axis + 1; i < type.getRank(); ++i) {
    if (type.isDynamicDim(i))
      return std::nullopt;
    inner *= type.getDimSize(i);
  }
  return slice.getStart() * inner;
}

FailureOr<int> Writer::bufferFor(Value v) {
  if (auto it = buffers.find(v); it != buffers.end())
    return it->second;
  std::string prefix = fn.getSymName().str() + "/";
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    unsigned i = arg.getArgNumber();
    for (auto [attr, role] :
         {std::pair{kParamAttr, Buffer::PARAMETER},
          std::pair{kOptStateAttr, Buffer::OPTIMIZER_STATE}}) {
      auto name = fn.getArgAttrOfType<StringAttr>(i, attr);
      if (!name)
        continue;
      // Shared by every entry point that takes it.
      if (auto it = stateBuffers.find(name.getValue());
          it != stateBuffers.end()) {
        buffers[v] = it->second;
        return it->second;
      }
      FailureOr<int> index = newBuffer(v, name.getValue().str(), role);
      if (succeeded(index))
        stateBuffers[name.getValue()] = *index;
      return index;
    }
    auto name = fn.getArgAttrOfType<StringAttr>(i, kInputAttr);
    return newBuffer(
        v,
        prefix + "input/" +
            (name ? name.getValue().str() : "arg" + std::to_string(i)),
        Buffer::INPUT);
  }

  Operation *op = v.getDefiningOp();
  unsigned resultIndex = cast<OpResult>(v).getResultNumber();
  std::string name = prefix + "%" + std::to_string(buffers.size());
  if (auto offsets = op->getAttrOfType<DenseI64ArrayAttr>(kOffsetsAttr)) {
    int64_t offset = offsets[resultIndex];
    if (offset >= 0) {
      FailureOr<int> index = newBuffer(v, name, Buffer::TEMPORARY);
      if (failed(index))
        return failure();
      std::optional<int64_t> elements =
          shapes.bound(shapes.numel(v), options.bounds);
      if (!elements)
        return op->emitError("the size of this result overflows");
      Buffer &buffer = *exe.mutable_buffers(*index);
      buffer.set_arena_offset(offset);
      buffer.set_max_bytes(*elements *
                           elementByteWidth(getElementTypeOrSelf(v)));
      return index;
    }
  }
  if (auto constant = dyn_cast<ConstantOp>(op)) {
    FailureOr<int> index = newBuffer(v, name, Buffer::CONSTANT);
    if (failed(index) ||
        failed(writeConstant(*exe.mutable_buffers(*index), constant)))
      return failure();
    return index;
  }
  // A view of a persistent buffer: the same bytes, from an offset.
  if (isViewOp(op)) {
    FailureOr<int> base = bufferFor(op->getOperand(0));
    if (failed(base))
      return failure();
    const Buffer &baseBuffer = exe.buffers(*base);
    int64_t offset = 0;
    if (auto slice = dyn_cast<SliceOp>(op)) {
      std::optional<int64_t> sliceOffset = staticSliceOffset(slice);
      if (!sliceOffset)
        return op->emitError("this slice has no storage of its own in the "
                             "memory plan, but is not a static contiguous "
                             "slice");
      offset = *sliceOffset;
    }
    if (baseBuffer.role() != Buffer::TEMPORARY) {
      int root = baseBuffer.has_view_of() ? baseBuffer.view_of() : *base;
      offset += baseBuffer.view_offset();
      Buffer::Role role = exe.buffers(root).role();
      FailureOr<int> index = newBuffer(v, name, role);
      if (failed(index))
        return failure();
      Buffer &buffer = *exe.mutable_buffers(*index);
      buffer.set_view_of(root);
      buffer.set_view_offset(offset);
      return index;
    }
  }
  return op->emitError("no storage for result #")
         << resultIndex << ": the module was not planned for this backend";
}

FailureOr<int> Writer::kernelFor(const std::string &name,
                                 const std::string &symbol, Kernel::Kind kind,
                                 int numArgs, bool parallel) {
  auto [it, inserted] = kernelIndices.try_emplace(name, exe.kernels_size());
  if (inserted) {
    Kernel *kernel = exe.add_kernels();
    kernel->set_name(name);
    kernel->set_symbol(symbol);
    kernel->set_kind(kind);
    kernel->set_num_args(numArgs);
    kernel->set_parallel(parallel);
  }
  return it->second;
}

/// Records what the kernel compiled from `fusion` expects of its arguments
/// (dtype, rank, static sizes, which it writes) and every shape through
/// which it touches them, so that the loader can hold each step to them.
LogicalResult Writer::recordSignature(Kernel &kernel, FusionOp fusion) {
  FailureOr<codegen::RegionGraph> built = codegen::buildRegionGraph(fusion);
  if (failed(built))
    return failure();
  const codegen::RegionGraph &g = *built;
  unsigned numOperands = g.operandTypes.size();
  auto addArg = [&](RankedTensorType type, bool written) -> LogicalResult {
    FailureOr<Buffer::DType> dtype = dtypeOf(fusion, type);
    if (failed(dtype))
      return failure();
    runtime::KernelArg *arg = kernel.add_args();
    arg->set_dtype(*dtype);
    for (int64_t d : type.getShape())
      arg->add_dims(ShapedType::isDynamic(d) ? -1 : d);
    arg->set_written(written);
    return success();
  };
  for (RankedTensorType type : g.operandTypes)
    if (failed(addArg(type, false)))
      return failure();
  for (RankedTensorType type : g.resultTypes)
    if (failed(addArg(type, true)))
      return failure();

  // The kernel's domain is the broadcast of the leaves its values read and
  // of its results (codegen::buildRegionGraph); record exactly those.
  auto addAccess = [&](int arg, unsigned firstDim,
                       const codegen::ShapeExpr &shape) -> LogicalResult {
    runtime::Access *access = kernel.add_accesses();
    access->set_arg(arg);
    int64_t rank =
        arg < 0 ? 0 : static_cast<int64_t>(kernel.args(arg).dims_size());
    for (const codegen::DimExpr &d : shape) {
      runtime::AccessDim *dim = access->add_dims();
      if (d.isStatic()) {
        dim->set_size(d.size);
        continue;
      }
      int64_t argDim = int64_t(d.sources.front()) - int64_t(firstDim);
      if (d.sources.size() != 1 || argDim < 0 || argDim >= rank)
        return fusion.emitError("internal error: a kernel reads argument #")
               << arg << " through a dim that is not one of its own";
      dim->set_arg_dim(static_cast<int32_t>(argDim));
    }
    return success();
  };
  std::vector<bool> used(g.nodes.size(), false);
  for (const codegen::Node &n : g.nodes)
    for (unsigned i : n.inputs)
      used[i] = true;
  for (unsigned r : g.results)
    used[r] = true;
  for (auto [n, node] : llvm::enumerate(g.nodes)) {
    if (node.kind != codegen::NodeKind::Leaf || !used[n])
      continue;
    // A constant array of the kernel's own (arg -1) only shapes the domain.
    int arg = node.operand;
    unsigned firstDim = arg >= 0 ? g.operandDims[arg] : 0;
    if (failed(addAccess(arg, firstDim, node.shape)))
      return failure();
  }
  for (auto [i, type] : llvm::enumerate(g.resultTypes))
    if (failed(addAccess(numOperands + i, g.resultDims[i],
                         codegen::shapeOfType(type, g.resultDims[i]))))
      return failure();
  return success();
}

/// Holds a library call to its kernel's signature (abi/LibraryCalls.h),
/// which the loader checks every executable against: a mismatch here is a
/// bug of the compiler, reported where it happens.
LogicalResult Writer::checkLibraryCall(Operation *op, const LibraryCall &call) {
  const abi::LibrarySignature *signature = abi::librarySignature(call.kernel);
  if (!signature)
    return op->emitError("internal error: no library kernel '")
           << call.kernel << "'";
  if (Status attrs = abi::checkLibraryAttrs(call.kernel, call.attrs);
      !attrs.ok())
    return op->emitError("internal error: ") << attrs.message();
  ErrorOr<std::vector<const abi::LibraryArg *>> args =
      abi::libraryCallArgs(*signature, call.attrs, call.args.size());
  if (!args)
    return op->emitError("internal error: ") << args.error();
  for (auto [value, arg] : llvm::zip(call.args, *args)) {
    auto type = cast<RankedTensorType>(value.getType());
    FailureOr<Buffer::DType> dtype = dtypeOf(op, type);
    if (failed(dtype))
      return failure();
    int64_t rank = type.getRank();
    bool written = llvm::is_contained(op->getResults(), value);
    if (!(arg->dtypes & abi::dtypeBit(*dtypeOfWire(*dtype))) ||
        rank < arg->minRank ||
        (arg->maxRank != abi::kAnyRank && rank > arg->maxRank) ||
        written != arg->written)
      return op->emitError("internal error: ")
             << type << " does not fit tensor '" << arg->name << "' of "
             << call.kernel;
  }
  return success();
}

LogicalResult Writer::writeFunction(func::FuncOp function) {
  fn = function;
  buffers.clear();
  shapes = SymbolicShapes();
  if (failed(shapes.analyze(fn)))
    return failure();
  entry = exe.add_entry_points();
  entry->set_name(fn.getSymName().str());
  if (auto arena = fn->getAttrOfType<IntegerAttr>(kArenaBytesAttr))
    entry->set_arena_bytes(arena.getInt());
  else
    return fn.emitError("function has no memory plan (loom.arena_bytes)");

  Block &body = fn.getBody().front();
  for (BlockArgument arg : body.getArguments()) {
    FailureOr<int> index = bufferFor(arg);
    if (failed(index))
      return failure();
    entry->add_inputs(*index);
  }

  // Outputs first, so that the op producing one writes straight into it.
  Operation *terminator = body.getTerminator();
  std::vector<std::pair<int, int>> copies; // (from, to) after the last step
  std::string prefix = fn.getSymName().str() + "/";
  const std::map<std::string, int> state = runtime::stateBuffersByName(exe);
  for (auto [i, v] : llvm::enumerate(terminator->getOperands())) {
    auto name = fn.getResultAttrOfType<StringAttr>(i, kOutputAttr);
    std::string bufferName =
        prefix + "output/" +
        (name ? name.getValue().str() : "result" + std::to_string(i));
    // A constant's bytes are in the executable, not written by a step.
    bool owned = !isa<BlockArgument>(v) && !v.getDefiningOp<ConstantOp>() &&
                 !buffers.count(v);
    Value key = v;
    if (!owned) {
      // An argument, a constant or a value returned twice: copied into its
      // own output.
      FailureOr<int> from = bufferFor(v);
      if (failed(from))
        return failure();
      FailureOr<Buffer::DType> dtype = dtypeOf(terminator, v.getType());
      if (failed(dtype))
        return failure();
      int to = exe.buffers_size();
      Buffer *buffer = exe.add_buffers();
      buffer->set_name(bufferName);
      buffer->set_role(Buffer::OUTPUT);
      buffer->set_dtype(*dtype);
      setShape(*buffer, v);
      copies.emplace_back(*from, to);
      entry->add_outputs(to);
      continue;
    }
    FailureOr<int> index = newBuffer(key, bufferName, Buffer::OUTPUT);
    if (failed(index))
      return failure();
    entry->add_outputs(*index);
    // A view (decode_step's log_probs: [batch, beam, vocab] reshaped to
    // [rows, vocab]) of a result nothing else reads: that result is placed on
    // the output's bytes, so its producer writes straight into the output
    // and the view costs no copy (its slice of the arena goes unused). Not
    // for an output the runtime writes over state (@train_step's "param.*"):
    // its copy stays after every step that may read the state.
    bool overState = runtime::stateWrittenBy(exe, state, *index) >= 0;
    if (Value source = overState ? Value() : viewedOnlyHere(v)) {
      FailureOr<int> placed =
          newBuffer(source, bufferName + "/viewed", Buffer::OUTPUT);
      if (failed(placed))
        return failure();
      Buffer &buffer = *exe.mutable_buffers(*placed);
      buffer.set_view_of(*index);
      buffer.set_view_offset(0);
    }
  }

  // All-reduces started and not yet waited for, with their ids.
  SmallVector<std::pair<AllReduceOp, int>> inFlight;
  int collectives = 0;
  auto waitBefore = [&](Operation *op) -> LogicalResult {
    for (auto it = inFlight.begin(); it != inFlight.end();) {
      if (it->first.waitPoint() != op) {
        ++it;
        continue;
      }
      if (failed(emitCollective(it->first, "all_reduce_wait",
                                it->first.getResults(), it->second)))
        return failure();
      it = inFlight.erase(it);
    }
    return success();
  };

  for (Operation &op : body.without_terminator()) {
    if (failed(waitBefore(&op)))
      return failure();
    if (isa<ConstantOp>(op)) {
      if (failed(bufferFor(op.getResult(0))))
        return failure();
      continue;
    }
    // Started where it stands, waited for where a result is first read
    // (AllReduceOp::waitPoint, which the memory plan keeps the buffers
    // alive until).
    if (auto allReduce = dyn_cast<AllReduceOp>(op)) {
      SmallVector<Value> args(allReduce.getInputs());
      llvm::append_range(args, allReduce.getResults());
      if (failed(
              emitCollective(allReduce, "all_reduce_start", args, collectives)))
        return failure();
      inFlight.push_back({allReduce, collectives++});
      continue;
    }
    SmallVector<int> resultBuffers;
    for (Value r : op.getResults()) {
      FailureOr<int> index = bufferFor(r);
      if (failed(index))
        return failure();
      resultBuffers.push_back(*index);
    }
    // A view placed on its operand's bytes needs no step.
    if (isViewOp(&op)) {
      const Buffer &result = exe.buffers(resultBuffers[0]);
      FailureOr<int> operand = bufferFor(op.getOperand(0));
      if (failed(operand))
        return failure();
      const Buffer &source = exe.buffers(*operand);
      bool sameArenaBytes =
          result.role() == Buffer::TEMPORARY &&
          source.role() == Buffer::TEMPORARY &&
          result.arena_offset() == source.arena_offset() &&
          (!isa<SliceOp>(op) || staticSliceOffset(cast<SliceOp>(op)) == 0);
      bool placedOnResult = source.has_view_of() &&
                            source.view_of() == resultBuffers[0] &&
                            source.view_offset() == 0;
      if (result.has_view_of() || sameArenaBytes || placedOnResult)
        continue;
    }

    runtime::Step *step = entry->add_steps();
    if (auto fusion = dyn_cast<FusionOp>(op)) {
      FailureOr<std::string> symbol = target.addRegion(fusion);
      if (failed(symbol))
        return failure();
      int numArgs = op.getNumOperands() + op.getNumResults();
      int known = exe.kernels_size();
      FailureOr<int> index = kernelFor(*symbol, *symbol, Kernel::GENERATED,
                                       numArgs, /*parallel=*/false);
      if (failed(index))
        return failure();
      if (*index == known) {
        Kernel &record = *exe.mutable_kernels(*index);
        if (failed(recordSignature(record, fusion)))
          return failure();
        target.describeKernel(record);
      }
      step->set_kernel(*index);
      for (Value operand : op.getOperands()) {
        FailureOr<int> b = bufferFor(operand);
        if (failed(b))
          return failure();
        step->add_args(*b);
      }
      for (int b : resultBuffers)
        step->add_args(b);
      continue;
    }
    FailureOr<LibraryCall> call = encodeLibraryCall(&op);
    if (failed(call) || failed(checkLibraryCall(&op, *call)))
      return failure();
    int numArgs = static_cast<int>(call->args.size());
    FailureOr<int> index =
        kernelFor(call->kernel + "." + std::to_string(numArgs), call->kernel,
                  Kernel::LIBRARY, numArgs, /*parallel=*/true);
    if (failed(index))
      return failure();
    step->set_kernel(*index);
    for (Value arg : call->args) {
      FailureOr<int> b = bufferFor(arg);
      if (failed(b))
        return failure();
      step->add_args(*b);
    }
    for (int64_t x : call->attrs.ints)
      step->add_int_attrs(x);
    for (double x : call->attrs.floats)
      step->add_float_attrs(x);
  }

  if (failed(waitBefore(terminator)))
    return failure();
  for (auto [from, to] : copies) {
    FailureOr<int> index =
        kernelFor("copy.2", "copy", Kernel::LIBRARY, 2, /*parallel=*/true);
    if (failed(index))
      return failure();
    runtime::Step *step = entry->add_steps();
    step->set_kernel(*index);
    step->add_args(from);
    step->add_args(to);
  }
  return success();
}

LogicalResult Writer::emitCollective(Operation *op, StringRef symbol,
                                     ValueRange args, int id) {
  int numArgs = static_cast<int>(args.size());
  FailureOr<int> index =
      kernelFor(symbol.str() + "." + std::to_string(numArgs), symbol.str(),
                Kernel::COLLECTIVE, numArgs, /*parallel=*/false);
  if (failed(index))
    return failure();
  runtime::Step *step = entry->add_steps();
  step->set_kernel(*index);
  for (Value arg : args) {
    FailureOr<int> b = bufferFor(arg);
    if (failed(b))
      return op->emitError("no buffer for an all-reduce argument");
    step->add_args(*b);
  }
  step->add_int_attrs(id);
  return success();
}

FailureOr<Executable> Writer::run(ModuleOp module) {
  exe.set_format_version(kFormatVersion);
  exe.set_config_text(options.configText);
  exe.set_max_tokens(options.bounds.maxTokens);
  exe.set_max_len(options.bounds.maxLen);
  exe.set_max_batch(options.bounds.maxBatch);
  exe.set_loom_version(kLoomVersion);
  for (auto function : module.getOps<func::FuncOp>())
    if (!function.isExternal() && failed(writeFunction(function)))
      return failure();
  if (failed(target.finish(module, exe)))
    return failure();
  exe.set_code_checksum(fnv1a64(exe.code()));
  if (Status valid = validateExecutable(exe); !valid.ok())
    return module.emitError("the written executable is invalid: ")
           << valid.message();
  return std::move(exe);
}

} // namespace

KernelTarget::~KernelTarget() = default;

FailureOr<runtime::Executable> buildExecutable(ModuleOp planned,
                                               const ExecutableOptions &options,
                                               KernelTarget &target) {
  Writer writer(options, target);
  return writer.run(planned);
}

} // namespace loom
