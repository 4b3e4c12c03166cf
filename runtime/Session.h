//===- Session.h - A program running on a device ----------------*- C++ -*-===//
//
// A session is a Program bound to a Device: the state (parameters and
// optimizer moments) and the constants in the device's memory, the code
// loaded, and one arena that every entry point's temporaries are carved
// from (entry points never run at once, so they share it; it grows to the
// largest that has run, and on the CPU its untouched pages cost nothing).
//
// run() derives the named sizes from the inputs, refuses inputs beyond the
// bounds the arena was planned for, places every buffer, and hands the
// device the steps one by one. Outputs that the plan writes over state
// (`param.w`, `exp_avg.w`) update the state in place; the others come back
// as tensors in the device's memory.
//
// A session is not thread-safe: one call at a time. Sessions on one Program
// may run in parallel, each with its own state, or all with one copy of it
// (createSharing: a translator's workers), which none of them then writes.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_SESSION_H
#define LOOM_RUNTIME_SESSION_H

#include "runtime/Collectives.h"
#include "runtime/Device.h"
#include "runtime/Program.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace loom::runtime {

/// A step of an entry as run() hands it to the device: what a StepHook
/// sees.
struct StepView {
  const std::string &entry;
  int index; // in the entry's steps
  const Kernel &kernel;
  /// As the kernel gets them, in the device's memory.
  const std::vector<TensorRef> &args;
};

/// Called around every step of run() once set (Session::setStepHook): a
/// test that replays each kernel on another device with this one's
/// inputs, to name the kernel where two devices part. An error stops the
/// run with it.
class StepHook {
public:
  virtual ~StepHook();
  virtual Status beforeStep(const StepView &step) = 0;
  virtual Status afterStep(const StepView &step) = 0;
};

/// Seconds and calls per kernel, when profiling is on.
struct KernelProfile {
  std::string kernel;
  int64_t calls = 0;
  double seconds = 0;
};

class Session {
public:
  /// Places `program`'s state (zeroed) and constants on `device` and loads
  /// its code there.
  static ErrorOr<std::unique_ptr<Session>>
  create(std::shared_ptr<const Program> program,
         std::shared_ptr<Device> device);
  /// A session of `owner`'s program on `device` over the same state and
  /// constants, read in place where `owner` placed them, and with its
  /// device's code sharing `owner`'s caches of what it derives from them
  /// (DeviceCode::shareCachesOf: packed weights). Both devices must share
  /// the host's memory. From then on neither session writes its state:
  /// state() gives nullptr, setState() and any entry that writes state
  /// fail. The sessions may run at once, each on its own thread.
  static ErrorOr<std::unique_ptr<Session>>
  createSharing(Session &owner, std::shared_ptr<Device> device);
  ~Session();

  const Program &program() const { return *prog; }
  Device &device() const { return *dev; }

  /// Parameters and optimizer state by name, sorted.
  std::vector<std::string> stateNames() const;
  /// The parameters alone, sorted.
  std::vector<std::string> parameterNames() const {
    return prog->parameterNames();
  }
  /// The state tensor `name` in the device's memory, or nullptr (also
  /// where the state is shared: createSharing). The caller may write it
  /// until the next run(): what devices derived from the old contents
  /// (packed weights) is dropped. Writes after a run() need another call of
  /// state() first.
  Tensor *state(const std::string &name);
  /// Copies host `value` into state `name`; dtype and shape must match.
  Status setState(const std::string &name, const TensorRef &value);
  /// A host copy of state `name`.
  ErrorOr<Tensor> getState(const std::string &name) const;

  bool hasEntry(const std::string &entry) const {
    return prog->hasEntry(entry);
  }
  /// The names of `entry`'s inputs, in the order run() takes them.
  std::vector<std::string> inputNames(const std::string &entry) const;

  /// Runs `entry` with one tensor per input, in inputNames() order, each in
  /// the device's memory (host memory on a device that shares it). Returns
  /// the outputs that are not written over state, in the function's order,
  /// in the device's memory.
  ErrorOr<std::vector<NamedTensor>> run(const std::string &entry,
                                        const std::vector<TensorRef> &inputs);
  /// run(), with outputs that append to an input (Program::Value::appendsTo:
  /// the input's bytes, then new ones) written in place: `appendInto` maps
  /// such an output's name to memory that begins at its input's data and
  /// holds at least the output's bytes (its dtype, any shape). Only the new
  /// bytes are written there, and the output is not among those returned.
  ErrorOr<std::vector<NamedTensor>>
  run(const std::string &entry, const std::vector<TensorRef> &inputs,
      const std::map<std::string, TensorRef> &appendInto);

  /// The job this session is one rank of: its all-reduces go through
  /// `collectives`. Without one (the default) it is the only rank.
  void setCollectives(std::shared_ptr<Collectives> collectives) {
    job = std::move(collectives);
  }
  Collectives *collectives() const { return job.get(); }

  /// Hands back an output of run() the caller is done with: a later run()
  /// writes an output that fits into its memory instead of allocating (and
  /// clearing, or faulting in) new memory. Decoding hands back each step's
  /// log-probabilities, [rows, vocab], a megabyte at batch 32 of an
  /// 8000-word vocabulary. A few are kept; a tensor of another device is
  /// dropped.
  void recycle(Tensor tensor);

  /// Runs step `index` of `entry` alone, on `args` in the device's memory
  /// (as many as its kernel takes, of the shapes the step had in a run),
  /// as run() would, and synchronizes. A collective step is refused.
  Status runStep(const std::string &entry, int index,
                 const std::vector<TensorRef> &args);

  /// Calls `hook` around every step of run() from now on; null: none.
  /// Steps are synchronized before the hook sees them.
  void setStepHook(StepHook *hook) { stepHook = hook; }

  /// Times every kernel from now on (synchronizing after each).
  void setProfiling(bool on) { profiling = on; }
  /// Kernels by decreasing time since profiling was turned on.
  std::vector<KernelProfile> profile() const;

private:
  Session() = default;
  Status loadCode();
  Status place();
  ErrorOr<char *> arenaFor(int64_t bytes);
  Status runCollective(const Kernel &kernel, const Step &step,
                       const std::vector<TensorRef> &args);
  /// Launches a generated or library step on `args`; `versions` as
  /// LibraryCallArgs takes them (empty: none known).
  Status launchStep(const Step &step, const std::vector<TensorRef> &args,
                    const std::vector<uint64_t> &versions);

  std::shared_ptr<const Program> prog;
  std::shared_ptr<Device> dev;
  std::unique_ptr<DeviceCode> code;
  /// State and constants, per buffer (empty for the others), in the memory
  /// of `device`, which they keep alive. Sessions createSharing made hold
  /// the same, `shared` then, and none writes it.
  struct Placed {
    std::shared_ptr<Device> device;
    std::vector<Tensor> tensors;
    bool shared = false;
  };
  std::shared_ptr<Placed> placed;
  /// Per buffer: the number LibraryCallArgs::versions gives the contents of
  /// state and constants, a new one after every possible write (0 for
  /// every other buffer, and for state while a run() writes it).
  std::vector<uint64_t> versions;
  /// A new number for `buffer`'s contents; `byStep`: a step wrote them
  /// (kWrittenByStep).
  void renumber(int buffer, bool byStep = false);
  Tensor arena;
  std::shared_ptr<Collectives> job;
  /// All-reduces in flight in the current run(), by id.
  std::map<int64_t, std::unique_ptr<CollectiveRequest>> inFlight;
  bool profiling = false;
  /// LOOM_SYNC_EVERY_STEP=1: synchronize after every step, so that an
  /// asynchronous fault is reported by the step that caused it.
  bool syncEveryStep = false;
  StepHook *stepHook = nullptr;
  std::vector<KernelProfile> kernelTimes; // per kernel
  /// recycle()'s tensors, for run()'s outputs.
  std::vector<Tensor> spares;
  /// What run() fills for every call, kept so that their storage (a shape
  /// per buffer and per argument) is reused: a decoding step's run() then
  /// allocates next to nothing on the host. run() is not reentrant anyway
  /// (one arena per session).
  struct Scratch {
    std::vector<TensorRef> refs; // per buffer
    std::vector<TensorRef> args; // per argument of the current step
    std::vector<uint64_t> versions;
    LibraryCallArgs call;
    /// The entry and sizes `refs` hold the shapes of (null: none, after a
    /// call that failed before its shapes were all computed).
    const Program::Entry *shapedEntry = nullptr;
    std::vector<int64_t> shapedSizes;
  } scratch;
};

/// Uploads a host tensor for run(): `tensor` itself on a device that shares
/// host memory, else a copy in `staging`.
ErrorOr<TensorRef> deviceInput(Device &device, const TensorRef &tensor,
                               std::vector<Tensor> &staging);

} // namespace loom::runtime

#endif // LOOM_RUNTIME_SESSION_H
