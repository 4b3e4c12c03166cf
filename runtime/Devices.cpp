//===- Devices.cpp - The devices this runtime was built with --------------===//
//
// The one place that knows every Device implementation, so that tools and
// the conformance suite ask for a device by name.
//
//===----------------------------------------------------------------------===//

#include "runtime/Device.h"
#include "runtime/KernelChecks.h"
#include "runtime/Tensor.h"
#include "runtime/cpu/CpuDevice.h"
#ifdef LOOM_CUDA_DEVICE
#include "runtime/cuda/CudaDevice.h"
#endif

#include <cctype>
#include <numeric>

namespace loom::runtime {

std::vector<std::string> deviceKinds() {
#ifdef LOOM_CUDA_DEVICE
  return {"cpu", "cuda"};
#else
  return {"cpu"};
#endif
}

namespace {

/// "cuda" is GPU 0, "cuda:N" GPU N; -1 for anything else.
int cudaOrdinal(const std::string &kind) {
  if (kind == "cuda")
    return 0;
  if (kind.compare(0, 5, "cuda:") != 0 || kind.size() == 5 || kind.size() > 9)
    return -1;
  int ordinal = 0;
  for (size_t i = 5; i < kind.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(kind[i])))
      return -1;
    ordinal = ordinal * 10 + (kind[i] - '0');
  }
  return ordinal;
}

} // namespace

ErrorOr<std::shared_ptr<Device>> openDevice(const std::string &kind,
                                            int threads) {
  // Checked here, for every device: a negative count used to mean "all",
  // and 100000 threads crashed inside the BLAS library.
  if (threads < 0 || threads > kMaxThreads)
    return Status::failure("threads must be 0 (one per hardware thread) or "
                           "between 1 and " +
                               std::to_string(kMaxThreads) + ", got " +
                               std::to_string(threads),
                           ErrorCode::InvalidArgument);
  if (kind == "cpu")
    return std::shared_ptr<Device>(std::make_shared<cpu::CpuDevice>(threads));
  if (int ordinal = cudaOrdinal(kind); ordinal >= 0) {
#ifdef LOOM_CUDA_DEVICE
    ErrorOr<std::shared_ptr<cuda::CudaDevice>> device =
        cuda::CudaDevice::open(ordinal);
    if (!device)
      return device.status();
    return std::shared_ptr<Device>(*device);
#else
    return Status::failure("this runtime was built without the CUDA device",
                           ErrorCode::Unsupported);
#endif
  }
  std::string kinds;
  for (const std::string &known : deviceKinds())
    kinds += (kinds.empty() ? "" : ", ") + known;
  return Status::failure("unknown device '" + kind +
                             "' (this runtime has: " + kinds + ")",
                         ErrorCode::NotFound);
}

ErrorOr<Device::TopK> Device::topKLogSoftmax(const TensorRef &, int64_t) {
  return Status::failure(name() + " ranks log-probabilities, not logits",
                         ErrorCode::Unsupported);
}

Status Device::editScores(const TensorRef &scores,
                          const std::vector<ScoreEdit> &edits) {
  LOOM_RETURN_IF_ERROR(kernels::checkScoreEdits(scores, edits));
  for (const ScoreEdit &edit : edits) {
    float *at = static_cast<float *>(scores.data) + edit.cell;
    float value = 0;
    if (edit.kind == ScoreEdit::Penalize)
      LOOM_RETURN_IF_ERROR(
          copy(&value, at, sizeof value, CopyDirection::DeviceToHost));
    value = edit.applyTo(value);
    LOOM_RETURN_IF_ERROR(
        copy(at, &value, sizeof value, CopyDirection::HostToDevice));
  }
  return Status::success();
}

ErrorOr<std::vector<float>>
Device::readScores(const TensorRef &scores, const std::vector<int64_t> &cells) {
  LOOM_RETURN_IF_ERROR(kernels::checkScoreCells(scores, cells));
  std::vector<float> values(cells.size());
  for (size_t i = 0; i < cells.size(); ++i)
    LOOM_RETURN_IF_ERROR(
        copy(&values[i], static_cast<const float *>(scores.data) + cells[i],
             sizeof(float), CopyDirection::DeviceToHost));
  return values;
}

ErrorOr<std::vector<float>> Device::logSumExp(const TensorRef &logits) {
  ErrorOr<TopK> best = topK(logits, 1);
  if (!best)
    return best.status();
  ErrorOr<TopK> bestLogProb = topKLogSoftmax(logits, 1);
  if (!bestLogProb)
    return bestLogProb.status();
  std::vector<float> out(best->values.size());
  for (size_t r = 0; r < out.size(); ++r)
    out[r] = best->values[r] - bestLogProb->values[r];
  return out;
}

Status Device::moveRows(const TensorRef &t, const std::vector<int64_t> &from,
                        const std::vector<int64_t> &to) {
  LOOM_RETURN_IF_ERROR(kernels::checkMoveRows(t, from, to));
  if (from.empty() || t.bytes() == 0)
    return Status::success();
  std::vector<int64_t> rows(static_cast<size_t>(t.shape[0]));
  std::iota(rows.begin(), rows.end(), 0);
  for (size_t i = 0; i < from.size(); ++i)
    rows[to[i]] = from[i];
  ErrorOr<Tensor> moved = Tensor::onDevice(*this, t.dtype, t.shape);
  if (!moved)
    return moved.status();
  LOOM_RETURN_IF_ERROR(gatherRows(t, rows, moved->ref()));
  return copy(t.data, moved->data(), t.bytes(), CopyDirection::DeviceToDevice);
}

} // namespace loom::runtime
