//===- ExecutableMutationTest.cpp - Crafted executables never reach UB ----===//
//
// The `tiny` model compiled for the CPU, then changed a few thousand times,
// one structured change at a time (a step's argument, a role, a dtype, a
// coefficient, a static size, an attribute, an arena offset or slice, an
// entry point's input or output, a view's offset, a generated kernel's
// recorded signature), from a fixed seed. Each changed executable must be
// refused as Corrupt, or run every entry point on small valid inputs; a run
// may fail with a message, never crash. Under AddressSanitizer (the
// sanitizer build) a read or write outside a buffer fails the test.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include "codegen/cpu/ExecutableWriter.h"
#include "frontend/Config.h"
#include "frontend/Transformer.h"
#include "passes/Pipeline.h"
#include "runtime/Executable.h"
#include "runtime/Session.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <optional>
#include <random>

using namespace loom;
using runtime::Buffer;
using runtime::Executable;

namespace {

constexpr uint64_t kSeed = 20261124;
constexpr int kMutants = 2000;

Executable compileTiny() {
  auto ctx = test::makeContext();
  auto config = presetConfig("tiny");
  EXPECT_TRUE(bool(config));
  if (!config) {
    llvm::consumeError(config.takeError());
    return Executable();
  }
  CompilePipelineOptions options;
  options.training.dModel = config->d_model();
  options.maxTokens = 64;
  options.maxLen = 16;
  options.maxBatch = 8;
  auto module = buildModelModule(*ctx, *config);
  EXPECT_TRUE(module && mlir::succeeded(runCompilePipeline(*module, options)));
  CpuExecutableOptions exeOptions;
  exeOptions.bounds = {options.maxTokens, options.maxLen, options.maxBatch};
  auto exe = writeCpuExecutable(*module, exeOptions);
  EXPECT_TRUE(mlir::succeeded(exe));
  return mlir::succeeded(exe) ? *exe : Executable();
}

/// Inputs for every entry point of the unchanged executable: batch 2, every
/// other named size 3, ids and counts small, floats small.
class Inputs {
public:
  explicit Inputs(const runtime::Program &program) {
    const Executable &exe = program.executable();
    std::vector<int64_t> sizes(exe.symbols_size());
    for (int s = 0; s < exe.symbols_size(); ++s)
      sizes[s] = exe.symbols(s).compare(0, 5, "batch") == 0 ? 2 : 3;
    for (const runtime::Program::Entry &entry : program.entries()) {
      std::vector<runtime::Tensor> &tensors = byEntry[entry.name];
      for (const runtime::Program::Value &input : entry.inputs) {
        ErrorOr<std::vector<int64_t>> shape =
            program.shapeOf(input.buffer, sizes);
        EXPECT_TRUE(bool(shape)) << shape.error();
        runtime::Tensor t = test::hostTensor(input.dtype, *shape);
        for (int64_t i = 0; i < t.numel(); ++i) {
          switch (t.dtype()) {
          case DType::I32:
            static_cast<int32_t *>(t.data())[i] = int32_t(4 + i % 5);
            break;
          case DType::I64:
            static_cast<int64_t *>(t.data())[i] = 1;
            break;
          case DType::F32:
            t.f32()[i] = 0.01f * float(i % 7);
            break;
          default:
            break;
          }
        }
        tensors.push_back(std::move(t));
      }
    }
  }

  /// The inputs of `entry` of `changed` as it takes them: the original's
  /// of the same name, else a zeroed tensor of the shape it asks for (kept
  /// in `owned`), so that every call passes real memory.
  std::vector<runtime::TensorRef>
  of(const runtime::Program::Entry &entry, const runtime::Program &changed,
     const runtime::Program &original,
     std::vector<runtime::Tensor> &owned) const {
    std::vector<runtime::TensorRef> refs;
    auto found = byEntry.find(entry.name);
    ErrorOr<const runtime::Program::Entry *> known = original.entry(entry.name);
    std::vector<int64_t> sizes(changed.executable().symbols_size(), 3);
    for (const runtime::Program::Value &input : entry.inputs) {
      std::optional<runtime::TensorRef> ref;
      if (found != byEntry.end() && known)
        for (size_t i = 0; i < (*known)->inputs.size(); ++i)
          if ((*known)->inputs[i].name == input.name)
            ref = found->second[i].ref();
      if (!ref) {
        ErrorOr<std::vector<int64_t>> shape =
            changed.shapeOf(input.buffer, sizes);
        if (!shape || runtime::numelOf(*shape) > (1 << 20))
          shape = std::vector<int64_t>{};
        owned.push_back(test::hostTensor(input.dtype, *shape));
        ref = owned.back().ref();
      }
      refs.push_back(*ref);
    }
    return refs;
  }

private:
  std::map<std::string, std::vector<runtime::Tensor>> byEntry;
};

/// One structured change of `exe`, drawn from `rng`; a line saying what.
std::string mutate(Executable &exe, std::mt19937_64 &rng) {
  auto pick = [&](int64_t n) {
    return static_cast<int>(std::uniform_int_distribution<int64_t>(
        0, std::max<int64_t>(n, 1) - 1)(rng));
  };
  auto nearOrAny = [&](int current, int n) {
    if (pick(2))
      return pick(n);
    return std::clamp(current + pick(7) - 3, 0, n - 1);
  };
  int numBuffers = exe.buffers_size();
  switch (pick(11)) {
  case 0: { // a step's argument
    runtime::EntryPoint *entry =
        exe.mutable_entry_points(pick(exe.entry_points_size()));
    if (!entry->steps_size())
      return "none";
    runtime::Step *step = entry->mutable_steps(pick(entry->steps_size()));
    if (!step->args_size())
      return "none";
    int a = pick(step->args_size());
    step->set_args(a, nearOrAny(step->args(a), numBuffers));
    return "step arg";
  }
  case 1: { // a role
    Buffer *buffer = exe.mutable_buffers(pick(numBuffers));
    buffer->set_role(static_cast<Buffer::Role>(1 + pick(7)));
    return "role";
  }
  case 2: { // a dtype
    Buffer *buffer = exe.mutable_buffers(pick(numBuffers));
    buffer->set_dtype(static_cast<Buffer::DType>(1 + pick(7)));
    return "dtype";
  }
  case 3: { // a coefficient, or the symbol of a term
    Buffer *buffer = exe.mutable_buffers(pick(numBuffers));
    for (runtime::Dim &dim : *buffer->mutable_shape()) {
      if (!dim.has_poly() || pick(2))
        continue;
      runtime::Monomial *term =
          dim.mutable_poly()->mutable_terms(pick(dim.poly().terms_size()));
      if (term->symbols_size() && pick(3) == 0)
        term->set_symbols(pick(term->symbols_size()), pick(exe.symbols_size()));
      else
        term->set_coefficient(pick(2) ? -term->coefficient()
                                      : term->coefficient() + pick(5) - 2);
      return "coefficient";
    }
    return "none";
  }
  case 4: { // a static size
    Buffer *buffer = exe.mutable_buffers(pick(numBuffers));
    for (runtime::Dim &dim : *buffer->mutable_shape()) {
      if (!dim.has_size() || pick(2))
        continue;
      int64_t choices[] = {
          0, 1, 2, dim.size() - 1, dim.size() + 1, dim.size() * 2};
      dim.set_size(choices[pick(6)]);
      return "static size";
    }
    return "none";
  }
  case 5: { // an attribute
    runtime::EntryPoint *entry =
        exe.mutable_entry_points(pick(exe.entry_points_size()));
    if (!entry->steps_size())
      return "none";
    runtime::Step *step = entry->mutable_steps(pick(entry->steps_size()));
    if (step->int_attrs_size() && pick(4)) {
      int i = pick(step->int_attrs_size());
      int64_t choices[] = {
          0, 1, 2, -1, 3, step->int_attrs(i) + 1, step->int_attrs(i) - 1};
      step->set_int_attrs(i, choices[pick(7)]);
    } else if (step->float_attrs_size()) {
      int i = pick(step->float_attrs_size());
      double choices[] = {0.0, 0.5, 1.0, -1.0, 0.99};
      step->set_float_attrs(i, choices[pick(5)]);
    } else if (pick(2)) {
      step->add_int_attrs(pick(3));
    } else {
      return "none";
    }
    return "attr";
  }
  case 6: { // an arena offset, or a slice's size
    std::vector<int> temporaries;
    for (int b = 0; b < numBuffers; ++b)
      if (exe.buffers(b).role() == Buffer::TEMPORARY)
        temporaries.push_back(b);
    if (temporaries.empty())
      return "none";
    Buffer *buffer = exe.mutable_buffers(temporaries[pick(temporaries.size())]);
    if (pick(3) == 0) {
      buffer->set_max_bytes(pick(2) ? buffer->max_bytes() / 2
                                    : buffer->max_bytes() - 64);
      return "max bytes";
    }
    int64_t step = 64 * (1 + pick(8));
    buffer->set_arena_offset(pick(2) ? buffer->arena_offset() + step
                                     : buffer->arena_offset() - step);
    return "arena offset";
  }
  case 7: { // an entry point's input or output
    runtime::EntryPoint *entry =
        exe.mutable_entry_points(pick(exe.entry_points_size()));
    if (pick(2) && entry->inputs_size()) {
      int i = pick(entry->inputs_size());
      entry->set_inputs(i, nearOrAny(entry->inputs(i), numBuffers));
    } else if (entry->outputs_size()) {
      int o = pick(entry->outputs_size());
      entry->set_outputs(o, nearOrAny(entry->outputs(o), numBuffers));
    }
    return "entry input/output";
  }
  case 8: { // a view's offset or base
    std::vector<int> views;
    for (int b = 0; b < numBuffers; ++b)
      if (exe.buffers(b).has_view_of())
        views.push_back(b);
    if (views.empty())
      return "none";
    Buffer *buffer = exe.mutable_buffers(views[pick(views.size())]);
    if (pick(3) == 0)
      buffer->set_view_of(nearOrAny(buffer->view_of(), numBuffers));
    else
      buffer->set_view_offset(buffer->view_offset() +
                              (pick(2) ? 4 : 256) * (pick(2) ? 1 : -1));
    return "view";
  }
  case 9: { // a generated kernel's recorded signature
    runtime::Kernel *kernel = exe.mutable_kernels(pick(exe.kernels_size()));
    if (kernel->args_size() && pick(2)) {
      runtime::KernelArg *arg = kernel->mutable_args(pick(kernel->args_size()));
      if (arg->dims_size() && pick(2))
        arg->set_dims(pick(arg->dims_size()), pick(2) ? -1 : 1 + pick(16));
      else
        arg->set_written(!arg->written());
      return "kernel arg";
    }
    if (kernel->accesses_size()) {
      runtime::Access *access =
          kernel->mutable_accesses(pick(kernel->accesses_size()));
      if (access->dims_size()) {
        runtime::AccessDim *dim =
            access->mutable_dims(pick(access->dims_size()));
        if (pick(2))
          dim->set_size(1 + pick(16));
        else
          dim->set_arg_dim(pick(4));
      }
      return "kernel access";
    }
    return "none";
  }
  default: { // a buffer's rank
    Buffer *buffer = exe.mutable_buffers(pick(numBuffers));
    if (buffer->shape_size() && pick(2))
      buffer->mutable_shape()->RemoveLast();
    else
      buffer->add_shape()->set_size(1 + pick(2));
    return "rank";
  }
  }
}

TEST(ExecutableMutation, EveryChangeIsRefusedOrRunsSafely) {
  Executable original = compileTiny();
  ASSERT_GT(original.entry_points_size(), 0);
  auto program = runtime::Program::create(original);
  ASSERT_TRUE(bool(program)) << program.error();
  Inputs inputs(**program);
  auto device = runtime::openDevice("cpu", 1);
  ASSERT_TRUE(bool(device)) << device.error();

  // Runs every entry point; returns how many ran to the end.
  auto runAll = [&](const Executable &exe) -> int {
    auto changed = runtime::Program::create(exe);
    if (!changed)
      return -1;
    auto session = runtime::Session::create(*changed, *device);
    if (!session)
      return -1;
    int ran = 0;
    for (const runtime::Program::Entry &entry : (*changed)->entries()) {
      std::vector<runtime::Tensor> owned;
      auto out = (*session)->run(entry.name,
                                 inputs.of(entry, **changed, **program, owned));
      ran += bool(out);
    }
    return ran;
  };
  // The unchanged executable runs every entry point on these inputs.
  ASSERT_EQ(runAll(original), original.entry_points_size());

  std::string originalBytes = original.SerializeAsString();
  double validating = 0;
  std::mt19937_64 rng(kSeed);
  std::map<std::string, std::pair<int, int>> counts; // refused, ran
  int refused = 0, ran = 0, unchanged = 0;
  auto start = std::chrono::steady_clock::now();
  for (int m = 0; m < kMutants; ++m) {
    // A change that changes nothing (a role set to the one it had) is
    // drawn again.
    Executable exe;
    std::string what;
    for (int tries = 0; tries < 16; ++tries) {
      exe = original;
      what = mutate(exe, rng);
      if (exe.SerializeAsString() != originalBytes)
        break;
      ++unchanged;
    }
    auto before = std::chrono::steady_clock::now();
    Status valid = validateExecutable(exe);
    validating +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - before)
            .count();
    if (!valid.ok()) {
      EXPECT_EQ(valid.code(), ErrorCode::Corrupt) << valid.message();
      ++refused;
      ++counts[what].first;
      continue;
    }
    // Accepted: it must run (or fail with a message) without a crash.
    SCOPED_TRACE("mutant " + std::to_string(m) + " (" + what + ")");
    runAll(exe);
    ++ran;
    ++counts[what].second;
  }
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  std::string summary;
  for (const auto &[what, n] : counts)
    summary += "  " + what + ": " + std::to_string(n.first) + " refused, " +
               std::to_string(n.second) + " ran\n";
  std::printf("%d mutants: %d refused, %d ran (%d draws changed nothing); "
              "%.1f s, %.1f s of it validating\n%s",
              kMutants, refused, ran, unchanged, seconds, validating,
              summary.c_str());
  EXPECT_GT(refused, kMutants / 4);
  EXPECT_GT(ran, 0);
}

TEST(ExecutableMutation, AKernelSymbolOutsideTheCodeIsCorrupt) {
  // dlsym also finds what the code's dependencies define; a kernel named
  // like a C library function must not be called with a kernel's arguments.
  Executable exe = compileTiny();
  auto device = runtime::openDevice("cpu", 1);
  ASSERT_TRUE(bool(device)) << device.error();
  for (const char *symbol : {"free", "memcpy", "loom_region_absent"}) {
    SCOPED_TRACE(symbol);
    Executable changed = exe;
    for (runtime::Kernel &kernel : *changed.mutable_kernels())
      if (kernel.kind() == runtime::Kernel::GENERATED) {
        kernel.set_symbol(symbol);
        break;
      }
    auto program = runtime::Program::create(changed);
    ASSERT_TRUE(bool(program)) << program.error();
    auto session = runtime::Session::create(*program, *device);
    ASSERT_FALSE(bool(session));
    EXPECT_EQ(session.code(), ErrorCode::Corrupt) << session.error();
    EXPECT_NE(session.error().find("is not in the executable's code"),
              std::string::npos)
        << session.error();
  }
}

} // namespace
