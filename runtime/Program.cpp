//===- Program.cpp - A validated executable, ready to bind ----------------===//

#include "runtime/Program.h"

#include "abi/ModelAbi.h"

#include <algorithm>

namespace loom::runtime {

namespace {

/// The input or output name in a per-entry buffer name ("encode/input/src").
std::string localName(const std::string &name) {
  size_t slash = name.rfind('/');
  return slash == std::string::npos ? name : name.substr(slash + 1);
}

int64_t evaluate(const Dim &dim, const std::vector<int64_t> &sizes) {
  if (dim.has_size())
    return dim.size();
  int64_t total = 0;
  for (const Monomial &term : dim.poly().terms()) {
    int64_t value = term.coefficient();
    for (int32_t s : term.symbols())
      value *= sizes[s];
    total += value;
  }
  return total;
}

/// The symbol a dim names by itself (a polynomial `1 * s`), or -1.
int32_t bareSymbol(const Dim &dim) {
  if (!dim.has_poly() || dim.poly().terms_size() != 1)
    return -1;
  const Monomial &term = dim.poly().terms(0);
  if (term.coefficient() != 1 || term.symbols_size() != 1)
    return -1;
  return term.symbols(0);
}

} // namespace

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
        entry.inputs.push_back(
            {localName(buffer.name()), b, *dtypeOfWire(buffer.dtype()), -1});
    }
    for (int b : proto.outputs()) {
      use(b);
      const Buffer &buffer = exe.buffers(b);
      Value output{localName(buffer.name()), b, *dtypeOfWire(buffer.dtype()),
                   -1};
      // The optimizer's results are written over the state they replace.
      std::string target = output.name;
      if (abi::hasPrefix(target, abi::kUpdatedParamPrefix))
        target = target.substr(
            std::char_traits<char>::length(abi::kUpdatedParamPrefix));
      if (const StateTensor *state = stateTensor(target)) {
        bool same = buffer.shape_size() == int(state->shape.size()) &&
                    state->dtype == output.dtype;
        for (int d = 0; same && d < buffer.shape_size(); ++d)
          same = buffer.shape(d).has_size() &&
                 buffer.shape(d).size() == state->shape[d];
        if (same)
          output.state = stateIndex.at(target);
      }
      entry.outputs.push_back(std::move(output));
    }
    for (const Step &step : proto.steps())
      for (int b : step.args())
        use(b);
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
    std::string where = "input '" + value.name + "'";
    if (input.dtype != value.dtype)
      return Status::failure(where + " is " + dtypeName(input.dtype) +
                             ", expected " + dtypeName(value.dtype));
    if (input.rank() != buffer.shape_size())
      return Status::failure(where + " has shape " + shapeString(input.shape) +
                             ", expected rank " +
                             std::to_string(buffer.shape_size()));
    for (int d = 0; d < buffer.shape_size(); ++d) {
      if (input.shape[d] < 0)
        return Status::failure(where + " has a negative dim");
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
      int64_t expected = evaluate(buffer.shape(d), sizes);
      if (expected != inputs[i].shape[d])
        return Status::failure("input '" + entry.inputs[i].name +
                               "' has shape " + shapeString(inputs[i].shape) +
                               ", but its dim " + std::to_string(d) +
                               " must be " + std::to_string(expected) +
                               " to agree with the other inputs");
    }
  }
  return sizes;
}

std::vector<int64_t> Program::shapeOf(int buffer,
                                      const std::vector<int64_t> &sizes) const {
  std::vector<int64_t> shape;
  for (const Dim &dim : exe.buffers(buffer).shape())
    shape.push_back(evaluate(dim, sizes));
  return shape;
}

std::string Program::boundsString() const {
  return "max-tokens " + std::to_string(exe.max_tokens()) + ", max-len " +
         std::to_string(exe.max_len()) + ", max-batch " +
         std::to_string(exe.max_batch());
}

} // namespace loom::runtime
