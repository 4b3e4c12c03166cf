//===- OnnxImporter.cpp - ONNX graphs as loom functions -------------------===//
//
// The walk over a graph: inputs and initializers become arguments, each node
// goes to its converter (OnnxImport.h), the outputs are returned, and the
// function is verified. Every op a node builds is located at the node's name,
// so a later diagnostic (or an interpreter error) points back into the ONNX
// graph.
//
//===----------------------------------------------------------------------===//

#include "frontend/onnx/OnnxImporter.h"
#include "frontend/onnx/OnnxImport.h"

#include "abi/ModelAbi.h"
#include "ir/ShapeUtils.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <map>
#include <numeric>
#include <set>

using namespace loom;
using namespace loom::onnx_import;
using llvm::Error;
using llvm::Expected;
using llvm::StringRef;

/// Elements all the constants an import folds may hold together.
constexpr int64_t kMaxFoldedElements = int64_t(1) << 26;

static Error importError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

namespace loom::onnx_import {

class Importer {
public:
  Importer(mlir::ModuleOp module, const onnx::ModelProto &model,
           const OnnxImportOptions &options)
      : model(model), options(options),
        g(module, options.loss ? abi::kLoss : options.function),
        handler(module.getContext(), [this](mlir::Diagnostic &d) {
          if (d.getSeverity() == mlir::DiagnosticSeverity::Error)
            diagnostics.push_back(d.str());
          return mlir::success();
        }) {}

  Expected<OnnxImport> run();

  const onnx::ModelProto &model;
  const OnnxImportOptions &options;
  Graph g;
  std::map<std::string, ImportedValue> values;
  std::vector<std::string> diagnostics;
  mlir::ScopedDiagnosticHandler handler;
  llvm::StringMap<Converter> converters;
  std::vector<Tensor> shapeSources;
  /// The dim names of each graph input (Graph tags the arguments only when
  /// the function is finished).
  llvm::DenseMap<mlir::Value, std::vector<std::string>> inputDims;
  /// The `seed` input of a training import's dropouts, made by the first.
  std::optional<Tensor> seed;
  /// Dropouts so far: each draws its own stream (loom.dropout's offset).
  int64_t dropouts = 0;
  /// Elements of the constants folded so far (held as doubles while
  /// importing, and as data in the executable).
  int64_t foldedElements = 0;

private:
  Error addArguments(OnnxImport &result);
  Expected<Tensor> buildLoss(int64_t opset);
  Error convert(const onnx::NodeProto &node, int64_t index, int64_t opset);
  Expected<std::optional<onnx::NodeProto>>
  legacyBroadcast(const onnx::NodeProto &node, NodeContext &ctx);
};

} // namespace loom::onnx_import

//===----------------------------------------------------------------------===//
// NodeContext
//===----------------------------------------------------------------------===//

Graph &NodeContext::graph() { return importer.g; }

std::vector<Tensor> &NodeContext::shapeSources() {
  return importer.shapeSources;
}

std::optional<Tensor>
NodeContext::tensorWithSizes(const std::vector<SymbolicSize> &sizes) {
  for (auto it = importer.shapeSources.rbegin();
       it != importer.shapeSources.rend(); ++it)
    if (sizesOf(*it) == sizes)
      return *it;
  return std::nullopt;
}

std::optional<int64_t>
loom::onnx_import::elementCountWithin(llvm::ArrayRef<int64_t> shape) {
  int64_t count = 1;
  for (int64_t d : shape) {
    if (d == kDyn || d == 0) {
      if (d == 0)
        count = 0;
      continue;
    }
    if (d < 0 || (count != 0 && d > kMaxTensorElements / count))
      return std::nullopt;
    count *= d;
  }
  return count;
}

Error NodeContext::checkFits(mlir::TypeRange types) {
  for (mlir::Type type : types) {
    auto ranked = mlir::dyn_cast<mlir::RankedTensorType>(type);
    if (ranked && !elementCountWithin(ranked.getShape()))
      return error("its result " + formatShape(ranked.getShape()) +
                   " holds more than 2^40 elements, more than any memory");
  }
  return Error::success();
}

Expected<std::pair<Tensor, int64_t>> NodeContext::dropoutStream() {
  if (!importer.options.loss)
    return error("training_mode true in an import for inference (import it "
                 "with a loss to train it with dropout, or export the model "
                 "in eval mode)");
  if (!importer.seed)
    importer.seed = graph().input(abi::kSeed, tensorOf({}, builder().getI64Type()));
  return std::make_pair(*importer.seed, ++importer.dropouts);
}

const ImportedValue &NodeContext::input(int i) const {
  // An omitted input is known in no way: whatever reads it as a tensor, a
  // constant or sizes is told it is missing.
  static const ImportedValue missing;
  if (!hasInput(i))
    return missing;
  return importer.values.at(node.input(i));
}

Expected<Tensor> NodeContext::tensor(int i) {
  if (!hasInput(i))
    return error(llvm::formatv("input {0} is missing", i));
  const ImportedValue &v = input(i);
  if (v.tensor)
    return v.tensor;
  if (v.constant) {
    Expected<Tensor> t = constantTensor(*v.constant);
    if (!t)
      return t.takeError();
    // Later uses share the materialized constant.
    importer.values[node.input(i)].tensor = *t;
    return *t;
  }
  return error("input '" + node.input(i) +
               "' is a shape computed at run time (from a dynamic dim), "
               "used here as data");
}

Expected<std::vector<int64_t>> NodeContext::constantInts(int i,
                                                         StringRef what) {
  if (!hasInput(i))
    return error(what + " is missing");
  const ImportedValue &v = input(i);
  if (!v.constant ||
      (v.constant->kind != DType::I64 && v.constant->kind != DType::I32))
    return error(what + " ('" + node.input(i) +
                 "') must be integers known when importing");
  std::vector<int64_t> out;
  for (double x : v.constant->data)
    out.push_back(toInt64(x));
  return out;
}

Expected<std::vector<SymbolicSize>> NodeContext::sizes(int i, StringRef what) {
  if (!hasInput(i))
    return error(what + " is missing");
  const ImportedValue &v = input(i);
  if (v.sizes)
    return *v.sizes;
  Expected<std::vector<int64_t>> ints = constantInts(i, what);
  if (!ints)
    return ints.takeError();
  std::vector<SymbolicSize> out;
  for (int64_t x : *ints)
    out.push_back(SymbolicSize::of(x));
  return out;
}

const onnx::AttributeProto *NodeContext::attribute(StringRef name) const {
  for (const onnx::AttributeProto &a : node.attribute())
    if (a.name() == name)
      return &a;
  return nullptr;
}

int64_t NodeContext::intAttr(StringRef name, int64_t otherwise) const {
  const onnx::AttributeProto *a = attribute(name);
  return a ? a->i() : otherwise;
}

float NodeContext::floatAttr(StringRef name, float otherwise) const {
  const onnx::AttributeProto *a = attribute(name);
  return a ? a->f() : otherwise;
}

std::string NodeContext::stringAttr(StringRef name, StringRef otherwise) const {
  const onnx::AttributeProto *a = attribute(name);
  return a ? a->s() : otherwise.str();
}

std::optional<std::vector<int64_t>>
NodeContext::intsAttr(StringRef name) const {
  const onnx::AttributeProto *a = attribute(name);
  if (!a)
    return std::nullopt;
  return std::vector<int64_t>(a->ints().begin(), a->ints().end());
}

Error NodeContext::unsupportedAttribute(StringRef name,
                                        const llvm::Twine &value) {
  return error("attribute " + name + " = " + value + " is not supported");
}

void NodeContext::setOutput(int i, ImportedValue value) {
  if (i < node.output_size() && !node.output(i).empty())
    importer.values[node.output(i)] = std::move(value);
}

Error NodeContext::error(const llvm::Twine &message) const {
  std::string name = !node.name().empty() ? "'" + node.name() + "' "
                     : index >= 0         ? "#" + std::to_string(index) + " "
                                          : "";
  return importError(llvm::formatv("node {0}({1}, opset {2}): {3}", name,
                                   node.op_type(), opset, message.str()));
}

Expected<Tensor> NodeContext::constantTensor(const HostTensor &value) {
  return graph().constant(value.data, value.shape, elementType(value.kind));
}

mlir::Type NodeContext::elementType(DType kind) {
  mlir::Builder &b = builder();
  switch (kind) {
  case DType::F32:
    return b.getF32Type();
  case DType::F16:
    return b.getF16Type();
  case DType::BF16:
    return b.getBF16Type();
  case DType::F64:
    return b.getF64Type();
  case DType::I32:
    return b.getI32Type();
  case DType::I64:
    return b.getI64Type();
  case DType::I1:
    return b.getI1Type();
  }
  return b.getF32Type();
}

void NodeContext::startDiagnostics() { importer.diagnostics.clear(); }

std::string NodeContext::endDiagnostics() {
  std::string all;
  for (const std::string &d : importer.diagnostics)
    all += (all.empty() ? "" : "; ") + d;
  importer.diagnostics.clear();
  return all;
}

//===----------------------------------------------------------------------===//
// The walk
//===----------------------------------------------------------------------===//

/// The tensor type and dim names of graph input `info`; dims without a name
/// get one from the input, so that each stays its own size.
static Expected<std::pair<mlir::RankedTensorType, std::vector<std::string>>>
inputType(NodeContext &types, const onnx::ValueInfoProto &info) {
  if (!info.type().has_tensor_type())
    return importError("graph input '" + info.name() + "' is not a tensor");
  const onnx::TypeProto::Tensor &t = info.type().tensor_type();
  Expected<DType> kind = dtypeOfOnnx(t.elem_type());
  if (!kind)
    return importError("graph input '" + info.name() +
                       "': " + llvm::toString(kind.takeError()));
  if (!t.has_shape())
    return importError("graph input '" + info.name() +
                       "' has no shape (not even a rank)");
  std::vector<int64_t> shape;
  std::vector<std::string> names;
  for (int i = 0; i < t.shape().dim_size(); ++i) {
    const onnx::TensorShapeProto::Dimension &d = t.shape().dim(i);
    if (d.has_dim_value() && d.dim_value() < 0)
      return importError("graph input '" + info.name() + "': dim " +
                         std::to_string(i) + " is " +
                         std::to_string(d.dim_value()) +
                         " (a size is at least 0; a dim known only at run "
                         "time has a name or no value)");
    if (d.has_dim_value()) {
      shape.push_back(d.dim_value());
      names.push_back("");
    } else {
      shape.push_back(kDyn);
      names.push_back(d.has_dim_param() && !d.dim_param().empty()
                          ? d.dim_param()
                          : info.name() + "." + std::to_string(i));
    }
  }
  return std::make_pair(
      mlir::RankedTensorType::get(shape, types.elementType(*kind)), names);
}

Error Importer::addArguments(OnnxImport &result) {
  const onnx::GraphProto &graph = model.graph();
  onnx::NodeProto none;
  NodeContext types(*this, none, result.opset);
  std::set<std::string> initializers;
  for (const onnx::TensorProto &init : graph.initializer()) {
    if (init.name().empty())
      return importError("an initializer has no name");
    if (!initializers.insert(init.name()).second)
      return importError("initializer '" + init.name() + "' appears twice");
    Expected<HostTensor> value = hostTensorOf(init);
    if (!value)
      return importError("initializer '" + init.name() +
                         "': " + llvm::toString(value.takeError()));
    ImportedValue v;
    v.onnxType = init.data_type();
    bool isFloat = value->kind == DType::F32 || value->kind == DType::F16 ||
                   value->kind == DType::BF16 || value->kind == DType::F64;
    if (isFloat) {
      // A parameter: trained, saved and loaded under its ONNX name.
      v.tensor =
          g.param(init.name(), value->shape, types.elementType(value->kind));
      result.parameters[init.name()] = std::move(*value);
    } else {
      v.constant = std::move(*value);
    }
    values[init.name()] = std::move(v);
  }
  size_t position = 0;
  for (const onnx::ValueInfoProto &info : graph.input()) {
    // Before IR version 4 every initializer was also listed as an input.
    if (initializers.count(info.name()))
      continue;
    if (values.count(info.name()))
      return importError("graph input '" + info.name() + "' appears twice");
    size_t at = position++;
    if (at < options.inputValues.size() && options.inputValues[at]) {
      values[info.name()] = constantValue(*options.inputValues[at]);
      continue;
    }
    auto typed = inputType(types, info);
    if (!typed)
      return typed.takeError();
    if (!elementCountWithin(typed->first.getShape()))
      return importError("graph input '" + info.name() + "' of shape " +
                         formatShape(typed->first.getShape()) +
                         " holds more than 2^40 elements, more than any "
                         "memory");
    std::vector<StringRef> dims;
    if (llvm::any_of(typed->second,
                     [](const std::string &n) { return !n.empty(); }))
      dims.assign(typed->second.begin(), typed->second.end());
    ImportedValue v;
    v.tensor = g.input(info.name(), typed->first, dims);
    inputDims[v.tensor.value()] = typed->second;
    values[info.name()] = std::move(v);
    result.inputs.push_back(info.name());
  }
  return Error::success();
}

/// The static shape of `v` where it is known (dynamic dims as kDyn).
static std::optional<std::vector<int64_t>> shapeOf(const ImportedValue &v) {
  if (v.constant)
    return v.constant->shape;
  if (v.sizes)
    return v.sizesAreScalar ? std::vector<int64_t>{}
                            : std::vector<int64_t>{int64_t(v.sizes->size())};
  if (v.tensor)
    return std::vector<int64_t>(v.tensor.shape().begin(),
                                v.tensor.shape().end());
  return std::nullopt;
}

/// Opsets before 7 broadcast a binary op's inputs only when it says
/// `broadcast = 1`, and then align the second at `axis` of the first rather
/// than at its end. Here the second input gets trailing 1s, so that the
/// NumPy rules the converters apply give that alignment (B [3] at axis 0 of
/// A [3, 4] becomes [3, 1]); the node is returned reading it. Nothing when
/// the node is not such an op.
Expected<std::optional<onnx::NodeProto>>
Importer::legacyBroadcast(const onnx::NodeProto &node, NodeContext &ctx) {
  static const llvm::StringSet<> legacy = {"Add",   "Sub",  "Mul", "Div",
                                           "Pow",   "And",  "Or",  "Xor",
                                           "Equal", "Greater", "Less"};
  if (ctx.opsetVersion() >= 7 || !legacy.contains(node.op_type()) ||
      node.input_size() != 2 || node.input(0).empty() || node.input(1).empty())
    return std::nullopt;
  const ImportedValue &a = values.at(node.input(0));
  const ImportedValue &b = values.at(node.input(1));
  std::optional<std::vector<int64_t>> sa = shapeOf(a), sb = shapeOf(b);
  if (!sa || !sb)
    return std::nullopt;
  int64_t ra = int64_t(sa->size()), rb = int64_t(sb->size());
  if (ctx.intAttr("broadcast", 0) == 0) {
    bool same = ra == rb;
    for (int64_t i = 0; same && i < ra; ++i)
      same = (*sa)[i] == (*sb)[i] || (*sa)[i] == kDyn || (*sb)[i] == kDyn;
    if (!same)
      return ctx.error("inputs of shapes " + formatShape(*sa) + " and " +
                       formatShape(*sb) + " without broadcast = 1 (before "
                       "opset 7 such an op broadcasts only when asked)");
    return std::nullopt;
  }
  int64_t axis = ctx.intAttr("axis", ra - rb);
  int64_t trailing = ra - axis - rb;
  if (axis < 0 || trailing < 0)
    return ctx.error("axis " + std::to_string(axis) + " cannot place " +
                     formatShape(*sb) + " within " + formatShape(*sa));
  if (trailing == 0)
    return std::nullopt;
  ImportedValue aligned;
  if (b.constant) {
    aligned = b;
    aligned.constant->shape.insert(aligned.constant->shape.end(), trailing, 1);
  } else if (b.tensor) {
    llvm::SmallVector<int64_t> ones;
    for (int64_t i = 0; i < trailing; ++i)
      ones.push_back(rb + i);
    Expected<Tensor> expanded =
        ctx.create<ExpandDimsOp>(b.tensor.value(), ones);
    if (!expanded)
      return expanded.takeError();
    aligned.tensor = *expanded;
  } else {
    return ctx.error("broadcasts sizes known only at run time at an axis");
  }
  onnx::NodeProto rewritten = node;
  std::string name = node.input(1) + "#aligned@" + std::to_string(axis);
  rewritten.set_input(1, name);
  values[name] = std::move(aligned);
  return std::optional<onnx::NodeProto>(std::move(rewritten));
}

/// Every name the import carries into the IR and the executable (values,
/// nodes, dims) must be valid UTF-8: the executable's symbols are protobuf
/// strings, which would fail to parse back.
static Error checkNamesAreUtf8(const onnx::GraphProto &graph) {
  auto check = [](const std::string &name, llvm::StringRef what) -> Error {
    if (llvm::json::isUTF8(name))
      return Error::success();
    return importError(what + " '" + llvm::json::fixUTF8(name) +
                       "' is not valid UTF-8");
  };
  auto checkValue = [&](const onnx::ValueInfoProto &info,
                        llvm::StringRef what) -> Error {
    if (Error e = check(info.name(), what))
      return e;
    if (info.type().has_tensor_type() &&
        info.type().tensor_type().has_shape())
      for (const auto &d : info.type().tensor_type().shape().dim())
        if (Error e = check(d.dim_param(), "the dim name of '" +
                                               llvm::json::fixUTF8(info.name()) +
                                               "'"))
          return e;
    return Error::success();
  };
  for (const onnx::ValueInfoProto &info : graph.input())
    if (Error e = checkValue(info, "graph input"))
      return e;
  for (const onnx::ValueInfoProto &info : graph.output())
    if (Error e = checkValue(info, "graph output"))
      return e;
  for (const onnx::TensorProto &t : graph.initializer())
    if (Error e = check(t.name(), "initializer"))
      return e;
  for (const onnx::NodeProto &node : graph.node()) {
    if (Error e = check(node.name(), "node"))
      return e;
    if (Error e = check(node.op_type(), "op type"))
      return e;
    for (const std::string &name : node.input())
      if (Error e = check(name, "node input"))
        return e;
    for (const std::string &name : node.output())
      if (Error e = check(name, "node output"))
        return e;
  }
  return Error::success();
}

Error Importer::convert(const onnx::NodeProto &node, int64_t index,
                        int64_t opset) {
  NodeContext ctx(*this, node, opset, index);
  if (!node.domain().empty() && node.domain() != "ai.onnx")
    return ctx.error("the domain '" + node.domain() +
                     "' is not ONNX's default one");
  for (int i = 0; i < node.input_size(); ++i)
    if (!node.input(i).empty() && !values.count(node.input(i)))
      return ctx.error("input '" + node.input(i) +
                       "' is not produced by an earlier node, an input or an "
                       "initializer");
  auto it = converters.find(node.op_type());
  if (it == converters.end())
    return ctx.error("Loom does not import " + node.op_type());
  std::string scope = node.name().empty()
                          ? node.op_type() + "." + std::to_string(index)
                          : node.name();
  Graph::Scope named(g, scope);
  Expected<std::optional<onnx::NodeProto>> aligned = legacyBroadcast(node, ctx);
  if (!aligned)
    return aligned.takeError();
  if (*aligned) {
    NodeContext alignedCtx(*this, **aligned, opset, index);
    if (Error e = it->second(alignedCtx))
      return e;
  } else if (Error e = it->second(ctx)) {
    return e;
  }
  // Folding is bounded as a whole, not only per constant: a few hundred
  // bytes of ConstantOfShape and Add nodes would otherwise fold into
  // gigabytes while importing and compiling.
  for (int i = 0; i < node.output_size(); ++i) {
    auto out = values.find(node.output(i));
    if (out != values.end() && out->second.constant)
      foldedElements += out->second.constant->numel();
  }
  if (foldedElements > kMaxFoldedElements)
    return ctx.error("the constants folded so far hold more than 2^26 "
                     "elements; Loom folds constants while importing, and a "
                     "model's should be far smaller");
  // An output passed through from an omitted input holds nothing.
  for (int i = 0; i < node.output_size(); ++i) {
    auto out = values.find(node.output(i));
    if (out != values.end() && !out->second.tensor && !out->second.known())
      return ctx.error("input " + std::to_string(i) +
                       " is missing, so output '" + node.output(i) +
                       "' has no value");
  }
  return Error::success();
}

/// The loss of options.loss (OnnxImporter.h) on the graph as converted.
Expected<Tensor> Importer::buildLoss(int64_t opset) {
  const OnnxLoss &loss = *options.loss;
  auto it = values.find(loss.output);
  if (it == values.end())
    return importError("the loss's output '" + loss.output +
                       "' is produced by no node");
  onnx::NodeProto node;
  node.set_op_type("loss");
  node.set_name("loss");
  node.add_input(loss.output);
  NodeContext ctx(*this, node, opset);
  Graph::Scope scope(g, "loss");
  Expected<Tensor> logits = ctx.tensor(0);
  if (!logits)
    return logits.takeError();
  if (logits->rank() < 1 || !mlir::isa<mlir::FloatType>(logits->elementType()))
    return ctx.error("the loss's output '" + loss.output +
                     "' is not a float tensor [..., classes]");
  // The targets have the output's dims but the last, named as the inputs
  // that give them are, so that memory planning bounds them alike.
  std::vector<int64_t> shape;
  std::vector<std::string> names;
  bool dynamic = false;
  for (int64_t d = 0; d + 1 < logits->rank(); ++d) {
    shape.push_back(logits->dim(d));
    names.push_back("");
    if (logits->dim(d) != kDyn)
      continue;
    dynamic = true;
    names.back() = std::string(abi::kTargets) + "." + std::to_string(d);
    auto [source, dim] = SymbolicSize::dimOf(logits->value(), d).dims[0];
    auto it = inputDims.find(source);
    if (it != inputDims.end() && dim < int64_t(it->second.size()) &&
        !it->second[dim].empty())
      names.back() = it->second[dim];
  }
  std::vector<StringRef> dimNames;
  if (dynamic)
    dimNames.assign(names.begin(), names.end());
  Tensor targets = g.input(
      abi::kTargets, tensorOf(shape, ctx.builder().getI64Type()), dimNames);
  Expected<Tensor> losses = ctx.create<CrossEntropyOp>(
      logits->value(), targets.value(),
      ctx.builder().getF64FloatAttr(loss.labelSmoothing),
      ctx.builder().getI64IntegerAttr(loss.ignoreIndex));
  if (!losses)
    return losses.takeError();
  // The mean over the targets that count, as cross_entropy's "mean"
  // reduction takes it; max(count, 1) keeps a batch of ignored targets
  // finite.
  Expected<Tensor> ignored = ctx.constantTensor(
      HostTensor::scalar(double(loss.ignoreIndex), DType::I64));
  if (!ignored)
    return ignored.takeError();
  Expected<Tensor> real = ctx.create<CompareOp>(
      ComparePredicate::ne, targets.value(), ignored->value());
  if (!real)
    return real.takeError();
  Tensor realF32(ctx.builder()
                     .create<CastOp>(g.location(),
                                     tensorOf(real->shape(), g.f32()),
                                     real->value())
                     .getResult(),
                 &g);
  llvm::SmallVector<int64_t> all(realF32.rank());
  std::iota(all.begin(), all.end(), 0);
  Expected<Tensor> count = ctx.create<ReduceSumOp>(realF32.value(), all, false);
  Expected<Tensor> sum = ctx.create<ReduceSumOp>(losses->value(), all, false);
  Expected<Tensor> one =
      ctx.constantTensor(HostTensor::scalar(1.0, DType::F32));
  if (!count || !sum || !one)
    return !count ? count.takeError()
           : !sum ? sum.takeError()
                  : one.takeError();
  count->value().getDefiningOp()->setAttr(kTokenCountAttr,
                                          mlir::UnitAttr::get(g.context()));
  Expected<Tensor> denominator =
      ctx.create<MaximumOp>(count->value(), one->value());
  if (!denominator)
    return denominator.takeError();
  return ctx.create<DivOp>(sum->value(), denominator->value());
}

Expected<OnnxImport> Importer::run() {
  OnnxImport result;
  result.opset = -1;
  for (const onnx::OperatorSetIdProto &set : model.opset_import())
    if (set.domain().empty() || set.domain() == "ai.onnx")
      result.opset = set.version();
  if (result.opset < 0)
    return importError("the model imports no opset of ONNX's default domain");
  if (!model.has_graph())
    return importError("the model has no graph");
  if (Error e = checkNamesAreUtf8(model.graph()))
    return std::move(e);
  addElementwiseConverters(converters);
  addShapeConverters(converters);
  addIndexConverters(converters);
  addNNConverters(converters);
  addMaskConverters(converters);
  if (Error e = addArguments(result))
    return std::move(e);
  const onnx::GraphProto &graph = model.graph();
  for (int i = 0; i < graph.node_size(); ++i)
    if (Error e = convert(graph.node(i), i, result.opset))
      return std::move(e);

  std::vector<std::pair<std::string, Tensor>> outputs;
  onnx::NodeProto none;
  if (options.loss) {
    Expected<Tensor> loss = buildLoss(result.opset);
    if (!loss)
      return loss.takeError();
    outputs.push_back({abi::kLossOutput, *loss});
    result.inputs.push_back(abi::kTargets);
    if (seed)
      result.inputs.push_back(abi::kSeed);
    result.outputs.push_back(abi::kLossOutput);
    g.setDifferentiable();
  }
  for (const onnx::ValueInfoProto &info : graph.output()) {
    if (options.loss)
      break;
    auto it = values.find(info.name());
    if (it == values.end())
      return importError("graph output '" + info.name() +
                         "' is produced by no node");
    if (it->second.sizes && !it->second.tensor)
      return importError("graph output '" + info.name() +
                         "' is a shape computed at run time (from a dynamic "
                         "dim), which Loom does not return as data");
    none.clear_input();
    none.add_input(info.name());
    none.set_op_type("output");
    NodeContext ctx(*this, none, result.opset);
    Expected<Tensor> t = ctx.tensor(0);
    if (!t)
      return t.takeError();
    outputs.push_back({info.name(), *t});
    result.outputs.push_back(info.name());
  }
  if (outputs.empty())
    return importError("the graph has no outputs");
  mlir::func::FuncOp func = g.finish(outputs);
  // What folding left unused (the transposes folded into matmuls, the
  // constants of shape arithmetic) goes, last use first.
  llvm::SmallVector<mlir::Operation *> ops;
  func.walk([&](mlir::Operation *op) { ops.push_back(op); });
  for (mlir::Operation *op : llvm::reverse(ops))
    if (op != func && mlir::isOpTriviallyDead(op))
      op->erase();
  diagnostics.clear();
  if (mlir::failed(mlir::verify(func))) {
    std::string all;
    for (const std::string &d : diagnostics)
      all += (all.empty() ? "" : "; ") + d;
    return importError("the imported function does not verify: " + all);
  }
  return result;
}

std::vector<std::string> loom::onnxImportedOps() {
  llvm::StringMap<Converter> converters;
  addElementwiseConverters(converters);
  addShapeConverters(converters);
  addIndexConverters(converters);
  addNNConverters(converters);
  addMaskConverters(converters);
  std::vector<std::string> ops;
  for (const auto &entry : converters)
    ops.push_back(entry.getKey().str());
  llvm::sort(ops);
  return ops;
}

Expected<OnnxImport> loom::importOnnxModel(mlir::ModuleOp module,
                                           const onnx::ModelProto &model,
                                           const OnnxImportOptions &options) {
  if (module.lookupSymbol(options.function))
    return importError("the module already has a function @" +
                       options.function);
  module.getContext()->loadDialect<LoomDialect, mlir::func::FuncDialect>();
  Importer importer(module, model, options);
  Expected<OnnxImport> result = importer.run();
  if (!result) {
    // Leave the module as it was.
    if (mlir::Operation *f = module.lookupSymbol(options.function))
      f->erase();
  }
  return result;
}

Expected<OnnxImport> loom::importOnnxFile(mlir::ModuleOp module, StringRef path,
                                          const OnnxImportOptions &options) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return importError("cannot read '" + path +
                       "': " + buffer.getError().message());
  onnx::ModelProto model;
  if ((*buffer)->getBufferSize() > size_t(INT32_MAX) ||
      !model.ParseFromArray((*buffer)->getBufferStart(),
                            static_cast<int>((*buffer)->getBufferSize())))
    return importError("'" + path +
                       "' is not an ONNX model (its protobuf "
                       "does not parse)");
  Expected<OnnxImport> result = importOnnxModel(module, model, options);
  if (!result)
    return importError(path + ": " + llvm::toString(result.takeError()));
  return result;
}
