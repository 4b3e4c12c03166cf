//===- StepValidation.cpp - A step against its kernel's signature ---------===//
//
// A generated kernel trusts its arguments blindly: it was compiled for their
// dtypes, ranks and static sizes, reads the dynamic sizes from the call and
// walks its domain, the broadcast of the shapes through which it touches
// each argument (Kernel.accesses). It stays inside every argument when,
// along each domain dim, all the sizes that meet there are 1 or one common
// size, and each access covers no more elements than its argument holds.
// Here both are proven from the dims' polynomials, for every call: sizes
// that meet are the same polynomial (or the constant 1). Program checks
// the same per call from the sizes themselves, for calls outside the
// admissible sizes (a size of 0).
//
// A library kernel checks the extents it reads and writes itself; here the
// call is held to its signature (abi/LibraryCalls.h) and its attributes to
// the ranks of its tensors, so that a mismatch is refused at load.
//
//===----------------------------------------------------------------------===//

#include "runtime/StepValidation.h"

#include "abi/LibraryCalls.h"
#include "runtime/Executable.h"
#include "runtime/ExecutableValidation.h"

#include <algorithm>
#include <optional>

namespace loom::runtime {

namespace {

Status corrupt(std::string message) {
  return Status::failure(std::move(message), ErrorCode::Corrupt);
}

std::string argument(const Executable &exe, const Step &step, int a) {
  return "argument " + std::to_string(a) + " (" +
         describeBuffer(exe, step.args(a)) + ")";
}

std::vector<std::string> symbolNames(const Executable &exe) {
  return {exe.symbols().begin(), exe.symbols().end()};
}

/// One dim of an access: a static size, or a dim of the argument.
struct Size {
  const SizePolynomial *poly = nullptr; // else `constant`
  int64_t constant = 0;

  bool isOne() const { return poly ? poly->isConstant(1) : constant == 1; }
  bool operator==(const Size &other) const {
    if (poly && other.poly)
      return *poly == *other.poly;
    if (poly)
      return poly->isConstant(other.constant);
    if (other.poly)
      return other.poly->isConstant(constant);
    return constant == other.constant;
  }
  SizePolynomial value() const {
    return poly ? *poly : SizePolynomial::constant(constant);
  }
  std::string str(const Executable &exe) const {
    return poly ? poly->str(symbolNames(exe)) : std::to_string(constant);
  }
};

Size sizeOf(const AccessDim &dim, const Access &access, const Step &step,
            const BufferDims &dims) {
  if (dim.has_size())
    return {nullptr, dim.size()};
  return {&dims[step.args(access.arg())][dim.arg_dim()], 0};
}

/// Whether `access` walks its argument through the argument's own shape.
bool isOwnShape(const Access &access, const Step &step,
                const BufferDims &dims) {
  const std::vector<SizePolynomial> &own = dims[step.args(access.arg())];
  if (access.dims_size() != static_cast<int>(own.size()))
    return false;
  for (int j = 0; j < access.dims_size(); ++j) {
    const AccessDim &dim = access.dims(j);
    if (dim.has_size() ? !own[j].isConstant(dim.size()) : dim.arg_dim() != j)
      return false;
  }
  return true;
}

Status checkGenerated(const Executable &exe, const BufferDims &dims, int e,
                      int s, StepEffects &effects) {
  const Step &step = exe.entry_points(e).steps(s);
  const Kernel &kernel = exe.kernels(step.kernel());
  auto where = [&] { return describeStep(exe, e, s); };
  auto compiled = [&] { return describeKernel(exe, step.kernel()); };
  if (step.int_attrs_size() || step.float_attrs_size())
    return corrupt(where() + " passes attributes to generated " + compiled() +
                   ", which takes none");
  for (int a = 0; a < step.args_size(); ++a) {
    const KernelArg &expected = kernel.args(a);
    const Buffer &buffer = exe.buffers(step.args(a));
    auto what = [&] { return where() + ": " + argument(exe, step, a); };
    if (buffer.dtype() != expected.dtype())
      return corrupt(what() + " is " + Buffer::DType_Name(buffer.dtype()) +
                     ", but " + compiled() + " was compiled for " +
                     Buffer::DType_Name(expected.dtype()));
    if (buffer.shape_size() != expected.dims_size())
      return corrupt(what() + " has rank " +
                     std::to_string(buffer.shape_size()) + ", but " +
                     compiled() + " was compiled for rank " +
                     std::to_string(expected.dims_size()));
    for (int d = 0; d < expected.dims_size(); ++d)
      if (expected.dims(d) >= 0 &&
          !dims[step.args(a)][d].isConstant(expected.dims(d)))
        return corrupt(what() + ": dim " + std::to_string(d) + " is " +
                       dims[step.args(a)][d].str(symbolNames(exe)) + ", but " +
                       compiled() + " was compiled for " +
                       std::to_string(expected.dims(d)));
    effects.written[a] = expected.written();
    effects.mayShareWithResult[a] = !expected.written();
  }

  // Along each dim of the domain (accesses aligned to the right), every
  // size other than 1 must be one and the same.
  int rank = 0;
  for (const Access &access : kernel.accesses())
    rank = std::max(rank, access.dims_size());
  std::vector<Size> common(rank);
  std::vector<int> firstSeen(rank, -2); // the access that set it
  auto seen = [&](int access) {
    int arg = kernel.accesses(access).arg();
    return arg < 0 ? std::string("a constant of the kernel")
                   : argument(exe, step, arg);
  };
  for (int i = 0; i < kernel.accesses_size(); ++i) {
    const Access &access = kernel.accesses(i);
    int lead = rank - access.dims_size();
    for (int j = 0; j < access.dims_size(); ++j) {
      Size size = access.arg() < 0 ? Size{nullptr, access.dims(j).size()}
                                   : sizeOf(access.dims(j), access, step, dims);
      if (size.isOne())
        continue;
      int d = lead + j;
      if (firstSeen[d] == -2) {
        common[d] = size;
        firstSeen[d] = i;
      } else if (!(common[d] == size)) {
        return corrupt(where() + ": " + compiled() + " lines up " + seen(i) +
                       " (size " + size.str(exe) + ") with " +
                       seen(firstSeen[d]) + " (size " + common[d].str(exe) +
                       ") along dim " + std::to_string(d) + " of its domain");
      }
    }
    if (access.arg() < 0 || isOwnShape(access, step, dims))
      continue;
    // A view of the argument must not cover more elements than it holds.
    std::optional<SizePolynomial> covered = SizePolynomial::constant(1);
    for (const AccessDim &dim : access.dims())
      if (covered)
        covered = covered->times(sizeOf(dim, access, step, dims).value());
    const Buffer &buffer = exe.buffers(step.args(access.arg()));
    std::optional<SizePolynomial> held =
        SizePolynomial::product(buffer.shape(), 1);
    std::optional<SizePolynomial> spare =
        covered && held ? held->minus(*covered) : std::nullopt;
    std::optional<bool> fits =
        spare ? spare->nonNegativeForPositiveSizes() : std::nullopt;
    if (!fits || !*fits)
      return corrupt(where() + ": " + compiled() + " walks more elements of " +
                     argument(exe, step, access.arg()) + " than it holds");
  }
  return Status::success();
}

/// The attributes of a library call against the ranks of its tensors.
Status checkLibraryRanks(const std::string &kernel, const abi::CallAttrs &attrs,
                         const std::vector<int> &ranks,
                         const std::vector<const Dim *> &lastDims) {
  auto fail = [&](const std::string &why) {
    return corrupt(kernel + ": " + why);
  };
  auto axis = [&](int64_t dim, int rank, const char *of) -> Status {
    if (dim < 0 || dim >= rank)
      return fail("dim " + std::to_string(dim) + " is outside the rank " +
                  std::to_string(rank) + " of " + of);
    return Status::success();
  };
  int n = static_cast<int>(ranks.size());
  if (kernel == "transpose") {
    if (static_cast<int>(attrs.ints.size()) != ranks[0] || ranks[1] != ranks[0])
      return fail("a permutation of " + std::to_string(attrs.ints.size()) +
                  " dims for tensors of rank " + std::to_string(ranks[0]) +
                  " and " + std::to_string(ranks[1]));
  } else if (kernel == "slice") {
    LOOM_RETURN_IF_ERROR(axis(attrs.ints[0], ranks[0], "its input"));
    if (ranks[1] != ranks[0])
      return fail("the result's rank differs from the input's");
  } else if (kernel == "slice_grad") {
    LOOM_RETURN_IF_ERROR(axis(attrs.ints[0], ranks[1], "`like`"));
    if (ranks[0] != ranks[1] || ranks[2] != ranks[1])
      return fail("the tensors' ranks differ");
  } else if (kernel == "concat") {
    LOOM_RETURN_IF_ERROR(axis(attrs.ints[0], ranks[n - 1], "the result"));
    for (int i = 0; i + 1 < n; ++i)
      if (ranks[i] != ranks[n - 1])
        return fail("input " + std::to_string(i) +
                    "'s rank differs from the result's");
  } else if (kernel == "causal_mask" || kernel == "iota") {
    LOOM_RETURN_IF_ERROR(axis(attrs.ints[0], ranks[0], "`like`"));
  } else if (kernel == "one_hot") {
    if (ranks[1] != ranks[0] + 1)
      return fail("the result's rank is not the ids' plus one");
    if (lastDims[1]->has_size() && lastDims[1]->size() != attrs.ints[0])
      return fail("depth " + std::to_string(attrs.ints[0]) +
                  " but the result's last dim is " +
                  std::to_string(lastDims[1]->size()));
  } else if (kernel == "linear" || kernel == "cross_entropy_grad") {
    if (ranks[n - 1] != ranks[0])
      return fail("the result's rank differs from the input's");
  } else if (kernel == "gather") {
    if (ranks[2] != ranks[1] + ranks[0] - 1)
      return fail("the result's rank is not the ids' plus the table's less "
                  "one");
  } else if (kernel == "attention" || kernel == "attention_grad") {
    for (int i = 0; i < n; ++i)
      if (ranks[i] > ranks[0])
        return fail("tensor " + std::to_string(i) +
                    " has a higher rank than q");
  }
  return Status::success();
}

Status checkLibrary(const Executable &exe, int e, int s, StepEffects &effects) {
  const Step &step = exe.entry_points(e).steps(s);
  const Kernel &kernel = exe.kernels(step.kernel());
  const abi::LibrarySignature *signature =
      abi::librarySignature(kernel.symbol());
  if (!signature)
    return Status::success(); // the device refuses what it does not have
  auto what = [&] {
    return describeStep(exe, e, s) + " (" + describeKernel(exe, step.kernel()) +
           ")";
  };
  abi::CallAttrs &attrs = effects.attrs;
  attrs.ints.assign(step.int_attrs().begin(), step.int_attrs().end());
  attrs.floats.assign(step.float_attrs().begin(), step.float_attrs().end());
  if (Status decoded = abi::checkLibraryAttrs(kernel.symbol(), attrs);
      !decoded.ok())
    return decoded.withContext(what());
  ErrorOr<std::vector<const abi::LibraryArg *>> args =
      abi::libraryCallArgs(*signature, attrs, step.args_size());
  if (!args)
    return args.status().withContext(what());
  std::vector<int> &ranks = effects.ranks;
  std::vector<const Dim *> &lastDims = effects.lastDims;
  ranks.clear();
  lastDims.clear();
  for (int a = 0; a < step.args_size(); ++a) {
    const abi::LibraryArg &spec = *(*args)[a];
    const Buffer &buffer = exe.buffers(step.args(a));
    DType dtype = *dtypeOfWire(buffer.dtype());
    int rank = buffer.shape_size();
    auto tensor = [&] {
      return what() + ": " + argument(exe, step, a) + ", tensor '" + spec.name +
             "',";
    };
    if (!(spec.dtypes & abi::dtypeBit(dtype)))
      return corrupt(tensor() + " is " + dtypeName(dtype) + ", which " +
                     kernel.symbol() + " does not take there");
    if (rank < spec.minRank ||
        (spec.maxRank != abi::kAnyRank && rank > spec.maxRank))
      return corrupt(tensor() + " has rank " + std::to_string(rank) +
                     ", which " + kernel.symbol() + " does not take there");
    effects.written[a] = spec.written;
    effects.mayShareWithResult[a] = spec.mayShareWithResult;
    ranks.push_back(rank);
    lastDims.push_back(rank ? &buffer.shape(rank - 1) : nullptr);
  }
  if (Status fits = checkLibraryRanks(kernel.symbol(), attrs, ranks, lastDims);
      !fits.ok())
    return fits.withContext(what());
  return Status::success();
}

/// all_reduce_start (operands, then results of the same dtype and shape)
/// and all_reduce_wait (the results), each with its pairing id.
Status checkCollective(const Executable &exe, int e, int s,
                       StepEffects &effects) {
  const Step &step = exe.entry_points(e).steps(s);
  const Kernel &kernel = exe.kernels(step.kernel());
  auto what = [&] {
    return describeStep(exe, e, s) + " (" + describeKernel(exe, step.kernel()) +
           ")";
  };
  if (step.int_attrs_size() != 1 || step.int_attrs(0) < 0 ||
      step.float_attrs_size())
    return corrupt(what() + " must carry one id and nothing else");
  int n = step.args_size();
  if (kernel.symbol() == "all_reduce_wait") {
    if (n < 1)
      return corrupt(what() + " waits for no tensor");
    effects.written.assign(n, true);
    return Status::success();
  }
  if (kernel.symbol() != "all_reduce_start")
    return corrupt(what() + ": no collective '" + kernel.symbol() + "'");
  if (n < 2 || n % 2)
    return corrupt(what() + " takes " + std::to_string(n) +
                   " arguments, not operands and as many results");
  for (int i = 0; i < n / 2; ++i) {
    const Buffer &in = exe.buffers(step.args(i));
    const Buffer &out = exe.buffers(step.args(n / 2 + i));
    bool same =
        in.dtype() == out.dtype() && in.shape_size() == out.shape_size();
    for (int d = 0; same && d < in.shape_size(); ++d)
      same =
          in.shape(d).SerializeAsString() == out.shape(d).SerializeAsString();
    if (!same)
      return corrupt(what() + ": result " + std::to_string(i) +
                     " differs from its operand in dtype or shape");
    if (in.dtype() != Buffer::F32 && in.dtype() != Buffer::F64 &&
        in.dtype() != Buffer::F16 && in.dtype() != Buffer::BF16)
      return corrupt(what() + ": operand " + std::to_string(i) +
                     " is not a float tensor");
    effects.written[n / 2 + i] = true;
  }
  return Status::success();
}

} // namespace

Status validateGeneratedKernel(const Executable &exe, int k) {
  const Kernel &kernel = exe.kernels(k);
  std::string where = describeKernel(exe, k);
  if (kernel.kind() != Kernel::GENERATED) {
    if (kernel.args_size() || kernel.accesses_size())
      return corrupt(where + " is a library kernel with a recorded "
                             "signature; the runtime's is its signature");
    return Status::success();
  }
  if (kernel.args_size() != kernel.num_args())
    return corrupt(where + " takes " + std::to_string(kernel.num_args()) +
                   " arguments but records the signature of " +
                   std::to_string(kernel.args_size()));
  for (int a = 0; a < kernel.args_size(); ++a) {
    const KernelArg &arg = kernel.args(a);
    if (!dtypeOfWire(arg.dtype()))
      return corrupt(where + ": argument " + std::to_string(a) +
                     " has unknown dtype " + std::to_string(arg.dtype()));
    for (int64_t d : arg.dims())
      if (d < -1)
        return corrupt(where + ": argument " + std::to_string(a) +
                       " has a dim of " + std::to_string(d));
  }
  for (int i = 0; i < kernel.accesses_size(); ++i) {
    const Access &access = kernel.accesses(i);
    std::string what = where + ": access " + std::to_string(i);
    if (access.arg() < -1 || access.arg() >= kernel.args_size())
      return corrupt(what + " is of argument " + std::to_string(access.arg()) +
                     ", but the kernel takes " +
                     std::to_string(kernel.args_size()));
    int rank = access.arg() < 0 ? 0 : kernel.args(access.arg()).dims_size();
    for (const AccessDim &dim : access.dims()) {
      if (dim.has_size() ? dim.size() < 0
                         : !dim.has_arg_dim() || dim.arg_dim() < 0 ||
                               dim.arg_dim() >= rank)
        return corrupt(what + " has a dim that is neither a size nor one of "
                              "its argument's dims");
    }
  }
  // Whatever the kernel writes, it writes through an access.
  std::vector<bool> accessed(kernel.args_size(), false);
  for (const Access &access : kernel.accesses())
    if (access.arg() >= 0)
      accessed[access.arg()] = true;
  for (int a = 0; a < kernel.args_size(); ++a) {
    if (kernel.args(a).written() && !accessed[a])
      return corrupt(where + " writes argument " + std::to_string(a) +
                     " through no recorded access");
  }
  return Status::success();
}

Status checkStep(const Executable &exe, const BufferDims &dims, int entry,
                 int step, StepEffects &effects) {
  const Step &proto = exe.entry_points(entry).steps(step);
  effects.written.assign(proto.args_size(), false);
  effects.mayShareWithResult.assign(proto.args_size(), false);
  Kernel::Kind kind = exe.kernels(proto.kernel()).kind();
  if (kind == Kernel::GENERATED)
    return checkGenerated(exe, dims, entry, step, effects);
  if (kind == Kernel::COLLECTIVE)
    return checkCollective(exe, entry, step, effects);
  return checkLibrary(exe, entry, step, effects);
}

} // namespace loom::runtime
