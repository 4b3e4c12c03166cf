//===- Session.cpp - A program running on a device ------------------------===//

#include "runtime/Session.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>

namespace loom::runtime {

ErrorOr<std::unique_ptr<Session>>
Session::create(std::shared_ptr<const Program> program,
                std::shared_ptr<Device> device) {
  if (!program || !device)
    return Status::failure("a session needs a program and a device",
                           ErrorCode::Internal);
  const Executable &exe = program->executable();
  if (exe.target() != device->target())
    return Status::failure(
        "the executable targets " + Executable::Target_Name(exe.target()) +
            ", but the device '" + device->name() + "' runs " +
            Executable::Target_Name(device->target()),
        ErrorCode::Unsupported);
  std::unique_ptr<Session> session(new Session);
  session->prog = std::move(program);
  session->dev = std::move(device);
  const char *sync = std::getenv("LOOM_SYNC_EVERY_STEP");
  session->syncEveryStep = sync && *sync && std::string(sync) != "0";
  LOOM_RETURN_IF_ERROR(session->loadCode());
  LOOM_RETURN_IF_ERROR(session->place());
  return session;
}

ErrorOr<std::unique_ptr<Session>>
Session::createSharing(Session &owner, std::shared_ptr<Device> device) {
  if (!device)
    return Status::failure("a session needs a device", ErrorCode::Internal);
  if (device->target() != owner.dev->target() || !device->sharesHostMemory() ||
      !owner.dev->sharesHostMemory())
    return Status::failure("sessions share their state only on devices "
                           "whose memory is the host's, '" +
                               device->name() + "' and '" + owner.dev->name() +
                               "' are not",
                           ErrorCode::Unsupported);
  std::unique_ptr<Session> session(new Session);
  session->prog = owner.prog;
  session->dev = std::move(device);
  session->syncEveryStep = owner.syncEveryStep;
  LOOM_RETURN_IF_ERROR(session->loadCode());
  session->code->shareCachesOf(*owner.code);
  // From here on the contents never change, whoever wrote them: numbers
  // without kWrittenByStep let the caches derive from them on first use,
  // the same for every session.
  for (const Program::StateTensor &state : owner.prog->state())
    if (owner.versions[state.buffer] & kWrittenByStep)
      owner.renumber(state.buffer);
  owner.placed->shared = true;
  session->placed = owner.placed;
  session->versions = owner.versions;
  return session;
}

Session::~Session() = default;

Status Session::loadCode() {
  const Executable &exe = prog->executable();
  ErrorOr<std::unique_ptr<DeviceCode>> loaded = dev->loadCode(exe);
  if (!loaded)
    return loaded.status();
  code = std::move(*loaded);
  for (const Kernel &kernel : exe.kernels())
    kernelTimes.push_back({kernel.name(), 0, 0});
  return Status::success();
}

Status Session::place() {
  const Executable &exe = prog->executable();
  // State and constants live as long as the session, or the last session
  // sharing them.
  placed = std::make_shared<Placed>();
  placed->device = dev;
  std::vector<Tensor> &buffers = placed->tensors;
  buffers.resize(exe.buffers_size());
  versions.assign(exe.buffers_size(), 0);
  for (const Program::StateTensor &state : prog->state()) {
    ErrorOr<Tensor> t = Tensor::onDevice(*dev, state.dtype, state.shape);
    if (!t)
      return t.status().withContext("state '" + state.name + "'");
    buffers[state.buffer] = std::move(*t);
    renumber(state.buffer);
  }
  for (int b = 0; b < exe.buffers_size(); ++b) {
    const Buffer &buffer = exe.buffers(b);
    if (buffer.role() != Buffer::CONSTANT || buffer.has_view_of())
      continue;
    ErrorOr<std::vector<int64_t>> shape = prog->shapeOf(b, {});
    if (!shape)
      return shape.status();
    TensorRef host{const_cast<char *>(buffer.data().data()),
                   *dtypeOfWire(buffer.dtype()), std::move(*shape)};
    ErrorOr<Tensor> t = toDevice(*dev, host);
    if (!t)
      return t.status().withContext("constant '" + buffer.name() + "'");
    buffers[b] = std::move(*t);
    renumber(b);
  }
  return Status::success();
}

std::vector<std::string> Session::stateNames() const {
  std::vector<std::string> names;
  for (const Program::StateTensor &state : prog->state())
    names.push_back(state.name);
  return names;
}

Tensor *Session::state(const std::string &name) {
  const Program::StateTensor *state = prog->stateTensor(name);
  if (!state || placed->shared)
    return nullptr;
  renumber(state->buffer);
  return &placed->tensors[state->buffer];
}

void Session::renumber(int buffer, bool byStep) {
  // Unique across sessions, so that no device mistakes a new session's
  // state at a reused address for an old one's.
  static std::atomic<uint64_t> next{1};
  versions[buffer] = next.fetch_add(1, std::memory_order_relaxed) |
                     (byStep ? kWrittenByStep : 0);
}

StepHook::~StepHook() = default;

Status Session::setState(const std::string &name, const TensorRef &value) {
  if (placed->shared && prog->stateTensor(name))
    return Status::failure("'" + name +
                               "' is shared with another session's decoder, "
                               "which reads it: it cannot be written",
                           ErrorCode::Unsupported);
  Tensor *target = state(name);
  if (!target)
    return Status::failure("the model has no state '" + name + "'",
                           ErrorCode::NotFound);
  if (value.dtype != target->dtype() || value.shape != target->shape())
    return Status::failure("'" + name + "' is " + dtypeName(target->dtype()) +
                           " " + shapeString(target->shape()) + ", got " +
                           dtypeName(value.dtype) + " " +
                           shapeString(value.shape));
  return dev->copy(target->data(), value.data, target->bytes(),
                   CopyDirection::HostToDevice);
}

ErrorOr<Tensor> Session::getState(const std::string &name) const {
  const Program::StateTensor *state = prog->stateTensor(name);
  if (!state)
    return Status::failure("the model has no state '" + name + "'",
                           ErrorCode::NotFound);
  return toHost(placed->tensors[state->buffer]);
}

std::vector<std::string> Session::inputNames(const std::string &name) const {
  std::vector<std::string> names;
  if (ErrorOr<const Program::Entry *> entry = prog->entry(name))
    for (const Program::Value &input : (*entry)->inputs)
      names.push_back(input.name);
  return names;
}

std::vector<KernelProfile> Session::profile() const {
  std::vector<KernelProfile> sorted;
  for (const KernelProfile &p : kernelTimes)
    if (p.calls)
      sorted.push_back(p);
  std::sort(sorted.begin(), sorted.end(),
            [](const KernelProfile &a, const KernelProfile &b) {
              return a.seconds > b.seconds;
            });
  return sorted;
}

void Session::recycle(Tensor tensor) {
  if (!tensor.data() || tensor.device() != dev.get())
    return;
  // Enough for decoding's one output per step; the oldest goes first.
  constexpr size_t kMaxSpares = 4;
  if (spares.size() == kMaxSpares)
    spares.erase(spares.begin());
  spares.push_back(std::move(tensor));
}

ErrorOr<char *> Session::arenaFor(int64_t bytes) {
  if (bytes <= arena.bytes() && arena.data())
    return static_cast<char *>(arena.data());
  arena = Tensor(); // free the old one first: only one is ever needed
  ErrorOr<Tensor> grown =
      Tensor::onDevice(*dev, DType::I1, {std::max<int64_t>(bytes, 1)});
  if (!grown)
    return grown.status();
  arena = std::move(*grown);
  return static_cast<char *>(arena.data());
}

ErrorOr<std::vector<NamedTensor>>
Session::run(const std::string &name, const std::vector<TensorRef> &inputs) {
  return run(name, inputs, {});
}

ErrorOr<std::vector<NamedTensor>>
Session::run(const std::string &name, const std::vector<TensorRef> &inputs,
             const std::map<std::string, TensorRef> &appendInto) {
  const Executable &exe = prog->executable();
  ErrorOr<const Program::Entry *> found = prog->entry(name);
  if (!found)
    return found.status();
  const Program::Entry &entry = **found;
  if (placed->shared)
    for (const Program::Value &output : entry.outputs)
      if (output.state >= 0)
        return Status::failure(
            "'" + name + "' writes state ('" + output.name +
                "'), which this session shares with another one's decoder",
            ErrorCode::Unsupported);
  ErrorOr<std::vector<int64_t>> sizes = prog->bindSizes(entry, inputs);
  if (!sizes)
    return sizes.status();

  // Every buffer's shape for this call, within its planned slice: the last
  // call's where this call is of the same entry and binds the sizes a shape
  // reads as that one did.
  std::vector<TensorRef> &refs = scratch.refs;
  bool reshapeAll = true;
  uint64_t changed = 0;
  if (scratch.shapedEntry == &entry &&
      scratch.shapedSizes.size() == sizes->size()) {
    reshapeAll = false;
    for (size_t s = 0; s < sizes->size(); ++s)
      if ((*sizes)[s] != scratch.shapedSizes[s])
        changed |= s < 63 ? uint64_t(1) << s : uint64_t(1) << 63;
    for (int b : entry.used)
      refs[b].data = nullptr;
  } else {
    refs.resize(exe.buffers_size());
    for (TensorRef &ref : refs) {
      ref.data = nullptr;
      ref.shape.clear();
    }
  }
  scratch.shapedEntry = nullptr;
  for (int b : entry.used) {
    const Buffer &buffer = exe.buffers(b);
    TensorRef &ref = refs[b];
    if (!reshapeAll && !(prog->sizesRead(b) & changed))
      continue;
    ref.dtype = *dtypeOfWire(buffer.dtype());
    // Checked arithmetic: after this, no buffer's bytes overflow.
    if (Status shaped = prog->shapeInto(b, *sizes, ref.shape); !shaped.ok())
      return shaped.withContext("'" + name + "'");
    if (buffer.role() == Buffer::TEMPORARY && ref.bytes() > buffer.max_bytes())
      return Status::failure(
          "the inputs are larger than '" + name + "' was compiled for (" +
          prog->boundsString() + "): " + buffer.name() + " " +
          shapeString(ref.shape) + " needs " + std::to_string(ref.bytes()) +
          " bytes, its arena slice holds " +
          std::to_string(buffer.max_bytes()));
  }
  scratch.shapedEntry = &entry;
  scratch.shapedSizes = *sizes;

  // Where each buffer lives.
  ErrorOr<char *> base = arenaFor(entry.proto->arena_bytes());
  if (!base)
    return base.status().withContext("the arena of '" + name + "'");
  std::vector<Tensor> outputs(entry.outputs.size());
  for (size_t i = 0; i < inputs.size(); ++i)
    refs[entry.inputs[i].buffer].data = inputs[i].data;
  std::vector<bool> appended(entry.outputs.size(), false);
  for (const auto &[outputName, room] : appendInto) {
    auto it = std::find_if(
        entry.outputs.begin(), entry.outputs.end(),
        [&](const Program::Value &v) { return v.name == outputName; });
    if (it == entry.outputs.end() || it->appendsTo < 0)
      return Status::failure("'" + name + "' has no output '" + outputName +
                             "' that appends to an input");
    const TensorRef &ref = refs[it->buffer];
    const TensorRef &input = inputs[it->appendsTo];
    if (room.data != input.data || room.dtype != ref.dtype ||
        room.bytes() < ref.bytes())
      return Status::failure(
          "output '" + outputName + "' of '" + name + "' (" +
          shapeString(ref.shape) + ") needs room that begins at input '" +
          entry.inputs[it->appendsTo].name + "' and holds " +
          std::to_string(ref.bytes()) + " bytes of " + dtypeName(ref.dtype) +
          ", got " + std::to_string(room.bytes()) + " bytes of " +
          dtypeName(room.dtype) +
          (room.data == input.data ? "" : " elsewhere"));
    appended[it - entry.outputs.begin()] = true;
  }
  for (size_t o = 0; o < entry.outputs.size(); ++o) {
    const Program::Value &output = entry.outputs[o];
    TensorRef &ref = refs[output.buffer];
    if (output.state >= 0) {
      ref.data = placed->tensors[prog->state()[output.state].buffer].data();
      continue;
    }
    if (appended[o]) {
      ref.data = inputs[output.appendsTo].data;
      continue;
    }
    // The smallest spare that holds it and is at most twice its size (a
    // larger one waits for the output it came from: @encode's caches took
    // the decode step's 4 MB log_probs at every batch), else new memory,
    // unspecified: the step that produces an output writes all of it, as
    // every arena temporary is written before it is read.
    auto spare = spares.end();
    size_t bytes = size_t(ref.bytes());
    for (auto s = spares.begin(); s != spares.end(); ++s)
      if (s->capacity() >= bytes && s->capacity() / 2 <= bytes &&
          (spare == spares.end() || s->capacity() < spare->capacity()))
        spare = s;
    if (spare != spares.end() && spare->reuseAs(ref.dtype, ref.shape)) {
      outputs[o] = std::move(*spare);
      spares.erase(spare);
    } else {
      ErrorOr<Tensor> t =
          Tensor::onDevice(*dev, ref.dtype, ref.shape, Fill::Unspecified);
      if (!t)
        return t.status().withContext("output '" + output.name + "'");
      outputs[o] = std::move(*t);
    }
    ref.data = outputs[o].data();
  }
  for (int b : entry.used) {
    const Buffer &buffer = exe.buffers(b);
    if (buffer.role() == Buffer::TEMPORARY)
      refs[b].data = *base + buffer.arena_offset();
    else if (!buffer.has_view_of() && placed->tensors[b].data())
      refs[b].data = placed->tensors[b].data();
  }
  for (int b : entry.used) {
    const Buffer &buffer = exe.buffers(b);
    if (!buffer.has_view_of())
      continue;
    const TensorRef &root = refs[buffer.view_of()];
    // Written so that offset + bytes cannot overflow.
    if (buffer.view_offset() > root.bytes() ||
        refs[b].bytes() > root.bytes() - buffer.view_offset())
      return Status::failure(buffer.name() + " " + shapeString(refs[b].shape) +
                             " at byte " +
                             std::to_string(buffer.view_offset()) +
                             " does not fit in the buffer it views");
    refs[b].data = static_cast<char *>(root.data) + buffer.view_offset();
  }

  // State this entry writes has no number while it runs (a kernel may read
  // it after a step wrote it) and a new one after, however the run ends.
  std::vector<int> written;
  for (const Program::Value &output : entry.outputs)
    if (output.state >= 0) {
      written.push_back(prog->state()[output.state].buffer);
      versions[written.back()] = 0;
    }
  struct Renumber {
    Session &session;
    const std::vector<int> &buffers;
    ~Renumber() {
      for (int b : buffers)
        session.renumber(b, /*byStep=*/true);
    }
  } renumberWritten{*this, written};

  std::vector<TensorRef> &args = scratch.args;
  inFlight.clear();
  auto stepContext = [&](int s, const Kernel &kernel) {
    return "'" + name + "' step " + std::to_string(s) + " (" + kernel.symbol() +
           ")";
  };
  for (int s = 0; s < entry.proto->steps_size(); ++s) {
    const Step &step = entry.proto->steps(s);
    const Kernel &kernel = exe.kernels(step.kernel());
    // Read only when profiling: a decode step has dozens of steps, and the
    // clock costs each of them a call.
    auto start = profiling ? std::chrono::steady_clock::now()
                           : std::chrono::steady_clock::time_point();
    // Assigned in place: each argument's shape reuses its storage.
    args.resize(step.args_size());
    for (int i = 0; i < step.args_size(); ++i)
      args[i] = refs[step.args(i)];
    StepView view{name, s, kernel, args};
    if (stepHook) {
      LOOM_RETURN_IF_ERROR(
          dev->synchronize().withContext(stepContext(s, kernel)));
      LOOM_RETURN_IF_ERROR(stepHook->beforeStep(view));
    }
    Status status;
    if (kernel.kind() == Kernel::COLLECTIVE) {
      status = runCollective(kernel, step, args);
    } else {
      std::vector<uint64_t> &stepVersions = scratch.versions;
      stepVersions.clear();
      if (kernel.kind() == Kernel::LIBRARY)
        for (int b : step.args()) {
          const Buffer &buffer = exe.buffers(b);
          stepVersions.push_back(
              versions[buffer.has_view_of() ? buffer.view_of() : b]);
        }
      status = launchStep(step, args, stepVersions);
    }
    if (job && !inFlight.empty())
      job->progress();
    // A fault of an asynchronous device shows at a later synchronization;
    // these find the step that caused it.
    if (status.ok() && (syncEveryStep || stepHook || profiling))
      status = dev->synchronize();
    if (!status.ok())
      return status.withContext(stepContext(s, kernel));
    if (stepHook)
      LOOM_RETURN_IF_ERROR(stepHook->afterStep(view));
    if (profiling) {
      KernelProfile &p = kernelTimes[step.kernel()];
      ++p.calls;
      p.seconds += std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - start)
                       .count();
    }
  }
  if (Status synced = dev->synchronize(); !synced.ok())
    return synced.withContext(
        "'" + name + "' (" + std::to_string(entry.proto->steps_size()) +
        " steps launched; LOOM_SYNC_EVERY_STEP=1 names the step that "
        "failed)");

  std::vector<NamedTensor> results;
  for (size_t o = 0; o < entry.outputs.size(); ++o)
    if (entry.outputs[o].state < 0 && !appended[o])
      results.push_back({entry.outputs[o].name, std::move(outputs[o])});
  return results;
}

Status Session::launchStep(const Step &step, const std::vector<TensorRef> &args,
                           const std::vector<uint64_t> &stepVersions) {
  const Executable &exe = prog->executable();
  const Kernel &kernel = exe.kernels(step.kernel());
  if (kernel.kind() == Kernel::GENERATED) {
    // A generated kernel trusts its arguments' sizes; the library ones
    // check theirs themselves.
    LOOM_RETURN_IF_ERROR(prog->checkLaunch(step.kernel(), args));
    return dev->launch(*code, step.kernel(), args);
  }
  // Copy-assigned into the kept arguments, reusing their storage.
  LibraryCallArgs &call = scratch.call;
  call.tensors = args;
  call.attrs.ints.assign(step.int_attrs().begin(), step.int_attrs().end());
  call.attrs.floats.assign(step.float_attrs().begin(),
                           step.float_attrs().end());
  call.versions = stepVersions;
  return dev->call(*code, step.kernel(), call);
}

Status Session::runStep(const std::string &entryName, int index,
                        const std::vector<TensorRef> &args) {
  ErrorOr<const Program::Entry *> found = prog->entry(entryName);
  if (!found)
    return found.status();
  const Program::Entry &entry = **found;
  if (index < 0 || index >= entry.proto->steps_size())
    return Status::failure("'" + entryName + "' has no step " +
                               std::to_string(index),
                           ErrorCode::InvalidArgument);
  const Step &step = entry.proto->steps(index);
  const Kernel &kernel = prog->executable().kernels(step.kernel());
  std::string where = "'" + entryName + "' step " + std::to_string(index) +
                      " (" + kernel.symbol() + ")";
  if (kernel.kind() == Kernel::COLLECTIVE)
    return Status::failure(where + " is a collective; it runs in a job",
                           ErrorCode::Unsupported);
  if (int(args.size()) != step.args_size())
    return Status::failure(where + " takes " +
                               std::to_string(step.args_size()) +
                               " arguments, got " + std::to_string(args.size()),
                           ErrorCode::InvalidArgument);
  Status status = launchStep(step, args, {});
  if (status.ok())
    status = dev->synchronize();
  return status.withContext(where);
}

Status Session::runCollective(const Kernel &kernel, const Step &step,
                              const std::vector<TensorRef> &args) {
  int64_t id = step.int_attrs(0);
  if (kernel.symbol() == "all_reduce_wait") {
    auto it = inFlight.find(id);
    if (it == inFlight.end())
      return Status::success(); // the only rank: nothing was sent
    Status done = it->second->wait();
    inFlight.erase(it);
    return done;
  }
  size_t n = args.size() / 2;
  std::vector<TensorRef> operands(args.begin(), args.begin() + n);
  std::vector<TensorRef> results(args.begin() + n, args.end());
  for (size_t i = 0; i < n; ++i)
    if (operands[i].dtype != results[i].dtype ||
        operands[i].shape != results[i].shape)
      return Status::failure("all-reduce operand " + std::to_string(i) + " " +
                             shapeString(operands[i].shape) + " and result " +
                             shapeString(results[i].shape) + " differ");
  if (!job) {
    // The only rank: the sums are the operands.
    for (size_t i = 0; i < n; ++i)
      LOOM_RETURN_IF_ERROR(dev->copy(results[i].data, operands[i].data,
                                     operands[i].bytes(),
                                     CopyDirection::DeviceToDevice));
    return Status::success();
  }
  // The device's queue must have produced the operands before the transport
  // reads them.
  LOOM_RETURN_IF_ERROR(dev->synchronize());
  ErrorOr<std::unique_ptr<CollectiveRequest>> request =
      job->startAllReduce(operands, results);
  if (!request)
    return request.status();
  inFlight[id] = std::move(*request);
  return Status::success();
}

ErrorOr<TensorRef> deviceInput(Device &device, const TensorRef &tensor,
                               std::vector<Tensor> &staging) {
  if (device.sharesHostMemory())
    return tensor;
  ErrorOr<Tensor> copy = toDevice(device, tensor);
  if (!copy)
    return copy.status();
  staging.push_back(std::move(*copy));
  return staging.back().ref();
}

} // namespace loom::runtime
