//===- Graph.h - The C++ builder API for loom functions ---------*- C++ -*-===//
//
// A model is written as ordinary C++ against `Graph` and `Tensor`:
//
//   Graph g(module, "loss");
//   Tensor x = g.input("x", tensorOf({kDyn, 16}, g.f32()));
//   Tensor w = g.param("linear.weight", {8, 16});
//   Tensor y = relu(matmul(x, w, /*transposeLhs=*/false,
//   /*transposeRhs=*/true)); g.finish({{"y", y * 2.0}});
//
// Each Graph builds one `func.func`. Parameters are arguments tagged
// `loom.param = name`; asking for a name twice returns the same argument, so
// weight sharing (tied embeddings) is just using one name twice. Parameters
// come first, in first-use order, then inputs (`loom.input`) in the order
// they were declared, whatever order the model asks for them in.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_FRONTEND_GRAPH_H
#define LOOM_FRONTEND_GRAPH_H

#include "ir/LoomDialect.h"
#include "ir/ShapeUtils.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringMap.h"

#include <string>
#include <utility>
#include <vector>

namespace loom {

class Graph;

/// A dynamic dim (`?`) in the shapes given to `Graph`.
constexpr int64_t kDyn = mlir::ShapedType::kDynamic;

/// A value of a Graph's function: an mlir::Value of ranked tensor type plus
/// the Graph that builds ops on it.
class Tensor {
public:
  Tensor() = default;
  Tensor(mlir::Value value, Graph *graph) : v(value), g(graph) {}

  mlir::Value value() const { return v; }
  Graph &graph() const { return *g; }
  mlir::RankedTensorType type() const;
  mlir::Type elementType() const { return type().getElementType(); }
  llvm::ArrayRef<int64_t> shape() const { return type().getShape(); }
  int64_t rank() const { return type().getRank(); }
  /// The size of dim `i` (negative counts from the end); kDyn when dynamic.
  int64_t dim(int64_t i) const;

  explicit operator bool() const { return static_cast<bool>(v); }

private:
  mlir::Value v;
  Graph *g = nullptr;
};

class Graph {
public:
  /// Starts function `name` at the end of `module`.
  Graph(mlir::ModuleOp module, llvm::StringRef name);
  Graph(const Graph &) = delete;
  Graph &operator=(const Graph &) = delete;

  mlir::MLIRContext *context() { return builder.getContext(); }
  mlir::OpBuilder &opBuilder() { return builder; }
  mlir::func::FuncOp function() { return func; }
  mlir::Type f32() { return builder.getF32Type(); }
  mlir::Type i32() { return builder.getI32Type(); }
  mlir::Type i64() { return builder.getI64Type(); }

  /// The parameter `name` of static `shape` (f32 unless told otherwise). The
  /// first call adds the argument; later calls check the shape and return it.
  Tensor param(llvm::StringRef name, llvm::ArrayRef<int64_t> shape,
               mlir::Type element = {});
  /// A new input argument `name` of `type`. `dims`, when given, names each
  /// dim (`loom.dims`, "" for a static one) so that memory planning can bound
  /// the dynamic ones: equal names are equal sizes.
  Tensor input(llvm::StringRef name, mlir::RankedTensorType type,
               llvm::ArrayRef<llvm::StringRef> dims = {});

  /// A rank-0 constant of `element` type.
  Tensor scalar(double value, mlir::Type element);
  /// A constant of `shape` and `element` type holding `values` (row-major).
  Tensor constant(llvm::ArrayRef<double> values, llvm::ArrayRef<int64_t> shape,
                  mlir::Type element);

  /// Marks the function as a loss for `loom-autodiff`.
  void setDifferentiable();

  /// Returns `outputs` (tagged `loom.output = name`) and fixes the function
  /// type. The Graph must not build anything afterwards.
  mlir::func::FuncOp
  finish(llvm::ArrayRef<std::pair<std::string, Tensor>> outputs);

  /// Creates op `OpTy` at the current location and wraps its single result.
  template <typename OpTy, typename... Args> Tensor create(Args &&...args) {
    auto op = builder.create<OpTy>(location(), std::forward<Args>(args)...);
    return Tensor(op->getResult(0), this);
  }

  /// The location of new ops: the name of the innermost scope, such as
  /// "encoder.layers.0.self_attn", so a diagnostic or an interpreter error
  /// points at the module that built the op.
  mlir::Location location();

  /// Names the ops built while it lives (see `location`). Modules know their
  /// full dotted names, so scopes do not join.
  class Scope {
  public:
    Scope(Graph &graph, llvm::StringRef name);
    ~Scope();
    Scope(const Scope &) = delete;
    Scope &operator=(const Scope &) = delete;

  private:
    Graph &graph;
  };

private:
  mlir::OpBuilder builder;
  mlir::func::FuncOp func;
  mlir::Block *entry;
  /// Argument index of each parameter name; parameters occupy the first
  /// `numParams` arguments.
  llvm::StringMap<unsigned> paramIndex;
  unsigned numParams = 0;
  /// The attributes (loom.param / loom.input, loom.dims) of each argument,
  /// in order.
  std::vector<llvm::SmallVector<mlir::NamedAttribute, 2>> argTags;
  std::vector<std::string> scopes;
  bool finished = false;
};

//===----------------------------------------------------------------------===//
// Arithmetic: tensor-tensor with NumPy broadcasting, and tensor-scalar with
// the scalar made a constant of the tensor's element type.
//===----------------------------------------------------------------------===//

Tensor operator+(Tensor a, Tensor b);
Tensor operator-(Tensor a, Tensor b);
Tensor operator*(Tensor a, Tensor b);
Tensor operator/(Tensor a, Tensor b);
Tensor operator+(Tensor a, double b);
Tensor operator-(Tensor a, double b);
Tensor operator*(Tensor a, double b);
Tensor operator/(Tensor a, double b);
Tensor operator+(double a, Tensor b);
Tensor operator-(double a, Tensor b);
Tensor operator*(double a, Tensor b);
Tensor operator/(double a, Tensor b);
Tensor operator-(Tensor a);

/// A rank-0 constant of `like`'s element type.
Tensor scalarLike(Tensor like, double value);

Tensor maximum(Tensor a, Tensor b);
Tensor minimum(Tensor a, Tensor b);
Tensor pow(Tensor a, Tensor b);
Tensor compare(ComparePredicate predicate, Tensor a, Tensor b);
Tensor select(Tensor cond, Tensor onTrue, Tensor onFalse);
/// Element type conversion (float to integer truncates; to i1 is `!= 0`).
Tensor castTo(Tensor x, mlir::Type element);

Tensor abs(Tensor x);
Tensor exp(Tensor x);
Tensor log(Tensor x);
Tensor sqrt(Tensor x);
Tensor rsqrt(Tensor x);
Tensor tanh(Tensor x);
Tensor sigmoid(Tensor x);
Tensor relu(Tensor x);
Tensor gelu(Tensor x);
Tensor erf(Tensor x);
Tensor sin(Tensor x);
Tensor cos(Tensor x);

//===----------------------------------------------------------------------===//
// Contractions, reductions and neural-network ops
//===----------------------------------------------------------------------===//

Tensor matmul(Tensor a, Tensor b, bool transposeA = false,
              bool transposeB = false);
Tensor reduceSum(Tensor x, llvm::ArrayRef<int64_t> dims, bool keepDims = false);
Tensor reduceMean(Tensor x, llvm::ArrayRef<int64_t> dims,
                  bool keepDims = false);
Tensor reduceMax(Tensor x, llvm::ArrayRef<int64_t> dims, bool keepDims = false);
/// Sum over every dim: a rank-0 tensor.
Tensor sumAll(Tensor x);

/// Softmax along `axis` (negative counts from the end).
Tensor softmax(Tensor x, int64_t axis = -1);
Tensor logSoftmax(Tensor x, int64_t axis = -1);
Tensor layerNorm(Tensor x, Tensor gamma, Tensor beta, double epsilon);
/// Inverted dropout of site `offset` with the step's `seed` (tensor<i64>).
Tensor dropout(Tensor x, Tensor seed, double rate, int64_t offset);
/// Additive [n, n] causal mask, n = like.shape[dim], of `element` type.
Tensor causalMask(Tensor like, int64_t dim, mlir::Type element);
/// Additive [B, 1, 1, S] key-padding mask from ids [B, S].
Tensor paddingMask(Tensor ids, int64_t pad, mlir::Type element);
/// Per-position losses [...] from logits [..., C] and targets [...].
Tensor crossEntropy(Tensor logits, Tensor targets, double labelSmoothing,
                    int64_t ignoreIndex);
Tensor oneHot(Tensor ids, int64_t depth, mlir::Type element);

//===----------------------------------------------------------------------===//
// Shapes and data movement
//===----------------------------------------------------------------------===//

/// 0 copies the input's dim at that index; -1 infers one dim.
Tensor reshape(Tensor x, llvm::ArrayRef<int64_t> shape);
Tensor reshapeAs(Tensor x, Tensor like);
Tensor expandDims(Tensor x, llvm::ArrayRef<int64_t> dims);
Tensor transpose(Tensor x, llvm::ArrayRef<int64_t> perm);
/// Elements [start, end) of `dim`, with `loom.slice`'s conventions: negative
/// start and end <= 0 count from the end (x[:, 1:] is start 1, end 0).
Tensor slice(Tensor x, int64_t dim, int64_t start, int64_t end);
Tensor concat(llvm::ArrayRef<Tensor> inputs, int64_t dim);
Tensor broadcastAs(Tensor x, Tensor like);
/// Rows of `table` picked by `ids`.
Tensor gather(Tensor table, Tensor ids);
/// [0, 1, ..., n-1] with n = like.shape[dim], of `element` type.
Tensor iota(Tensor like, int64_t dim, mlir::Type element);

} // namespace loom

#endif // LOOM_FRONTEND_GRAPH_H
