//===- CpuModel.cpp - Running a CPU executable ----------------------------===//

#include "runtime/cpu/CpuModel.h"

#include "runtime/Executable.h"
#include "runtime/cpu/Gemm.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <new>
#include <sys/mman.h>
#include <unistd.h>

namespace loom::cpu {

using runtime::Buffer;
using runtime::Kernel;

using GeneratedKernel = void (*)(void *const *, const int64_t *, int64_t,
                                 int64_t);

/// From this size on, storage is mapped rather than allocated.
constexpr size_t kMappedBytes = 1 << 20;

void Tensor::Free::operator()(char *p) const {
  if (mappedBytes)
    munmap(p, mappedBytes);
  else
    std::free(p);
}

Tensor::Tensor(DType dtype, std::vector<int64_t> shape)
    : type(dtype), dims(std::move(shape)) {
  size_t size = static_cast<size_t>(std::max<int64_t>(bytes(), 1));
  size_t rounded = (size + 63) / 64 * 64;
  if (rounded >= kMappedBytes) {
    void *p = mmap(nullptr, rounded, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
      throw std::bad_alloc();
    storage =
        std::unique_ptr<char, Free>(static_cast<char *>(p), Free{rounded});
    return;
  }
  storage.reset(static_cast<char *>(std::aligned_alloc(64, rounded)));
  if (!storage)
    throw std::bad_alloc();
  std::memset(storage.get(), 0, rounded);
}

int64_t Tensor::numel() const {
  int64_t n = 1;
  for (int64_t d : dims)
    n *= d;
  return n;
}

TensorRef Tensor::ref() const {
  return {const_cast<char *>(storage.get()), type, dims};
}

/// What one entry point needs per call, worked out at load.
struct CpuModel::Entry {
  const runtime::EntryPoint *proto = nullptr;
  std::vector<int> inputs;      // INPUT buffers, in run() order
  std::vector<int> used;        // every buffer a step, input or output uses
  std::vector<int> stateOutput; // per output: the state buffer it updates, -1
};

namespace {

std::string dtypeName(DType dtype) { return Buffer::DType_Name(dtype); }

std::string shapeString(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

/// The input or output name in a per-entry buffer name ("encode/input/src").
std::string localName(const std::string &name) {
  size_t slash = name.rfind('/');
  return slash == std::string::npos ? name : name.substr(slash + 1);
}

int64_t evaluate(const runtime::Dim &dim, const std::vector<int64_t> &symbols) {
  if (dim.has_size())
    return dim.size();
  int64_t total = 0;
  for (const runtime::Monomial &term : dim.poly().terms()) {
    int64_t value = term.coefficient();
    for (int32_t s : term.symbols())
      value *= symbols[s];
    total += value;
  }
  return total;
}

/// Opens `code` as a shared object without leaving a file behind.
void *openSharedObject(const std::string &code, std::string &error) {
  int fd = memfd_create("loom-kernels", MFD_CLOEXEC);
  if (fd < 0) {
    error = std::string("memfd_create failed: ") + std::strerror(errno);
    return nullptr;
  }
  size_t written = 0;
  while (written < code.size()) {
    ssize_t n = ::write(fd, code.data() + written, code.size() - written);
    if (n <= 0) {
      error = std::string("cannot write the kernels' code: ") +
              std::strerror(errno);
      ::close(fd);
      return nullptr;
    }
    written += static_cast<size_t>(n);
  }
  std::string path = "/proc/self/fd/" + std::to_string(fd);
  void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  ::close(fd);
  if (!handle)
    error = std::string("cannot load the kernels' code: ") + dlerror();
  return handle;
}

} // namespace

ErrorOr<std::unique_ptr<CpuModel>> CpuModel::create(runtime::Executable exe,
                                                    int threads) {
  if (std::string error = validateExecutable(exe); !error.empty())
    return ErrorOr<std::unique_ptr<CpuModel>>::failure(error);
  if (exe.target() != runtime::Executable::CPU)
    return ErrorOr<std::unique_ptr<CpuModel>>::failure(
        "the executable targets " +
        runtime::Executable::Target_Name(exe.target()) + ", not CPU");
  std::unique_ptr<CpuModel> model(new CpuModel);
  model->exe = std::move(exe);
  if (std::string error = model->load(threads); !error.empty())
    return ErrorOr<std::unique_ptr<CpuModel>>::failure(error);
  return model;
}

CpuModel::~CpuModel() {
  if (arena)
    munmap(arena, arenaBytes);
  if (library)
    dlclose(library);
}

char *CpuModel::arenaFor(int64_t bytes) {
  // Entry points never run at once, so they share one arena, grown to the
  // largest that has run. Anonymous pages cost no memory until touched, so
  // an entry point's peak is what its own kernels write.
  if (static_cast<size_t>(bytes) <= arenaBytes)
    return arena;
  if (arena)
    munmap(arena, arenaBytes);
  arenaBytes = std::max<size_t>(static_cast<size_t>(bytes), 1);
  void *p = mmap(nullptr, arenaBytes, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  arena = p == MAP_FAILED ? nullptr : static_cast<char *>(p);
  if (!arena)
    arenaBytes = 0;
  return arena;
}

std::string CpuModel::load(int threads) {
  threadPool = std::make_unique<ThreadPool>(threads);
  setBlasThreads(threadPool->size());

  bool generated = false;
  for (const Kernel &kernel : exe.kernels())
    generated |= kernel.kind() == Kernel::GENERATED;
  if (generated) {
    std::string error;
    library = openSharedObject(exe.code(), error);
    if (!library)
      return error;
  }
  for (const Kernel &kernel : exe.kernels()) {
    void *fn = nullptr;
    if (kernel.kind() == Kernel::GENERATED) {
      fn = dlsym(library, kernel.symbol().c_str());
      if (!fn)
        return "kernel '" + kernel.name() + "': symbol '" + kernel.symbol() +
               "' is not in the executable's code";
    } else {
      fn = reinterpret_cast<void *>(findLibraryKernel(kernel.symbol()));
      if (!fn)
        return "kernel '" + kernel.name() +
               "': this runtime has no library "
               "kernel '" +
               kernel.symbol() + "'";
    }
    kernelFns.push_back(fn);
    kernelTimes.push_back({kernel.name(), 0, 0});
  }

  // State and constants live as long as the model.
  buffers.resize(exe.buffers_size());
  for (int b = 0; b < exe.buffers_size(); ++b) {
    const Buffer &buffer = exe.buffers(b);
    bool isState = buffer.role() == Buffer::PARAMETER ||
                   buffer.role() == Buffer::OPTIMIZER_STATE;
    if ((!isState && buffer.role() != Buffer::CONSTANT) || buffer.has_view_of())
      continue;
    std::vector<int64_t> shape;
    for (const runtime::Dim &dim : buffer.shape()) {
      if (!dim.has_size())
        return "'" + buffer.name() +
               "' is state or a constant with a "
               "dynamic shape";
      shape.push_back(dim.size());
    }
    buffers[b] = Tensor(buffer.dtype(), shape);
    if (buffer.role() == Buffer::CONSTANT)
      std::memcpy(buffers[b].data(), buffer.data().data(),
                  buffer.data().size());
    else
      stateIndex[buffer.name()] = b;
  }

  for (const runtime::EntryPoint &proto : exe.entry_points()) {
    auto entry = std::make_unique<Entry>();
    entry->proto = &proto;
    std::vector<bool> seen(exe.buffers_size());
    auto use = [&](int b) {
      if (!seen[b]) {
        seen[b] = true;
        entry->used.push_back(b);
      }
      if (exe.buffers(b).has_view_of() && !seen[exe.buffers(b).view_of()]) {
        seen[exe.buffers(b).view_of()] = true;
        entry->used.push_back(exe.buffers(b).view_of());
      }
    };
    for (int b : proto.inputs()) {
      use(b);
      if (exe.buffers(b).role() == Buffer::INPUT)
        entry->inputs.push_back(b);
    }
    for (int b : proto.outputs()) {
      use(b);
      // "param.w" is written over parameter "w", "exp_avg.w" over itself.
      std::string name = localName(exe.buffers(b).name());
      if (name.rfind("param.", 0) == 0)
        name = name.substr(6);
      auto it = stateIndex.find(name);
      int state = -1;
      if (it != stateIndex.end() &&
          exe.buffers(it->second).shape_size() == exe.buffers(b).shape_size()) {
        state = it->second;
        for (int d = 0; d < exe.buffers(b).shape_size(); ++d)
          if (!exe.buffers(b).shape(d).has_size() ||
              exe.buffers(b).shape(d).size() !=
                  exe.buffers(state).shape(d).size())
            state = -1;
      }
      entry->stateOutput.push_back(state);
    }
    for (const runtime::Step &step : proto.steps())
      for (int b : step.args())
        use(b);
    entries.push_back(std::move(entry));
  }
  return "";
}

std::vector<std::string> CpuModel::stateNames() const {
  std::vector<std::string> names;
  for (const auto &[name, index] : stateIndex)
    names.push_back(name);
  return names;
}

std::vector<std::string> CpuModel::parameterNames() const {
  std::vector<std::string> names;
  for (const auto &[name, index] : stateIndex)
    if (exe.buffers(index).role() == Buffer::PARAMETER)
      names.push_back(name);
  return names;
}

Tensor *CpuModel::state(const std::string &name) {
  auto it = stateIndex.find(name);
  return it == stateIndex.end() ? nullptr : &buffers[it->second];
}

bool CpuModel::hasEntry(const std::string &entry) const {
  for (const runtime::EntryPoint &proto : exe.entry_points())
    if (proto.name() == entry)
      return true;
  return false;
}

std::vector<std::string> CpuModel::inputNames(const std::string &name) const {
  std::vector<std::string> names;
  for (const auto &entry : entries)
    if (entry->proto->name() == name)
      for (int b : entry->inputs)
        names.push_back(localName(exe.buffers(b).name()));
  return names;
}

std::vector<KernelProfile> CpuModel::profile() const {
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

namespace {

/// The broadcast domain of a generated kernel's arguments: rows (all dims
/// but the last, flattened) and columns (the last dim).
std::pair<int64_t, int64_t> kernelDomain(const std::vector<TensorRef> &args) {
  size_t rank = 0;
  for (const TensorRef &arg : args)
    rank = std::max(rank, arg.shape.size());
  if (rank == 0)
    return {1, 1};
  std::vector<int64_t> domain(rank, 1);
  for (const TensorRef &arg : args)
    for (size_t d = 0; d < arg.shape.size(); ++d) {
      int64_t &size = domain[rank - arg.shape.size() + d];
      size = std::max(size, arg.shape[d]);
    }
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < rank; ++d)
    rows *= domain[d];
  return {rows, domain.back()};
}

/// Elements per task below which splitting costs more than it saves.
constexpr int64_t kParallelElements = 16384;

} // namespace

ErrorOr<std::vector<NamedTensor>>
CpuModel::run(const std::string &name, const std::vector<TensorRef> &inputs) {
  using Result = ErrorOr<std::vector<NamedTensor>>;
  Entry *entry = nullptr;
  std::string known;
  for (auto &e : entries) {
    if (e->proto->name() == name)
      entry = e.get();
    known += (known.empty() ? "" : ", ") + e->proto->name();
  }
  if (!entry)
    return Result::failure("no entry point '" + name +
                           "' in the executable (it has " + known + ")");
  if (inputs.size() != entry->inputs.size())
    return Result::failure("'" + name + "' takes " +
                           std::to_string(entry->inputs.size()) +
                           " inputs, got " + std::to_string(inputs.size()));

  // The named sizes, from the inputs' shapes.
  std::vector<int64_t> symbols(exe.symbols_size(), -1);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Buffer &buffer = exe.buffers(entry->inputs[i]);
    const TensorRef &input = inputs[i];
    std::string where = "input '" + localName(buffer.name()) + "'";
    if (input.dtype != buffer.dtype())
      return Result::failure(where + " is " + dtypeName(input.dtype) +
                             ", expected " + dtypeName(buffer.dtype()));
    if (input.rank() != buffer.shape_size())
      return Result::failure(where + " has shape " + shapeString(input.shape) +
                             ", expected rank " +
                             std::to_string(buffer.shape_size()));
    for (int d = 0; d < buffer.shape_size(); ++d) {
      const runtime::Dim &dim = buffer.shape(d);
      if (dim.has_poly() && dim.poly().terms_size() == 1 &&
          dim.poly().terms(0).coefficient() == 1 &&
          dim.poly().terms(0).symbols_size() == 1) {
        int32_t s = dim.poly().terms(0).symbols(0);
        if (symbols[s] < 0)
          symbols[s] = input.shape[d];
      }
    }
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Buffer &buffer = exe.buffers(entry->inputs[i]);
    for (int d = 0; d < buffer.shape_size(); ++d) {
      int64_t expected = evaluate(buffer.shape(d), symbols);
      if (expected != inputs[i].shape[d])
        return Result::failure("input '" + localName(buffer.name()) +
                               "' has shape " + shapeString(inputs[i].shape) +
                               ", but its dim " + std::to_string(d) +
                               " must be " + std::to_string(expected) +
                               " to agree with the other inputs");
    }
  }
  for (size_t s = 0; s < symbols.size(); ++s)
    if (symbols[s] < 0)
      symbols[s] = 0; // no input of this entry names it

  // Every buffer's shape and bytes for this call.
  std::vector<TensorRef> refs(exe.buffers_size());
  for (int b : entry->used) {
    const Buffer &buffer = exe.buffers(b);
    TensorRef &ref = refs[b];
    ref.dtype = buffer.dtype();
    for (const runtime::Dim &dim : buffer.shape())
      ref.shape.push_back(evaluate(dim, symbols));
    if (buffer.role() == Buffer::TEMPORARY && ref.bytes() > buffer.max_bytes())
      return Result::failure(
          "the inputs are larger than '" + name +
          "' was compiled for "
          "(max-tokens " +
          std::to_string(exe.max_tokens()) + ", max-len " +
          std::to_string(exe.max_len()) + ", max-batch " +
          std::to_string(exe.max_batch()) + "): " + buffer.name() + " " +
          shapeString(ref.shape) + " needs " + std::to_string(ref.bytes()) +
          " bytes, its arena slice holds " +
          std::to_string(buffer.max_bytes()));
  }

  // Where each buffer lives.
  char *arena = arenaFor(entry->proto->arena_bytes());
  if (!arena)
    return Result::failure("cannot allocate the " +
                           std::to_string(entry->proto->arena_bytes()) +
                           "-byte arena of '" + name + "'");
  std::vector<Tensor> outputs(entry->proto->outputs_size());
  for (size_t i = 0; i < inputs.size(); ++i)
    refs[entry->inputs[i]].data = inputs[i].data;
  for (int o = 0; o < entry->proto->outputs_size(); ++o) {
    int b = entry->proto->outputs(o);
    if (entry->stateOutput[o] >= 0) {
      refs[b].data = buffers[entry->stateOutput[o]].data();
    } else {
      outputs[o] = Tensor(refs[b].dtype, refs[b].shape);
      refs[b].data = outputs[o].data();
    }
  }
  for (int b : entry->used) {
    const Buffer &buffer = exe.buffers(b);
    if (buffer.role() == Buffer::TEMPORARY)
      refs[b].data = arena + buffer.arena_offset();
    else if (!buffer.has_view_of() && buffers[b].data())
      refs[b].data = buffers[b].data();
  }
  for (int b : entry->used) {
    const Buffer &buffer = exe.buffers(b);
    if (!buffer.has_view_of())
      continue;
    const TensorRef &root = refs[buffer.view_of()];
    if (buffer.view_offset() + refs[b].bytes() > root.bytes())
      return Result::failure(buffer.name() + " " + shapeString(refs[b].shape) +
                             " at byte " +
                             std::to_string(buffer.view_offset()) +
                             " does not fit in the buffer it views");
    refs[b].data = static_cast<char *>(root.data) + buffer.view_offset();
  }

  std::vector<void *> pointers;
  std::vector<int64_t> dims;
  for (int s = 0; s < entry->proto->steps_size(); ++s) {
    const runtime::Step &step = entry->proto->steps(s);
    const Kernel &kernel = exe.kernels(step.kernel());
    auto start = std::chrono::steady_clock::now();
    if (kernel.kind() == Kernel::GENERATED) {
      auto fn = reinterpret_cast<GeneratedKernel>(kernelFns[step.kernel()]);
      pointers.clear();
      dims.clear();
      std::vector<TensorRef> args;
      for (int b : step.args()) {
        pointers.push_back(refs[b].data);
        dims.insert(dims.end(), refs[b].shape.begin(), refs[b].shape.end());
        args.push_back(refs[b]);
      }
      auto [rows, cols] = kernelDomain(args);
      if (rows > 0 && cols > 0) {
        if (kernel.parallel() && rows * cols >= 2 * kParallelElements) {
          int64_t grain = std::max<int64_t>(1, kParallelElements / cols);
          threadPool->parallelFor(rows, grain, [&](int64_t b, int64_t e) {
            fn(pointers.data(), dims.data(), b, e);
          });
        } else {
          fn(pointers.data(), dims.data(), 0, rows);
        }
      }
    } else {
      KernelCall call;
      for (int b : step.args())
        call.args.push_back(refs[b]);
      call.ints.assign(step.int_attrs().begin(), step.int_attrs().end());
      call.floats.assign(step.float_attrs().begin(), step.float_attrs().end());
      call.pool = threadPool.get();
      auto fn = reinterpret_cast<LibraryKernel>(kernelFns[step.kernel()]);
      if (std::string error = fn(call); !error.empty())
        return Result::failure("'" + name + "' step " + std::to_string(s) +
                               " (" + kernel.symbol() + "): " + error);
    }
    if (profiling) {
      KernelProfile &p = kernelTimes[step.kernel()];
      ++p.calls;
      p.seconds += std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - start)
                       .count();
    }
  }

  std::vector<NamedTensor> results;
  for (int o = 0; o < entry->proto->outputs_size(); ++o)
    if (entry->stateOutput[o] < 0)
      results.push_back(
          {localName(exe.buffers(entry->proto->outputs(o)).name()),
           std::move(outputs[o])});
  return results;
}

} // namespace loom::cpu
