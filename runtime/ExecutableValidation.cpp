//===- ExecutableValidation.cpp - What an executable's parts mean ---------===//
//
// The invariants are those of codegen/cpu/ExecutableWriter.cpp:
//
//   - an entry point's inputs are its function's arguments: parameters and
//     optimizer state (shared by every entry point) and inputs of its own,
//     whose dims are static or one named size each; its outputs are buffers
//     of its own with the OUTPUT role;
//   - a step's results are temporaries or its entry point's outputs; views
//     (of parameters, inputs or outputs, with their base's role) and
//     constants are only read;
//   - the optimizer's results are outputs of @train_step named after the
//     state they replace;
//   - temporaries are sized by the planner's bound (SizePolynomial::bound),
//     and a step's results share storage with its other tensors only where
//     the memory plan writes in place, over exactly the operand's bytes.
//
//===----------------------------------------------------------------------===//

#include "runtime/ExecutableValidation.h"

#include "abi/ModelAbi.h"
#include "runtime/Executable.h"
#include "runtime/SizePolynomial.h"
#include "runtime/StepValidation.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

namespace loom::runtime {

namespace {

std::string quoted(const std::string &name) { return "'" + name + "'"; }

Status corrupt(std::string message) {
  return Status::failure(std::move(message), ErrorCode::Corrupt);
}

const char *roleName(Buffer::Role role) {
  switch (role) {
  case Buffer::PARAMETER:
    return "a parameter";
  case Buffer::GRADIENT:
    return "a gradient";
  case Buffer::OPTIMIZER_STATE:
    return "optimizer state";
  case Buffer::INPUT:
    return "an input";
  case Buffer::OUTPUT:
    return "an output";
  case Buffer::TEMPORARY:
    return "a temporary";
  case Buffer::CONSTANT:
    return "a constant";
  default:
    return "of no known role";
  }
}

bool isState(Buffer::Role role) {
  return role == Buffer::PARAMETER || role == Buffer::OPTIMIZER_STATE;
}

/// Where a buffer's bytes lie during one call of an entry point: a slice of
/// the arena, or (from `offset`) the memory of a persistent buffer.
struct Storage {
  bool arena = false;
  int root = -1;              // persistent: the buffer that owns the memory
  int64_t begin = 0, end = 0; // arena bytes [begin, end)
  bool whole = true;          // persistent: all of the root's memory
};

class Validator {
public:
  explicit Validator(const Executable &exe)
      : exe(exe), names(exe.symbols().begin(), exe.symbols().end()),
        state(stateBuffersByName(exe)) {}

  Status run();

private:
  Status checkBuffer(int b);
  Status checkEntry(int e);
  Status checkStep(int e, int s);
  Status checkCollectivePairs(int e);
  Status checkOverlaps(int e, int s);
  template <typename Where> Status checkBound(int e, int b, const Where &where);
  Storage storageOf(int b) const;

  const Executable &exe;
  const std::vector<std::string> names;
  const std::map<std::string, int> state;
  BufferDims dims;
  std::vector<std::vector<int32_t>> symbolsOf; // per buffer: the sizes named
  std::vector<int> inputOf, outputOf;          // the entry point, or -1

  // Per entry point, while it is checked.
  std::vector<bool> isInput, isOutput;
  std::vector<int> writtenState; // per output buffer: the state, or -1
  std::vector<bool> bound;       // per symbol: named by an input

  // Per step, reused.
  StepEffects effects;
  std::vector<Storage> storage;
};

Status Validator::run() {
  if (exe.max_tokens() < 0 || exe.max_len() < 0 || exe.max_batch() < 0)
    return corrupt("negative bounds (max_tokens " +
                   std::to_string(exe.max_tokens()) + ", max_len " +
                   std::to_string(exe.max_len()) + ", max_batch " +
                   std::to_string(exe.max_batch()) + ")");
  dims.resize(exe.buffers_size());
  symbolsOf.resize(exe.buffers_size());
  for (int b = 0; b < exe.buffers_size(); ++b)
    LOOM_RETURN_IF_ERROR(checkBuffer(b));
  for (int k = 0; k < exe.kernels_size(); ++k)
    LOOM_RETURN_IF_ERROR(validateGeneratedKernel(exe, k));
  inputOf.assign(exe.buffers_size(), -1);
  outputOf.assign(exe.buffers_size(), -1);
  for (int e = 0; e < exe.entry_points_size(); ++e)
    LOOM_RETURN_IF_ERROR(checkEntry(e));
  return Status::success();
}

Status Validator::checkBuffer(int b) {
  const Buffer &buffer = exe.buffers(b);
  auto where = [&] { return describeBuffer(exe, b); };
  if (buffer.role() == Buffer::GRADIENT)
    return corrupt(where() + " is a gradient buffer, which no entry point "
                             "reads or writes (gradients are outputs)");
  dims[b].reserve(buffer.shape_size());
  for (int d = 0; d < buffer.shape_size(); ++d) {
    auto dimWhere = [&] { return where() + ": dim " + std::to_string(d); };
    std::optional<SizePolynomial> dim = SizePolynomial::of(buffer.shape(d));
    if (!dim)
      return corrupt(dimWhere() + " is too large a polynomial (more than " +
                     std::to_string(SizePolynomial::kMaxDegree) +
                     " factors or terms, or coefficients that overflow)");
    // A static size was checked non-negative with the file's structure.
    std::optional<bool> nonNegative =
        buffer.shape(d).has_size() ? true : dim->nonNegativeForPositiveSizes();
    if (!nonNegative || !*nonNegative)
      return corrupt(dimWhere() + ", " + dim->str(names) +
                     ", is negative for some sizes >= 1");
    for (int32_t symbol : dim->symbols())
      symbolsOf[b].push_back(symbol);
    dims[b].push_back(std::move(*dim));
  }
  std::sort(symbolsOf[b].begin(), symbolsOf[b].end());
  symbolsOf[b].erase(std::unique(symbolsOf[b].begin(), symbolsOf[b].end()),
                     symbolsOf[b].end());
  bool view = buffer.has_view_of();
  if (isState(buffer.role()) && !view)
    for (int d = 0; d < buffer.shape_size(); ++d)
      if (!buffer.shape(d).has_size())
        return corrupt(where() + " is " + roleName(buffer.role()) +
                       " with a dynamic dim " + std::to_string(d));
  if (buffer.role() == Buffer::INPUT && !view)
    for (int d = 0; d < buffer.shape_size(); ++d) {
      const Dim &dim = buffer.shape(d);
      bool bare = dim.has_poly() && dim.poly().terms_size() == 1 &&
                  dim.poly().terms(0).coefficient() == 1 &&
                  dim.poly().terms(0).symbols_size() == 1;
      if (!dim.has_size() && !bare)
        return corrupt(where() + ": dim " + std::to_string(d) +
                       " of an input is " + dims[b][d].str(names) +
                       ", neither a size nor one named size");
    }

  int64_t elementBytes = dtypeSize(*dtypeOfWire(buffer.dtype()));
  if (view) {
    const Buffer &base = exe.buffers(buffer.view_of());
    auto baseWhere = [&] { return describeBuffer(exe, buffer.view_of()); };
    if (!isState(base.role()) && base.role() != Buffer::INPUT &&
        base.role() != Buffer::OUTPUT)
      return corrupt(where() + " is a view of " + baseWhere() + ", which is " +
                     roleName(base.role()));
    if (buffer.role() != base.role())
      return corrupt(where() + " is " + roleName(buffer.role()) +
                     " but views " + baseWhere() + ", which is " +
                     roleName(base.role()));
    // base bytes - view bytes - offset >= 0 at every admissible size.
    std::optional<SizePolynomial> baseBytes = SizePolynomial::product(
        base.shape(), dtypeSize(*dtypeOfWire(base.dtype())));
    std::optional<SizePolynomial> viewBytes =
        SizePolynomial::product(buffer.shape(), elementBytes);
    std::optional<SizePolynomial> spare =
        baseBytes && viewBytes ? baseBytes->minus(*viewBytes) : std::nullopt;
    if (spare)
      spare = spare->minus(SizePolynomial::constant(buffer.view_offset()));
    std::optional<bool> fits =
        spare ? spare->nonNegativeForPositiveSizes() : std::nullopt;
    if (!fits || !*fits)
      return corrupt(
          where() + " (" + std::to_string(elementBytes) +
          "-byte elements from byte " + std::to_string(buffer.view_offset()) +
          ") does not lie inside " + baseWhere() + " for every size");
  }
  if (buffer.role() == Buffer::TEMPORARY) {
    std::optional<SizePolynomial> bytes =
        SizePolynomial::product(buffer.shape(), elementBytes);
    std::optional<int64_t> most =
        bytes ? bytes->bound(names, exe.max_tokens(), exe.max_len(),
                             exe.max_batch())
              : std::nullopt;
    if (!most || *most > buffer.max_bytes())
      return corrupt(
          where() + " needs " +
          (most ? std::to_string(*most) : std::string("more than 2^63")) +
          " bytes at the bounds (max-tokens " +
          std::to_string(exe.max_tokens()) + ", max-len " +
          std::to_string(exe.max_len()) + ", max-batch " +
          std::to_string(exe.max_batch()) + ") but its slice holds " +
          std::to_string(buffer.max_bytes()));
  }
  return Status::success();
}

/// Checks that every size `b`'s dims name is one the entry point binds.
template <typename Where>
Status Validator::checkBound(int e, int b, const Where &where) {
  for (int32_t symbol : symbolsOf[b])
    if (!bound[symbol])
      return corrupt(where() + ": " + describeBuffer(exe, b) +
                     " has a dim of size " + quoted(names[symbol]) +
                     ", which no input of " + describeEntry(exe, e) + " names");
  return Status::success();
}

Status Validator::checkEntry(int e) {
  const EntryPoint &entry = exe.entry_points(e);
  auto where = [&] { return describeEntry(exe, e); };
  isInput.assign(exe.buffers_size(), false);
  isOutput.assign(exe.buffers_size(), false);
  writtenState.assign(exe.buffers_size(), -1);
  bound.assign(exe.symbols_size(), false);

  for (int i = 0; i < entry.inputs_size(); ++i) {
    int b = entry.inputs(i);
    const Buffer &buffer = exe.buffers(b);
    auto what = [&] {
      return where() + ": input " + std::to_string(i) + ", " +
             describeBuffer(exe, b);
    };
    Buffer::Role role = buffer.role();
    if ((!isState(role) && role != Buffer::INPUT) || buffer.has_view_of())
      return corrupt(what() + ", is " + roleName(role) +
                     (buffer.has_view_of() ? " view" : "") +
                     ", not a parameter, optimizer state or an input");
    if (isInput[b])
      return corrupt(what() + ", is taken twice");
    isInput[b] = true;
    if (role == Buffer::INPUT) {
      if (inputOf[b] >= 0)
        return corrupt(what() + ", is an input of " +
                       describeEntry(exe, inputOf[b]) + " too");
      inputOf[b] = e;
      for (int32_t symbol : symbolsOf[b])
        bound[symbol] = true;
    }
  }

  std::set<int> stateWritten;
  for (int o = 0; o < entry.outputs_size(); ++o) {
    int b = entry.outputs(o);
    const Buffer &buffer = exe.buffers(b);
    auto what = [&] {
      return where() + ": output " + std::to_string(o) + ", " +
             describeBuffer(exe, b);
    };
    if (buffer.role() != Buffer::OUTPUT || buffer.has_view_of())
      return corrupt(what() + ", is " + roleName(buffer.role()) +
                     (buffer.has_view_of() ? " view" : "") +
                     ", not an output of its own");
    if (isOutput[b])
      return corrupt(what() + ", is returned twice");
    if (outputOf[b] >= 0)
      return corrupt(what() + ", is an output of " +
                     describeEntry(exe, outputOf[b]) + " too");
    isOutput[b] = true;
    outputOf[b] = e;
    int s = stateWrittenBy(exe, state, b);
    if (s < 0)
      continue;
    const Buffer &target = exe.buffers(s);
    auto over = [&] {
      return what() + ", would be written over " + describeBuffer(exe, s) +
             ", " + roleName(target.role());
    };
    if (entry.name() != abi::kTrainStep)
      return corrupt(over() + ", but only @" + abi::kTrainStep +
                     " updates state");
    bool updated = abi::hasPrefix(localBufferName(buffer.name()),
                                  abi::kUpdatedParamPrefix);
    if (updated != (target.role() == Buffer::PARAMETER))
      return corrupt(over() + ": a parameter is written by an output named " +
                     abi::kUpdatedParamPrefix +
                     "<parameter>, optimizer state by one of its own name");
    if (!isInput[s])
      return corrupt(over() + ", which " + where() + " does not take");
    bool same = buffer.dtype() == target.dtype() &&
                buffer.shape_size() == target.shape_size();
    for (int d = 0; same && d < buffer.shape_size(); ++d)
      same = buffer.shape(d).has_size() &&
             buffer.shape(d).size() == target.shape(d).size();
    if (!same)
      return corrupt(over() + ", whose dtype or shape differs");
    if (!stateWritten.insert(s).second)
      return corrupt(over() + ", which another output is written over too");
    writtenState[b] = s;
  }

  for (int i = 0; i < entry.inputs_size(); ++i)
    LOOM_RETURN_IF_ERROR(checkBound(e, entry.inputs(i), where));
  for (int o = 0; o < entry.outputs_size(); ++o)
    LOOM_RETURN_IF_ERROR(checkBound(e, entry.outputs(o), where));
  for (int s = 0; s < entry.steps_size(); ++s)
    LOOM_RETURN_IF_ERROR(checkStep(e, s));
  return checkCollectivePairs(e);
}

Status Validator::checkCollectivePairs(int e) {
  const EntryPoint &entry = exe.entry_points(e);
  // By id: the step that started it, then -1 once it is waited for.
  std::map<int64_t, int> started;
  std::set<int64_t> waited;
  for (int s = 0; s < entry.steps_size(); ++s) {
    const Step &step = entry.steps(s);
    const Kernel &kernel = exe.kernels(step.kernel());
    if (kernel.kind() != Kernel::COLLECTIVE)
      continue;
    int64_t id = step.int_attrs(0);
    auto where = [&] { return describeStep(exe, e, s); };
    if (kernel.symbol() == "all_reduce_start") {
      if (started.count(id) || waited.count(id))
        return corrupt(where() + " starts all-reduce " + std::to_string(id) +
                       " a second time");
      started[id] = s;
      continue;
    }
    auto it = started.find(id);
    if (it == started.end())
      return corrupt(where() + " waits for all-reduce " + std::to_string(id) +
                     ", which no earlier step started or which was waited "
                     "for already");
    const Step &start = entry.steps(it->second);
    int n = start.args_size() / 2;
    bool same = step.args_size() == n;
    for (int i = 0; same && i < n; ++i)
      same = step.args(i) == start.args(n + i);
    if (!same)
      return corrupt(where() + " waits for other tensors than all-reduce " +
                     std::to_string(id) + " writes");
    started.erase(it);
    waited.insert(id);
  }
  if (!started.empty())
    return corrupt(describeEntry(exe, e) + " never waits for all-reduce " +
                   std::to_string(started.begin()->first));
  return Status::success();
}

Status Validator::checkStep(int e, int s) {
  const Step &step = exe.entry_points(e).steps(s);
  LOOM_RETURN_IF_ERROR(runtime::checkStep(exe, dims, e, s, effects));
  auto where = [&] { return describeStep(exe, e, s); };
  for (int a = 0; a < step.args_size(); ++a) {
    int b = step.args(a);
    const Buffer &buffer = exe.buffers(b);
    auto what = [&] {
      return where() + ": argument " + std::to_string(a) + ", " +
             describeBuffer(exe, b) + ",";
    };
    LOOM_RETURN_IF_ERROR(checkBound(e, b, where));
    // Inputs and outputs exist only in a call of their own entry point.
    int root = rootOf(exe, b);
    Buffer::Role role = buffer.role();
    if (role == Buffer::INPUT && !isInput[root])
      return corrupt(what() + " is an input " + describeEntry(exe, e) +
                     " does not take");
    if (role == Buffer::OUTPUT && !isOutput[root])
      return corrupt(what() + " is an output " + describeEntry(exe, e) +
                     " does not return");
    if (!effects.written[a])
      continue;
    // An output's view too: a result placed on the bytes of the output
    // returned as its reshape.
    bool writable = role == Buffer::TEMPORARY || role == Buffer::OUTPUT;
    if (!writable)
      return corrupt(what() + " is " + roleName(role) +
                     (buffer.has_view_of() ? " view" : "") + ", which " +
                     describeKernel(exe, step.kernel()) +
                     " would write; a step writes only temporaries and "
                     "outputs");
  }
  return checkOverlaps(e, s);
}

Storage Validator::storageOf(int b) const {
  const Buffer &buffer = exe.buffers(b);
  Storage storage;
  if (buffer.role() == Buffer::TEMPORARY) {
    storage.arena = true;
    storage.begin = buffer.arena_offset();
    storage.end = buffer.arena_offset() + buffer.max_bytes();
    return storage;
  }
  storage.root = rootOf(exe, b);
  storage.whole = !buffer.has_view_of();
  // An output written over state is that state's memory.
  if (writtenState[storage.root] >= 0)
    storage.root = writtenState[storage.root];
  return storage;
}

Status Validator::checkOverlaps(int e, int s) {
  const Step &step = exe.entry_points(e).steps(s);
  // The optimizer's kernels take hundreds of arguments: each one's storage
  // once, then the pairs.
  storage.clear();
  for (int a = 0; a < step.args_size(); ++a)
    storage.push_back(storageOf(step.args(a)));
  for (int w = 0; w < step.args_size(); ++w) {
    if (!effects.written[w])
      continue;
    const Storage &written = storage[w];
    for (int a = 0; a < step.args_size(); ++a) {
      const Storage &other = storage[a];
      if (a == w || written.arena != other.arena)
        continue;
      bool overlap, identical;
      if (written.arena) {
        overlap = written.begin < other.end && other.begin < written.end &&
                  written.begin < written.end && other.begin < other.end;
        identical = written.begin == other.begin;
      } else {
        overlap = written.root == other.root;
        identical = written.whole && other.whole;
      }
      if (!overlap)
        continue;
      // In place: a result over exactly the bytes of an operand the kernel
      // reads each row of before it writes it.
      if (identical && !effects.written[a] && effects.mayShareWithResult[a])
        continue;
      return corrupt(
          describeStep(exe, e, s) + ": " + describeKernel(exe, step.kernel()) +
          " writes argument " + std::to_string(w) + ", " +
          describeBuffer(exe, step.args(w)) + ", over the memory of argument " +
          std::to_string(a) + ", " + describeBuffer(exe, step.args(a)) +
          " (a result may occupy only exactly the bytes of an operand the "
          "kernel reads in place)");
    }
  }
  return Status::success();
}

} // namespace

std::string describeBuffer(const Executable &exe, int index) {
  return "buffer '" + exe.buffers(index).name() + "' (#" +
         std::to_string(index) + ")";
}

std::string describeKernel(const Executable &exe, int index) {
  return "kernel '" + exe.kernels(index).name() + "' (#" +
         std::to_string(index) + ")";
}

std::string describeEntry(const Executable &exe, int index) {
  return "entry point '" + exe.entry_points(index).name() + "' (#" +
         std::to_string(index) + ")";
}

std::string describeStep(const Executable &exe, int entry, int step) {
  return "step " + std::to_string(step) + " of '" +
         exe.entry_points(entry).name() + "'";
}

int rootOf(const Executable &exe, int b) {
  return exe.buffers(b).has_view_of() ? exe.buffers(b).view_of() : b;
}

std::string localBufferName(const std::string &name) {
  size_t slash = name.rfind('/');
  return slash == std::string::npos ? name : name.substr(slash + 1);
}

std::map<std::string, int> stateBuffersByName(const Executable &exe) {
  std::map<std::string, int> state;
  for (int b = 0; b < exe.buffers_size(); ++b) {
    const Buffer &buffer = exe.buffers(b);
    if (isState(buffer.role()) && !buffer.has_view_of())
      state.emplace(buffer.name(), b);
  }
  return state;
}

int stateWrittenBy(const Executable &exe,
                   const std::map<std::string, int> &state, int output) {
  std::string target = localBufferName(exe.buffers(output).name());
  if (abi::hasPrefix(target, abi::kUpdatedParamPrefix))
    target =
        target.substr(std::char_traits<char>::length(abi::kUpdatedParamPrefix));
  auto it = state.find(target);
  return it == state.end() ? -1 : it->second;
}

Status validateSemantics(const Executable &exe) { return Validator(exe).run(); }

} // namespace loom::runtime
