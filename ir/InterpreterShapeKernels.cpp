//===- InterpreterShapeKernels.cpp - Shape and data-movement kernels ------===//
//
// Every size here is a run-time size, so these kernels are where a dynamic
// dim that does not fit (a reshape count, a slice range, a concat dim, a
// broadcast) is caught; each error names the shapes involved. Transpose,
// slice and broadcast are one strided copy each; sum_to is a strided
// accumulation, the adjoint of broadcasting.
//
//===----------------------------------------------------------------------===//

#include "ir/InterpreterKernels.h"

#include <cstring>

using namespace loom;
using namespace loom::interp;

llvm::Expected<HostTensor> interp::iota(const HostTensor &like, int64_t dim,
                                        DType kind) {
  if (dim < 0 || dim >= like.rank())
    return kernelError("dim " + llvm::Twine(dim) + " is out of range for " +
                       shapeString(like.shape));
  HostTensor out({like.shape[dim]}, kind);
  for (int64_t i = 0; i < out.numel(); ++i)
    out.data[i] = static_cast<double>(i);
  return out;
}

llvm::Expected<HostTensor> interp::reshape(HostTensor input,
                                           llvm::ArrayRef<int64_t> spec) {
  Shape shape;
  int64_t inferIndex = -1, known = 1;
  for (size_t i = 0; i < spec.size(); ++i) {
    int64_t s = spec[i];
    if (s == 0) {
      if (static_cast<int64_t>(i) >= input.rank())
        return kernelError("copies dim " + llvm::Twine(i) + " of " +
                           shapeString(input.shape));
      s = input.shape[i];
    } else if (s == -1 && inferIndex < 0) {
      inferIndex = static_cast<int64_t>(i);
      shape.push_back(-1);
      continue;
    } else if (s < 0) {
      return kernelError("has invalid size " + llvm::Twine(s));
    }
    known *= s;
    shape.push_back(s);
  }
  auto describe = [&] {
    std::string s;
    for (size_t i = 0; i < shape.size(); ++i)
      s += (i ? "x" : "") +
           (shape[i] < 0 ? std::string("?") : std::to_string(shape[i]));
    return s.empty() ? std::string("scalar") : s;
  };
  int64_t count = input.numel();
  if (inferIndex >= 0) {
    if (known == 0 || count % known)
      return kernelError("cannot reshape " + shapeString(input.shape) + " (" +
                         llvm::Twine(count) + " elements) into " + describe());
    shape[inferIndex] = count / known;
  } else if (known != count) {
    return kernelError("cannot reshape " + shapeString(input.shape) + " (" +
                       llvm::Twine(count) + " elements) into " + describe() +
                       " (" + llvm::Twine(known) + " elements)");
  }
  input.shape = std::move(shape);
  return input;
}

llvm::Expected<HostTensor> interp::reshapeTo(HostTensor input,
                                             llvm::ArrayRef<int64_t> shape) {
  int64_t count = 1;
  for (int64_t d : shape)
    count *= d;
  if (count != input.numel())
    return kernelError("cannot reshape " + shapeString(input.shape) + " (" +
                       llvm::Twine(input.numel()) + " elements) into " +
                       shapeString(shape) + " (" + llvm::Twine(count) +
                       " elements)");
  input.shape.assign(shape.begin(), shape.end());
  return input;
}

llvm::Expected<HostTensor> interp::expandDims(HostTensor input,
                                              llvm::ArrayRef<int64_t> dims) {
  int64_t rank = input.rank() + static_cast<int64_t>(dims.size());
  std::vector<bool> inserted(rank, false);
  for (int64_t d : dims) {
    if (d < 0 || d >= rank || inserted[d])
      return kernelError("has invalid or repeated dim " + llvm::Twine(d) +
                         " for a rank-" + llvm::Twine(rank) + " result");
    inserted[d] = true;
  }
  Shape shape;
  for (int64_t i = 0, next = 0; i < rank; ++i)
    shape.push_back(inserted[i] ? 1 : input.shape[next++]);
  input.shape = std::move(shape);
  return input;
}

llvm::Expected<HostTensor> interp::transpose(const HostTensor &input,
                                             llvm::ArrayRef<int64_t> perm) {
  int64_t rank = input.rank();
  std::vector<bool> seen(rank, false);
  bool valid = static_cast<int64_t>(perm.size()) == rank;
  for (int64_t p : perm) {
    valid = valid && p >= 0 && p < rank && !seen[p];
    if (valid)
      seen[p] = true;
  }
  if (!valid)
    return kernelError("perm is not a permutation of the dims of " +
                       shapeString(input.shape));
  Shape inStrides = stridesOf(input.shape), shape, strides;
  for (int64_t p : perm) {
    shape.push_back(input.shape[p]);
    strides.push_back(inStrides[p]);
  }
  HostTensor out(shape, input.kind);
  stridedCopy(shape, strides, input.data.data(), out.data.data());
  return out;
}

/// Resolves [start, end) against a dim of `size` (see loom.slice).
static llvm::Expected<std::pair<int64_t, int64_t>>
sliceRange(llvm::ArrayRef<int64_t> shape, int64_t dim, int64_t start,
           int64_t end) {
  if (dim < 0 || dim >= static_cast<int64_t>(shape.size()))
    return kernelError("dim " + llvm::Twine(dim) + " is out of range for " +
                       shapeString(shape));
  int64_t size = shape[dim];
  int64_t s = start < 0 ? start + size : start;
  int64_t e = end <= 0 ? end + size : end;
  if (s < 0 || e > size || s > e)
    return kernelError("range [" + llvm::Twine(start) + ", " +
                       llvm::Twine(end) + ") is outside dim " +
                       llvm::Twine(dim) + " of " + shapeString(shape));
  return std::make_pair(s, e);
}

llvm::Expected<HostTensor> interp::slice(const HostTensor &input, int64_t dim,
                                         int64_t start, int64_t end) {
  auto range = sliceRange(input.shape, dim, start, end);
  if (!range)
    return range.takeError();
  Shape shape = input.shape, strides = stridesOf(input.shape);
  shape[dim] = range->second - range->first;
  HostTensor out(shape, input.kind);
  stridedCopy(shape, strides, input.data.data() + range->first * strides[dim],
              out.data.data());
  return out;
}

llvm::Expected<HostTensor> interp::sliceGrad(const HostTensor &input,
                                             const HostTensor &like,
                                             int64_t dim, int64_t start,
                                             int64_t end, DType kind) {
  auto range = sliceRange(like.shape, dim, start, end);
  if (!range)
    return range.takeError();
  Shape expected = like.shape;
  expected[dim] = range->second - range->first;
  if (input.shape != expected)
    return kernelError("input " + shapeString(input.shape) +
                       " does not fit slice [" + llvm::Twine(start) + ", " +
                       llvm::Twine(end) + ") of dim " + llvm::Twine(dim) +
                       " of " + shapeString(like.shape) + ", which is " +
                       shapeString(expected));
  HostTensor out(like.shape, kind);
  Shape strides = stridesOf(like.shape);
  // The slice's elements are disjoint, so accumulating into zeros is a copy.
  stridedAccumulate(input.shape, input.data.data(), strides,
                    out.data.data() + range->first * strides[dim]);
  return out;
}

llvm::Expected<HostTensor>
interp::concat(llvm::ArrayRef<const HostTensor *> inputs, int64_t dim,
               DType kind) {
  if (inputs.empty())
    return kernelError("needs at least one input");
  const Shape &first = inputs[0]->shape;
  int64_t rank = static_cast<int64_t>(first.size());
  if (dim < 0 || dim >= rank)
    return kernelError("dim " + llvm::Twine(dim) + " is out of range for " +
                       shapeString(first));
  Shape shape = first;
  shape[dim] = 0;
  for (const HostTensor *t : inputs) {
    bool fits = t->rank() == rank;
    for (int64_t i = 0; fits && i < rank; ++i)
      fits = i == dim || t->shape[i] == first[i];
    if (!fits)
      return kernelError("inputs " + shapeString(first) + " and " +
                         shapeString(t->shape) + " differ outside dim " +
                         llvm::Twine(dim));
    shape[dim] += t->shape[dim];
  }
  HostTensor out(shape, kind);
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < dim; ++i)
    outer *= shape[i];
  for (int64_t i = dim + 1; i < rank; ++i)
    inner *= shape[i];
  int64_t outRow = shape[dim] * inner, at = 0;
  for (const HostTensor *t : inputs) {
    int64_t chunk = t->shape[dim] * inner;
    for (int64_t o = 0; o < outer && chunk; ++o)
      std::memcpy(out.data.data() + o * outRow + at, t->data.data() + o * chunk,
                  chunk * sizeof(double));
    at += chunk;
  }
  return out;
}

llvm::Expected<HostTensor> interp::broadcastTo(const HostTensor &input,
                                               llvm::ArrayRef<int64_t> shape) {
  size_t lead = shape.size() - std::min(shape.size(), input.shape.size());
  bool fits = input.shape.size() <= shape.size();
  for (size_t i = 0; fits && i < input.shape.size(); ++i)
    fits = input.shape[i] == 1 || input.shape[i] == shape[lead + i];
  if (!fits)
    return kernelError("cannot broadcast " + shapeString(input.shape) + " to " +
                       shapeString(shape));
  HostTensor out(Shape(shape), input.kind);
  stridedCopy(shape, broadcastStrides(input.shape, shape), input.data.data(),
              out.data.data());
  return out;
}

llvm::Expected<HostTensor> interp::sumTo(const HostTensor &input,
                                         llvm::ArrayRef<int64_t> shape) {
  size_t rank = input.shape.size();
  bool fits = shape.size() <= rank;
  size_t lead = rank - std::min(rank, shape.size());
  for (size_t i = 0; fits && i < shape.size(); ++i)
    fits = shape[i] == 1 || shape[i] == input.shape[lead + i];
  if (!fits)
    return kernelError("cannot sum " + shapeString(input.shape) + " down to " +
                       shapeString(shape));
  HostTensor out(Shape(shape), input.kind);
  // Where `shape` has no dim or a 1, the input dim is summed away.
  Shape strides(rank, 0), outStrides = stridesOf(shape);
  for (size_t i = 0; i < shape.size(); ++i)
    strides[lead + i] = shape[i] == 1 ? 0 : outStrides[i];
  stridedAccumulate(input.shape, input.data.data(), strides, out.data.data());
  return out;
}

/// Checks each id against [0, rows); names the first that is outside.
static llvm::Error checkIds(const HostTensor &ids, int64_t rows) {
  for (double id : ids.data)
    if (!(id >= 0 && id < static_cast<double>(rows)))
      return kernelError("id " + valueString(id) + " is outside [0, " +
                         llvm::Twine(rows) + ")");
  return llvm::Error::success();
}

llvm::Expected<HostTensor> interp::gather(const HostTensor &table,
                                          const HostTensor &ids) {
  if (table.rank() < 1)
    return kernelError("table must have rank 1 or more");
  if (llvm::Error err = checkIds(ids, table.shape[0]))
    return err;
  Shape shape = ids.shape;
  shape.insert(shape.end(), table.shape.begin() + 1, table.shape.end());
  HostTensor out(shape, table.kind);
  int64_t row = 1;
  for (int64_t i = 1; i < table.rank(); ++i)
    row *= table.shape[i];
  for (int64_t i = 0, n = ids.numel(); i < n && row; ++i)
    std::memcpy(out.data.data() + i * row,
                table.data.data() + static_cast<int64_t>(ids.data[i]) * row,
                row * sizeof(double));
  return out;
}

llvm::Expected<HostTensor> interp::scatterAdd(const HostTensor &updates,
                                              const HostTensor &ids,
                                              const HostTensor &like,
                                              DType kind) {
  if (like.rank() < 1)
    return kernelError("like must have rank 1 or more");
  Shape expected = ids.shape;
  expected.insert(expected.end(), like.shape.begin() + 1, like.shape.end());
  if (updates.shape != expected)
    return kernelError("updates " + shapeString(updates.shape) +
                       " do not match ids " + shapeString(ids.shape) +
                       " and rows of " + shapeString(like.shape));
  if (llvm::Error err = checkIds(ids, like.shape[0]))
    return err;
  HostTensor out(like.shape, kind);
  int64_t row = 1;
  for (int64_t i = 1; i < like.rank(); ++i)
    row *= like.shape[i];
  for (int64_t i = 0, n = ids.numel(); i < n; ++i) {
    double *dst = out.data.data() + static_cast<int64_t>(ids.data[i]) * row;
    const double *src = updates.data.data() + i * row;
    for (int64_t j = 0; j < row; ++j)
      dst[j] += src[j];
  }
  return out;
}

llvm::Expected<HostTensor> interp::oneHot(const HostTensor &ids, int64_t depth,
                                          DType kind) {
  if (depth <= 0)
    return kernelError("depth must be positive, got " + llvm::Twine(depth));
  Shape shape = ids.shape;
  shape.push_back(depth);
  HostTensor out(shape, kind);
  // An id outside [0, depth) (a padding or ignore id) gives a row of zeros.
  for (int64_t i = 0, n = ids.numel(); i < n; ++i) {
    double id = ids.data[i];
    if (id >= 0 && id < static_cast<double>(depth))
      out.data[i * depth + static_cast<int64_t>(id)] = 1.0;
  }
  return out;
}
