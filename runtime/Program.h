//===- Program.h - A validated executable, ready to bind --------*- C++ -*-===//
//
// What the runtime knows of an executable before any device is involved:
// the file validated, each entry point's typed signature (its inputs in call
// order, its outputs and which of them are written over state), the state a
// session must hold (parameters and optimizer moments, by name and shape),
// and the shapes of every buffer as polynomials in the named sizes (`batch`,
// `src_len`), which `bindSizes` derives from a call's inputs. A Program is
// immutable and may be shared by sessions on several devices and threads.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_PROGRAM_H
#define LOOM_RUNTIME_PROGRAM_H

#include "runtime/Executable.h"
#include "runtime/Tensor.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace loom::runtime {

class Program {
public:
  /// An input or output of an entry point.
  struct Value {
    std::string name; // "src", "log_probs", "self_k.0"
    int buffer = -1;  // index into Executable.buffers
    DType dtype = DType::F32;
    /// Outputs only: the index into state() this output is written over
    /// (`param.w` over parameter `w`, `exp_avg.w` over itself), or -1.
    int state = -1;
    /// Outputs only: the index into the entry's inputs this output appends
    /// to, or -1. It does when its one writer is a concat along dim 0 whose
    /// first operand is that input: the output is the input's bytes
    /// followed by new ones, so it may be written into memory that holds
    /// the input and has room after it (Session::run's `appendInto`).
    int appendsTo = -1;
  };
  struct Entry {
    std::string name;
    const EntryPoint *proto = nullptr;
    std::vector<Value> inputs;  // what a call passes, in order
    std::vector<Value> outputs; // in the function's order
    /// Every buffer a step, input or output uses, and the buffers they view.
    std::vector<int> used;
  };
  /// A tensor a session keeps across calls.
  struct StateTensor {
    std::string name;
    int buffer = -1;
    bool isParameter = false; // else optimizer state
    DType dtype = DType::F32;
    std::vector<int64_t> shape;
  };

  /// Validates `exe` and works out the signatures.
  static ErrorOr<std::shared_ptr<const Program>> create(Executable exe);
  /// Reads, validates and prepares the executable at `path`.
  static ErrorOr<std::shared_ptr<const Program>> load(const std::string &path);

  const Executable &executable() const { return exe; }
  const std::vector<Entry> &entries() const { return entryList; }
  /// The entry called `name`, or a failure listing the ones there are.
  ErrorOr<const Entry *> entry(const std::string &name) const;
  bool hasEntry(const std::string &name) const;

  /// Parameters and optimizer state, sorted by name.
  const std::vector<StateTensor> &state() const { return stateList; }
  /// The state tensor `name`, or nullptr.
  const StateTensor *stateTensor(const std::string &name) const;
  /// The parameters alone, sorted.
  std::vector<std::string> parameterNames() const;
  /// Elements over all parameters.
  int64_t parameterCount() const;

  /// The named sizes (one per Executable.symbols) a call of `entry` with
  /// `inputs` binds, after checking each input's dtype and rank and that
  /// inputs agree on every size they share. Sizes no input names are 0.
  ErrorOr<std::vector<int64_t>>
  bindSizes(const Entry &entry, const std::vector<TensorRef> &inputs) const;
  /// The shape of `buffer` for the bound `sizes`, computed with checked
  /// arithmetic: a failure when a dim overflows or is negative (inputs for
  /// which the executable is not defined: a length of 0 where it takes one
  /// away) or when the buffer's bytes overflow.
  ErrorOr<std::vector<int64_t>>
  shapeOf(int buffer, const std::vector<int64_t> &sizes) const;
  /// shapeOf into `shape`, whose storage is reused: what every run() does
  /// for every buffer, so it allocates nothing once warm.
  Status shapeInto(int buffer, const std::vector<int64_t> &sizes,
                   std::vector<int64_t> &shape) const;
  /// The sizes (bit s: symbol s; all bits past 63) `buffer`'s shape reads:
  /// a shape computed for one call holds for the next where none of them
  /// changed (a decode step's buffers but the caches keep theirs).
  uint64_t sizesRead(int buffer) const { return sizesReadBy[buffer]; }
  /// Checks that `args`, the buffers of one launch of generated kernel
  /// `kernel` placed for this call, keep the kernel inside each of them:
  /// along each dim of its domain the sizes that meet are 1 or one common
  /// size, and no access walks more elements than its argument holds. The
  /// loader proves this for every size >= 1; this covers the others.
  Status checkLaunch(int kernel, const std::vector<TensorRef> &args) const;
  /// "max-tokens 4096, max-len 256, max-batch 256": the bounds the arenas
  /// were planned for, for messages.
  std::string boundsString() const;

private:
  Program() = default;
  static ErrorOr<std::shared_ptr<const Program>> fromValidated(Executable exe);
  Status prepare();
  /// Sets Value::appendsTo of `entry`'s outputs.
  static Status findAppends(const Executable &exe, Entry &entry);

  /// A generated kernel's accesses (Kernel.accesses), flattened: per
  /// access its argument (-1: a constant of the kernel's) and per dim a
  /// static size (>= 0) or ~d for dim d of the argument.
  struct KernelAccess {
    int arg = -1;
    std::vector<int64_t> dims;
  };

  Executable exe;
  std::vector<std::vector<KernelAccess>> accesses; // per kernel
  std::vector<uint64_t> sizesReadBy;               // per buffer
  std::vector<Entry> entryList;
  std::vector<StateTensor> stateList;
  std::map<std::string, int> stateIndex;
};

} // namespace loom::runtime

#endif // LOOM_RUNTIME_PROGRAM_H
