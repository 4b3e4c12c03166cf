//===- Device.h - What the runtime needs of a processor ---------*- C++ -*-===//
//
// A Device is the small interface every processor the runtime runs on
// implements (CPU now, CUDA next), after IREE's HAL and CTranslate2's
// primitives<Device>, cut down to what a compiled Loom model uses:
//
//   memory      allocate / deallocate / copy between host and device
//   code        load an executable's code, launch one of its generated
//               kernels, call a library kernel (abi/LibraryCalls.h)
//   ordering    synchronize: work queued so far has finished
//   primitives  what decoding needs between two steps without bringing the
//               scores to the host: gather rows, per-row top-k and argmax
//
// Everything above it (Program, Session, decoding, the training step) is
// written once against this interface. A device never interprets the
// executable's entry points; the Session walks the steps and hands the
// device one kernel at a time with the tensors already placed.
//
// A device must outlive the tensors it allocated and the code it loaded.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_DEVICE_H
#define LOOM_RUNTIME_DEVICE_H

#include "abi/LibraryCalls.h"
#include "runtime/Tensor.h"
#include "runtime/executable.pb.h"

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

namespace loom::runtime {

/// An executable's code loaded on a device: its kernels by index into
/// Executable.kernels, resolved once.
class DeviceCode {
public:
  virtual ~DeviceCode() = default;
  /// Makes this code keep what it derives from constant contents (a weight
  /// packed for its GEMMs) in `other`'s caches, so that sessions reading
  /// the same state (Session::createSharing) derive and hold it once. The
  /// two may then run on different threads at once. False where they cannot
  /// share (codes of different kinds of device, or a device that derives
  /// nothing): each then keeps its own, which changes nothing but memory.
  virtual bool shareCachesOf(DeviceCode &other) {
    (void)other;
    return false;
  }
};

/// One library call with its tensors placed in the device's memory.
struct LibraryCallArgs {
  std::vector<TensorRef> tensors; // present operands, then results
  abi::CallAttrs attrs;
  /// Per tensor, or empty: 0, or a number that names the tensor's contents.
  /// Calls that pass the same nonzero number pass the same bytes at the same
  /// address, so a device may keep what it derives from them (a weight in
  /// its GEMM library's packed layout) under that number until it changes.
  /// The Session numbers state and constants, and renumbers state whenever
  /// it may have been written; a number with kWrittenByStep names contents
  /// a step of run() wrote (training's parameters).
  std::vector<uint64_t> versions;
};

/// Marks a content number of state that a step wrote: such contents change
/// at every training step, so a device derives something from them only
/// once they are used again. Contents without the mark (constants, state
/// the host loaded or set) are expected to stay, and a device that derives
/// something from them does it on their first use, so that the first call
/// computes what every later call computes: a translation must not depend
/// on what the process ran before it.
constexpr uint64_t kWrittenByStep = uint64_t(1) << 63;

enum class CopyDirection { HostToDevice, DeviceToHost, DeviceToDevice };

class Device {
public:
  virtual ~Device() = default;

  /// "cpu", "cuda:0".
  virtual std::string name() const = 0;
  /// The executables this device runs.
  virtual Executable::Target target() const = 0;
  /// One line for logs: the processor, its threads or memory.
  virtual std::string description() const = 0;
  /// Whether device memory is host memory (the CPU): host tensors may be
  /// passed to kernels as they are and device tensors read in place.
  virtual bool sharesHostMemory() const = 0;
  /// The architecture code is compiled for to run here natively: "sm_90"
  /// for an H100; "" where the executable's own record decides (the CPU's
  /// features are checked against the machine at load).
  virtual std::string codeTarget() const { return ""; }

  //===--------------------------------------------------------------------===//
  // Memory
  //===--------------------------------------------------------------------===//

  /// Zeroed device memory of `bytes` (at least one byte), 64-byte aligned.
  virtual ErrorOr<void *> allocate(size_t bytes) = 0;
  /// The same, for memory its user writes before reading: a device that
  /// reuses freed memory may hand it out as it was, without zeroing it.
  virtual ErrorOr<void *> allocateUnspecified(size_t bytes) {
    return allocate(bytes);
  }
  virtual void deallocate(void *memory, size_t bytes) = 0;
  virtual Status copy(void *dst, const void *src, size_t bytes,
                      CopyDirection direction) = 0;

  //===--------------------------------------------------------------------===//
  // Code
  //===--------------------------------------------------------------------===//

  /// Loads `exe`'s code and resolves every kernel it lists, or says why it
  /// cannot run here (another target, a CPU feature this machine lacks, a
  /// library kernel this runtime does not have).
  virtual ErrorOr<std::unique_ptr<DeviceCode>>
  loadCode(const Executable &exe) = 0;
  /// Runs generated kernel `kernel` over its arguments (operands, then
  /// results), splitting its rows where the kernel allows it.
  virtual Status launch(DeviceCode &code, int kernel,
                        const std::vector<TensorRef> &args) = 0;
  /// Runs library kernel `kernel` of `code`.
  virtual Status call(DeviceCode &code, int kernel,
                      const LibraryCallArgs &args) = 0;
  /// Runs the library kernel named `name` (abi::libraryKernelNames()) with
  /// no executable: what the conformance suite checks each device with.
  virtual Status callLibrary(const std::string &name,
                             const LibraryCallArgs &args) = 0;
  /// Returns once everything queued on the device has finished.
  virtual Status synchronize() = 0;

  //===--------------------------------------------------------------------===//
  // Primitives for decoding
  //===--------------------------------------------------------------------===//

  /// dst[i] = src[rows[i]] along the first dim; dst has rows.size() rows of
  /// src's row size. Rows must lie in range.
  virtual Status gatherRows(const TensorRef &src,
                            const std::vector<int64_t> &rows,
                            const TensorRef &dst) = 0;
  /// Within `t`, along its first dim: row to[i] becomes a copy of row
  /// from[i], for every i. No row is written twice or both written and read,
  /// so the moves may run in any order. What this default does with the
  /// primitives above (a gather of all of `t` into a temporary, copied back)
  /// is correct on every device; a device overrides it to touch only the
  /// moved rows.
  virtual Status moveRows(const TensorRef &t, const std::vector<int64_t> &from,
                          const std::vector<int64_t> &to);
  /// Per row of f32 `scores` [rows, n]: the index of the largest value (the
  /// lowest index among equals; NaN ranks below every number), on the host.
  virtual ErrorOr<std::vector<int32_t>> argmax(const TensorRef &scores) = 0;
  /// Per row of f32 `scores` [rows, n]: the `k` largest values and their
  /// indices, best first (lower index first among equals), on the host as
  /// rows * k entries.
  struct TopK {
    std::vector<float> values;
    std::vector<int32_t> indices;
  };
  virtual ErrorOr<TopK> topK(const TensorRef &scores, int64_t k) = 0;
  /// Whether topKLogSoftmax is implemented; beam search then reads a step's
  /// logits (@decode_step_logits) rather than its log-softmax.
  virtual bool ranksLogits() const { return false; }
  /// topK of each row's log-softmax, from the row's f32 `logits` [rows, n]:
  /// the same indices as topK of the logits (a row's log-softmax is its
  /// logits less one number, the row's log-sum-exp), each value less that
  /// number. A row whose best logit is not a number, or that holds a NaN,
  /// gives NaN values, as its log-softmax would. The log-softmax's output
  /// is never written: the row is read twice, for its best k and for its
  /// sum of exponentials. This default says it is not there.
  virtual ErrorOr<TopK> topKLogSoftmax(const TensorRef &logits, int64_t k);
  /// One value of f32 scores [rows, n] to change, at flat index `cell`: Ban
  /// makes it -inf (a token a hypothesis may not take next); Penalize
  /// divides it by `penalty` where positive and multiplies it where
  /// negative (a repetition penalty > 1 makes the token less likely).
  struct ScoreEdit {
    enum Kind : uint8_t { Ban, Penalize } kind = Ban;
    int64_t cell = 0;
    float penalty = 1;
    /// `value` edited: what every device's editScores writes.
    float applyTo(float value) const {
      if (kind == Ban)
        return -std::numeric_limits<float>::infinity();
      return value > 0 ? value / penalty : value * penalty;
    }
  };
  /// Applies `edits` to `scores` in place, in order, before they are ranked
  /// (decoding's controls: banned n-grams and tokens, a minimum length, a
  /// repetition penalty). Each cell must lie in `scores`. This default
  /// reads and writes each value through copy(), which is correct on every
  /// device; a device overrides it to edit in place.
  virtual Status editScores(const TensorRef &scores,
                            const std::vector<ScoreEdit> &edits);
  /// The values of f32 `scores` [rows, n] at flat indices `cells`, on the
  /// host (a forced token's score). Each cell must lie in `scores`. This
  /// default reads each through copy(); a device overrides it to read them
  /// in place.
  virtual ErrorOr<std::vector<float>>
  readScores(const TensorRef &scores, const std::vector<int64_t> &cells);
  /// Per row of f32 `logits` [rows, n], on the host: the number
  /// topKLogSoftmax subtracts from the row's logits to make them
  /// log-probabilities, computed the same way, so that a token's
  /// log-probability read as its logit less this equals what a search
  /// ranked. This default is what topK(1) less topKLogSoftmax(1) leaves
  /// (within a rounding of it); a device with topKLogSoftmax overrides it.
  virtual ErrorOr<std::vector<float>> logSumExp(const TensorRef &logits);
};

/// The kinds of device this runtime was built with ("cpu", ...).
std::vector<std::string> deviceKinds();
/// The most host threads a device takes.
constexpr int kMaxThreads = 1024;

/// A device of `kind` using `threads` host threads (0: one per hardware
/// thread; at most kMaxThreads). Fails with InvalidArgument for another
/// count, NotFound for a kind this runtime lacks and Unsupported when the
/// machine has no such device, so a test can skip it.
ErrorOr<std::shared_ptr<Device>> openDevice(const std::string &kind,
                                            int threads = 0);

/// Copies `tensor` (host or device) into a new host tensor.
ErrorOr<Tensor> toHost(const Tensor &tensor);
/// Copies host `tensor` into a new tensor on `device`.
ErrorOr<Tensor> toDevice(Device &device, const TensorRef &tensor);

} // namespace loom::runtime

#endif // LOOM_RUNTIME_DEVICE_H
