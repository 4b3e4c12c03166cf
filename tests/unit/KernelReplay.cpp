//===- KernelReplay.cpp - A model's kernels alone on two devices ----------===//

#include "KernelReplay.h"

#include "DeviceTestUtil.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>

namespace loom::test {

namespace {

/// A generated kernel's name without its target's prefix ("loom_region_3"
/// on the CPU, "region_3" for CUDA).
std::string withoutTargetPrefix(const std::string &symbol) {
  const std::string prefix = "loom_";
  return symbol.compare(0, prefix.size(), prefix) == 0
             ? symbol.substr(prefix.size())
             : symbol;
}

} // namespace

KernelReplay::KernelReplay(runtime::Session &reference,
                           runtime::Session &target, double rtol)
    : reference(reference), target(target), rtol(rtol) {}

KernelReplay::~KernelReplay() { releaseSpans(); }

void KernelReplay::releaseSpans() {
  for (Span &span : spans)
    if (span.onTarget)
      target.device().deallocate(span.onTarget, span.allocated);
  spans.clear();
}

size_t KernelReplay::spanOf(const runtime::TensorRef &arg) const {
  const char *at = static_cast<const char *>(arg.data);
  for (size_t i = 0; i < spans.size(); ++i)
    if (at >= spans[i].begin &&
        at + arg.bytes() <= spans[i].begin + spans[i].bytes)
      return i;
  return spans.size();
}

Status KernelReplay::beforeStep(const runtime::StepView &step) {
  releaseSpans();
  if (!reference.device().sharesHostMemory())
    return Status::failure("the reference of a replay must be a device that "
                           "shares host memory");
  if (step.kernel.kind() == runtime::Kernel::COLLECTIVE)
    return Status::success();
  // Groups of arguments whose bytes overlap, each one span.
  std::vector<std::pair<const char *, const char *>> ranges;
  for (const runtime::TensorRef &arg : step.args) {
    const char *begin = static_cast<const char *>(arg.data);
    ranges.push_back({begin, begin + arg.bytes()});
  }
  std::sort(ranges.begin(), ranges.end());
  for (const auto &[begin, end] : ranges) {
    if (!spans.empty() && begin < spans.back().begin + spans.back().bytes) {
      Span &last = spans.back();
      last.bytes = std::max<size_t>(last.bytes, end - last.begin);
      continue;
    }
    Span span;
    span.begin = begin;
    span.bytes = end - begin;
    spans.push_back(std::move(span));
  }
  for (Span &span : spans) {
    span.before.assign(span.begin, span.begin + span.bytes);
    // At least a byte: a device may refuse to allocate nothing.
    span.allocated = std::max<size_t>(span.bytes, 1);
    ErrorOr<void *> memory = target.device().allocate(span.allocated);
    if (!memory)
      return memory.status();
    span.onTarget = *memory;
    LOOM_RETURN_IF_ERROR(
        target.device().copy(span.onTarget, span.before.data(), span.bytes,
                             runtime::CopyDirection::HostToDevice));
  }
  return Status::success();
}

Status KernelReplay::afterStep(const runtime::StepView &step) {
  const runtime::Kernel &kernel = step.kernel;
  if (kernel.kind() == runtime::Kernel::COLLECTIVE)
    return Status::success();
  KernelVerdict &verdict = byKernel[kernel.symbol()];
  verdict.kernel = kernel.symbol();
  ++verdict.replays;
  auto fail = [&](const std::string &why) {
    if (verdict.failure.empty())
      verdict.failure = "'" + step.entry + "' step " +
                        std::to_string(step.index) + ": " + why;
  };
  // The same kernel at the same step of the other executable.
  ErrorOr<const runtime::Program::Entry *> entry =
      target.program().entry(step.entry);
  if (!entry)
    return entry.status();
  if (step.index >= (*entry)->proto->steps_size()) {
    fail("the device under test's executable has fewer steps");
    return Status::success();
  }
  const runtime::Kernel &theirs = target.program().executable().kernels(
      (*entry)->proto->steps(step.index).kernel());
  if (withoutTargetPrefix(theirs.symbol()) !=
      withoutTargetPrefix(kernel.symbol())) {
    fail("the device under test runs " + theirs.symbol() +
         " here: the executables were not compiled from the same model");
    return Status::success();
  }

  std::vector<runtime::TensorRef> args;
  for (const runtime::TensorRef &arg : step.args) {
    const Span &span = spans[spanOf(arg)];
    runtime::TensorRef moved = arg;
    moved.data = static_cast<char *>(span.onTarget) +
                 (static_cast<const char *>(arg.data) - span.begin);
    args.push_back(moved);
  }
  Status ran = target.runStep(step.entry, step.index, args);
  if (!ran.ok()) {
    fail(ran.message());
    return Status::success();
  }
  std::vector<std::vector<char>> after(spans.size());
  for (size_t i = 0; i < spans.size(); ++i) {
    after[i].resize(spans[i].bytes);
    LOOM_RETURN_IF_ERROR(
        target.device().copy(after[i].data(), spans[i].onTarget, spans[i].bytes,
                             runtime::CopyDirection::DeviceToHost));
  }
  for (size_t a = 0; a < step.args.size(); ++a) {
    const runtime::TensorRef &arg = step.args[a];
    size_t s = spanOf(arg);
    const char *want = static_cast<const char *>(arg.data);
    const char *got = after[s].data() + (want - spans[s].begin);
    int64_t n = arg.numel();
    bool isFloat = isFloatDType(arg.dtype);
    double sum = 0;
    if (isFloat)
      for (int64_t i = 0; i < n; ++i) {
        double x = test::elementAsDouble(want, arg.dtype, i);
        sum += std::isfinite(x) ? x * x : 0;
      }
    double rms = n ? std::sqrt(sum / n) : 0;
    double tolerance = rtol;
    if (auto own = argTolerance.find({kernel.symbol(), a});
        own != argTolerance.end())
      tolerance = own->second;
    for (int64_t i = 0; i < n; ++i) {
      double w = test::elementAsDouble(want, arg.dtype, i),
             g = test::elementAsDouble(got, arg.dtype, i);
      double error;
      if (!isFloat || !std::isfinite(w) || !std::isfinite(g))
        error = (w == g || (std::isnan(w) && std::isnan(g))) ? 0 : INFINITY;
      else
        error = std::abs(g - w) / (std::max(std::abs(w), rms) + 1e-30);
      if (!(error <= tolerance)) {
        std::ostringstream why;
        why << "argument " << a << " (" << dtypeName(arg.dtype) << " "
            << runtime::shapeString(arg.shape) << "), element " << i << ": "
            << g << ", expected " << w << " (rms " << rms << ", tolerance "
            << tolerance << ")";
        fail(why.str());
      }
      if (std::isfinite(error))
        verdict.worst = std::max(verdict.worst, error * rtol / tolerance);
    }
  }
  releaseSpans();
  return Status::success();
}

std::vector<std::string> KernelReplay::kernelsNotReplayed() const {
  std::vector<std::string> missing;
  for (const runtime::Kernel &kernel :
       reference.program().executable().kernels())
    if (kernel.kind() != runtime::Kernel::COLLECTIVE &&
        !byKernel.count(kernel.symbol()))
      missing.push_back(kernel.symbol());
  std::sort(missing.begin(), missing.end());
  missing.erase(std::unique(missing.begin(), missing.end()), missing.end());
  return missing;
}

} // namespace loom::test
