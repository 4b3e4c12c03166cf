//===- Program.cpp - A validated executable, ready to bind ----------------===//

#include "runtime/Program.h"

#include "abi/LibraryCalls.h"
#include "runtime/ExecutableValidation.h"
#include "runtime/SizePolynomial.h"

#include <algorithm>

namespace loom::runtime {

namespace {

/// The symbol a dim names by itself (a polynomial `1 * s`), or -1.
int32_t bareSymbol(const Dim &dim) {
  if (!dim.has_poly() || dim.poly().terms_size() != 1)
    return -1;
  const Monomial &term = dim.poly().terms(0);
  if (term.coefficient() != 1 || term.symbols_size() != 1)
    return -1;
  return term.symbols(0);
}

/// Whether `step` writes its argument `a`, by its kernel's record: the
/// generated kernel's signature, the library kernel's, and for a collective
/// (or a library kernel this runtime does not know) every argument.
ErrorOr<bool> stepWrites(const Executable &exe, const Step &step, int a) {
  const Kernel &kernel = exe.kernels(step.kernel());
  if (kernel.kind() == Kernel::GENERATED)
    return kernel.args(a).written();
  const abi::LibrarySignature *signature =
      kernel.kind() == Kernel::LIBRARY ? abi::librarySignature(kernel.symbol())
                                       : nullptr;
  if (!signature)
    return true;
  abi::CallAttrs attrs;
  attrs.ints.assign(step.int_attrs().begin(), step.int_attrs().end());
  attrs.floats.assign(step.float_attrs().begin(), step.float_attrs().end());
  auto args = abi::libraryCallArgs(*signature, attrs, step.args_size());
  if (!args)
    return args.status();
  return (*args)[a]->written;
}

} // namespace

Status Program::findAppends(const Executable &exe, Entry &entry) {
  std::map<int, int> inputIndex; // buffer -> index into entry.inputs
  for (size_t i = 0; i < entry.inputs.size(); ++i)
    inputIndex[entry.inputs[i].buffer] = static_cast<int>(i);
  std::map<int, std::vector<int>> writers; // root buffer -> steps
  for (int s = 0; s < entry.proto->steps_size(); ++s) {
    const Step &step = entry.proto->steps(s);
    for (int a = 0; a < step.args_size(); ++a) {
      ErrorOr<bool> writes = stepWrites(exe, step, a);
      if (!writes)
        return writes.status();
      if (*writes)
        writers[rootOf(exe, step.args(a))].push_back(s);
    }
  }
  for (Value &output : entry.outputs) {
    const std::vector<int> &by = writers[output.buffer];
    if (output.state >= 0 || by.size() != 1)
      continue;
    const Step &step = entry.proto->steps(by[0]);
    const Kernel &kernel = exe.kernels(step.kernel());
    int last = step.args_size() - 1;
    if (kernel.kind() != Kernel::LIBRARY || kernel.symbol() != "concat" ||
        last < 1 || step.args(last) != output.buffer)
      continue;
    abi::CallAttrs attrs;
    attrs.ints.assign(step.int_attrs().begin(), step.int_attrs().end());
    ErrorOr<abi::ConcatCall> concat = abi::ConcatCall::decode(attrs);
    auto input = inputIndex.find(step.args(0));
    if (concat && concat->dim == 0 && input != inputIndex.end())
      output.appendsTo = input->second;
  }
  return Status::success();
}

ErrorOr<std::shared_ptr<const Program>> Program::create(Executable exe) {
  LOOM_RETURN_IF_ERROR(validateExecutable(exe));
  return fromValidated(std::move(exe));
}

ErrorOr<std::shared_ptr<const Program>> Program::fromValidated(Executable exe) {
  std::shared_ptr<Program> program(new Program);
  program->exe = std::move(exe);
  LOOM_RETURN_IF_ERROR(program->prepare());
  return std::shared_ptr<const Program>(std::move(program));
}

ErrorOr<std::shared_ptr<const Program>> Program::load(const std::string &path) {
  // loadExecutable has validated the file; once is enough at start-up.
  ErrorOr<Executable> exe = loadExecutable(path);
  if (!exe)
    return exe.status();
  ErrorOr<std::shared_ptr<const Program>> program =
      fromValidated(std::move(*exe));
  if (!program)
    return program.status().withContext("'" + path + "'");
  return program;
}

Status Program::prepare() {
  std::map<std::string, int> stateBuffers = stateBuffersByName(exe);
  for (const Kernel &kernel : exe.kernels()) {
    std::vector<KernelAccess> flat;
    for (const Access &access : kernel.accesses()) {
      KernelAccess a;
      a.arg = access.arg();
      for (const AccessDim &dim : access.dims())
        a.dims.push_back(dim.has_size() ? dim.size() : ~int64_t(dim.arg_dim()));
      flat.push_back(std::move(a));
    }
    accesses.push_back(std::move(flat));
  }
  for (const Buffer &buffer : exe.buffers()) {
    uint64_t read = 0;
    for (const Dim &dim : buffer.shape())
      for (const Monomial &term : dim.poly().terms())
        for (int32_t s : term.symbols())
          read |= s >= 0 && s < 63 ? uint64_t(1) << s : uint64_t(1) << 63;
    sizesReadBy.push_back(read);
  }
  for (int b = 0; b < exe.buffers_size(); ++b) {
    const Buffer &buffer = exe.buffers(b);
    bool isState = buffer.role() == Buffer::PARAMETER ||
                   buffer.role() == Buffer::OPTIMIZER_STATE;
    if (!isState || buffer.has_view_of())
      continue;
    StateTensor state;
    state.name = buffer.name();
    state.buffer = b;
    state.isParameter = buffer.role() == Buffer::PARAMETER;
    state.dtype = *dtypeOfWire(buffer.dtype());
    for (const Dim &dim : buffer.shape()) {
      if (!dim.has_size())
        return Status::failure("'" + buffer.name() +
                                   "' is state with a dynamic shape",
                               ErrorCode::Corrupt);
      state.shape.push_back(dim.size());
    }
    stateList.push_back(std::move(state));
  }
  std::sort(stateList.begin(), stateList.end(),
            [](const StateTensor &a, const StateTensor &b) {
              return a.name < b.name;
            });
  for (size_t i = 0; i < stateList.size(); ++i)
    stateIndex[stateList[i].name] = static_cast<int>(i);

  for (const EntryPoint &proto : exe.entry_points()) {
    Entry entry;
    entry.name = proto.name();
    entry.proto = &proto;
    std::vector<bool> seen(exe.buffers_size());
    auto use = [&](int b) {
      for (int x : {b, exe.buffers(b).has_view_of()
                           ? static_cast<int>(exe.buffers(b).view_of())
                           : -1}) {
        if (x >= 0 && !seen[x]) {
          seen[x] = true;
          entry.used.push_back(x);
        }
      }
    };
    for (int b : proto.inputs()) {
      use(b);
      const Buffer &buffer = exe.buffers(b);
      if (buffer.role() == Buffer::INPUT)
        entry.inputs.push_back({localBufferName(buffer.name()), b,
                                *dtypeOfWire(buffer.dtype()), -1});
    }
    for (int b : proto.outputs()) {
      use(b);
      const Buffer &buffer = exe.buffers(b);
      Value output{localBufferName(buffer.name()), b,
                   *dtypeOfWire(buffer.dtype()), -1};
      // The optimizer's results are written over the state they replace
      // (validation checked that only @train_step has such outputs, each
      // of its state's dtype and shape).
      int written = stateWrittenBy(exe, stateBuffers, b);
      if (written >= 0)
        output.state = stateIndex.at(exe.buffers(written).name());
      entry.outputs.push_back(std::move(output));
    }
    for (const Step &step : proto.steps())
      for (int b : step.args())
        use(b);
    LOOM_RETURN_IF_ERROR(findAppends(exe, entry));
    entryList.push_back(std::move(entry));
  }
  return Status::success();
}

ErrorOr<const Program::Entry *> Program::entry(const std::string &name) const {
  std::string known;
  for (const Entry &e : entryList) {
    if (e.name == name)
      return &e;
    known += (known.empty() ? "" : ", ") + e.name;
  }
  return Status::failure("no entry point '" + name +
                             "' in the executable (it has " + known + ")",
                         ErrorCode::NotFound);
}

bool Program::hasEntry(const std::string &name) const {
  return std::any_of(entryList.begin(), entryList.end(),
                     [&](const Entry &e) { return e.name == name; });
}

const Program::StateTensor *
Program::stateTensor(const std::string &name) const {
  auto it = stateIndex.find(name);
  return it == stateIndex.end() ? nullptr : &stateList[it->second];
}

std::vector<std::string> Program::parameterNames() const {
  std::vector<std::string> names;
  for (const StateTensor &state : stateList)
    if (state.isParameter)
      names.push_back(state.name);
  return names;
}

int64_t Program::parameterCount() const {
  int64_t count = 0;
  for (const StateTensor &state : stateList)
    if (state.isParameter)
      count += numelOf(state.shape);
  return count;
}

ErrorOr<std::vector<int64_t>>
Program::bindSizes(const Entry &entry,
                   const std::vector<TensorRef> &inputs) const {
  if (inputs.size() != entry.inputs.size())
    return Status::failure("'" + entry.name + "' takes " +
                           std::to_string(entry.inputs.size()) +
                           " inputs, got " + std::to_string(inputs.size()));
  std::vector<int64_t> sizes(exe.symbols_size(), -1);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Value &value = entry.inputs[i];
    const Buffer &buffer = exe.buffers(value.buffer);
    const TensorRef &input = inputs[i];
    // Built only for a message: this runs for every input of every call.
    auto where = [&] { return "input '" + value.name + "'"; };
    if (input.dtype != value.dtype)
      return Status::failure(where() + " is " + dtypeName(input.dtype) +
                             ", expected " + dtypeName(value.dtype));
    if (input.rank() != buffer.shape_size())
      return Status::failure(where() + " has shape " + shapeString(input.shape) +
                             ", expected rank " +
                             std::to_string(buffer.shape_size()));
    for (int d = 0; d < buffer.shape_size(); ++d) {
      if (input.shape[d] < 0)
        return Status::failure(where() + " has a negative dim");
      int32_t s = bareSymbol(buffer.shape(d));
      if (s >= 0 && sizes[s] < 0)
        sizes[s] = input.shape[d];
    }
  }
  for (int64_t &size : sizes)
    if (size < 0)
      size = 0; // no input of this entry names it
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Buffer &buffer = exe.buffers(entry.inputs[i].buffer);
    for (int d = 0; d < buffer.shape_size(); ++d) {
      std::optional<int64_t> expected = evaluateDim(buffer.shape(d), sizes);
      if (expected != inputs[i].shape[d])
        return Status::failure(
            "input '" + entry.inputs[i].name + "' has shape " +
            shapeString(inputs[i].shape) + ", but its dim " +
            std::to_string(d) + " must be " +
            (expected ? std::to_string(*expected) : std::string("larger")) +
            " to agree with the other inputs");
    }
  }
  return sizes;
}

ErrorOr<std::vector<int64_t>>
Program::shapeOf(int buffer, const std::vector<int64_t> &sizes) const {
  std::vector<int64_t> shape;
  LOOM_RETURN_IF_ERROR(shapeInto(buffer, sizes, shape));
  return shape;
}

Status Program::shapeInto(int buffer, const std::vector<int64_t> &sizes,
                          std::vector<int64_t> &shape) const {
  const Buffer &proto = exe.buffers(buffer);
  shape.clear();
  int64_t bytes = dtypeSize(*dtypeOfWire(proto.dtype()));
  for (int d = 0; d < proto.shape_size(); ++d) {
    std::optional<int64_t> size = evaluateDim(proto.shape(d), sizes);
    if (!size || *size < 0)
      return Status::failure(
          "'" + proto.name() + "' has dim " + std::to_string(d) + " of " +
          (size ? std::to_string(*size) : std::string("more than 2^63")) +
          " for these inputs, which the executable is not defined for");
    if (__builtin_mul_overflow(bytes, *size, &bytes))
      return Status::failure("'" + proto.name() +
                             "' would take more than 2^63 bytes for these "
                             "inputs");
    shape.push_back(*size);
  }
  return Status::success();
}

Status Program::checkLaunch(int kernel,
                            const std::vector<TensorRef> &args) const {
  const std::vector<KernelAccess> &list = accesses[kernel];
  auto sizeOf = [&](const KernelAccess &a, size_t j) {
    int64_t d = a.dims[j];
    return d >= 0 ? d : args[a.arg].shape[~d];
  };
  size_t rank = 0;
  for (const KernelAccess &a : list)
    rank = std::max(rank, a.dims.size());
  // Small domains (a Transformer's have rank 4 at most) stay on the stack.
  int64_t stack[8];
  std::vector<int64_t> heap;
  int64_t *domain = stack;
  if (rank > 8) {
    heap.resize(rank);
    domain = heap.data();
  }
  std::fill(domain, domain + rank, int64_t(1));
  for (const KernelAccess &a : list) {
    size_t lead = rank - a.dims.size();
    for (size_t j = 0; j < a.dims.size(); ++j) {
      int64_t size = sizeOf(a, j);
      int64_t &common = domain[lead + j];
      if (size == 1)
        continue;
      if (common == 1)
        common = size;
      else if (common != size)
        return Status::failure("kernel '" + exe.kernels(kernel).name() +
                               "' lines up sizes " + std::to_string(common) +
                               " and " + std::to_string(size) + " along dim " +
                               std::to_string(lead + j) + " of its domain");
    }
  }
  for (const KernelAccess &a : list) {
    if (a.arg < 0)
      continue;
    int64_t walked = 1;
    for (size_t j = 0; j < a.dims.size(); ++j)
      if (__builtin_mul_overflow(walked, sizeOf(a, j), &walked))
        walked = INT64_MAX;
    if (walked > args[a.arg].numel())
      return Status::failure("kernel '" + exe.kernels(kernel).name() +
                             "' would walk " + std::to_string(walked) +
                             " elements of argument " + std::to_string(a.arg) +
                             ", which holds " +
                             std::to_string(args[a.arg].numel()));
  }
  return Status::success();
}

std::string Program::boundsString() const {
  return "max-tokens " + std::to_string(exe.max_tokens()) + ", max-len " +
         std::to_string(exe.max_len()) + ", max-batch " +
         std::to_string(exe.max_batch());
}

} // namespace loom::runtime
