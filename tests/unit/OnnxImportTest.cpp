//===- OnnxImportTest.cpp - The ONNX importer on hand-built graphs --------===//
//
// Graphs built here with onnx.proto's classes: the shape arithmetic an
// exporter writes (Shape, Gather, Concat into Reshape) must become loom
// reshapes that copy and infer dims and compute what the graph means at sizes
// the import never saw; initializers must become named parameters or folded
// constants; and a malformed or unsupported graph must be an error that says
// where, leaving the module as it was.
//
//===----------------------------------------------------------------------===//

#include "frontend/onnx/OnnxImporter.h"
#include "ir/Interpreter.h"

#include "TestUtil.h"

#include "onnx/onnx.pb.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Verifier.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <numeric>

using namespace loom;

namespace {

/// A graph under construction, with opset 17 of the default domain.
class GraphBuilder {
public:
  GraphBuilder() {
    auto *set = model.add_opset_import();
    set->set_domain("");
    set->set_version(17);
    model.set_ir_version(8);
  }

  onnx::GraphProto &graph() { return *model.mutable_graph(); }

  /// A float input of `dims` (a name is a dim_param, "" a dynamic dim
  /// without one, a number a fixed size).
  void input(const std::string &name, const std::vector<std::string> &dims,
             int32_t type = onnx::TensorProto::FLOAT) {
    auto *info = graph().add_input();
    info->set_name(name);
    auto *tensor = info->mutable_type()->mutable_tensor_type();
    tensor->set_elem_type(type);
    auto *shape = tensor->mutable_shape();
    for (const std::string &d : dims) {
      auto *dim = shape->add_dim();
      if (!d.empty() && std::isdigit(static_cast<unsigned char>(d[0])))
        dim->set_dim_value(std::stoll(d));
      else if (!d.empty())
        dim->set_dim_param(d);
    }
  }

  void output(const std::string &name) { graph().add_output()->set_name(name); }

  onnx::NodeProto &node(const std::string &op,
                        const std::vector<std::string> &inputs,
                        const std::vector<std::string> &outputs) {
    auto *n = graph().add_node();
    n->set_op_type(op);
    n->set_name(op + "_" + std::to_string(graph().node_size()));
    for (const std::string &i : inputs)
      n->add_input(i);
    for (const std::string &o : outputs)
      n->add_output(o);
    return *n;
  }

  /// An int64 initializer.
  void ints(const std::string &name, const std::vector<int64_t> &values,
            bool scalar = false) {
    auto *t = graph().add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    if (!scalar)
      t->add_dims(int64_t(values.size()));
    for (int64_t v : values)
      t->add_int64_data(v);
  }

  /// A float initializer of `dims`, its values 0.5, 1.5, ...
  void floats(const std::string &name, const std::vector<int64_t> &dims) {
    auto *t = graph().add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    int64_t count = 1;
    for (int64_t d : dims) {
      t->add_dims(d);
      count *= d;
    }
    for (int64_t i = 0; i < count; ++i)
      t->add_float_data(float(i) + 0.5f);
  }

  onnx::ModelProto model;
};

void setInt(onnx::NodeProto &node, const std::string &name, int64_t value) {
  auto *a = node.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(value);
}

void setInts(onnx::NodeProto &node, const std::string &name,
             const std::vector<int64_t> &values) {
  auto *a = node.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t v : values)
    a->add_ints(v);
}

class OnnxImportTest : public ::testing::Test {
protected:
  void SetUp() override {
    ctx = test::makeContext();
    module = mlir::ModuleOp::create(mlir::UnknownLoc::get(ctx.get()));
  }

  llvm::Expected<OnnxImport> import(const GraphBuilder &g) {
    return importOnnxModel(*module, g.model, OnnxImportOptions());
  }

  std::string text() {
    std::string s;
    llvm::raw_string_ostream os(s);
    module->print(os);
    return s;
  }

  std::unique_ptr<mlir::MLIRContext> ctx;
  mlir::OwningOpRef<mlir::ModuleOp> module;
};

HostTensor iotaTensor(std::vector<int64_t> shape) {
  HostTensor t(shape, DType::F32);
  std::iota(t.data.begin(), t.data.end(), 0.0);
  return t;
}

// x [batch, len, 8] reshaped to [batch, -1, 2, 4] with batch read off
// Shape(x): the reshape copies dim 0 and infers dim 1, and runs at sizes the
// import never saw.
TEST_F(OnnxImportTest, ShapeArithmeticBecomesAReshapeThatCopiesAndInfers) {
  GraphBuilder g;
  g.input("x", {"batch", "len", "8"});
  g.ints("zero", {0}, /*scalar=*/true);
  g.ints("axes", {0});
  g.ints("rest", {-1, 2, 4});
  g.node("Shape", {"x"}, {"s"});
  g.node("Gather", {"s", "zero"}, {"b"});
  g.node("Unsqueeze", {"b", "axes"}, {"b1"});
  setInt(g.node("Concat", {"b1", "rest"}, {"target"}), "axis", 0);
  g.node("Reshape", {"x", "target"}, {"y"});
  g.output("y");
  llvm::Expected<OnnxImport> imported = import(g);
  ASSERT_TRUE(bool(imported)) << llvm::toString(imported.takeError());
  std::string ir = text();
  EXPECT_NE(ir.find("loom.reshape %arg0 [0, -1, 2, 4]"), std::string::npos)
      << ir;
  EXPECT_EQ(ir.find("loom.constant"), std::string::npos)
      << "the shape arithmetic should fold away:\n"
      << ir;
  EXPECT_NE(ir.find("loom.dims = [\"batch\", \"len\", \"\"]"),
            std::string::npos)
      << ir;
  EXPECT_EQ(imported->inputs, std::vector<std::string>{"x"});
  EXPECT_EQ(imported->outputs, std::vector<std::string>{"y"});
  EXPECT_EQ(imported->opset, 17);

  Interpreter interpreter(*module);
  HostTensor x = iotaTensor({3, 5, 8});
  auto out = interpreter.run("forward", {x});
  ASSERT_TRUE(bool(out)) << llvm::toString(out.takeError());
  EXPECT_EQ((*out)[0].shape, (std::vector<int64_t>{3, 5, 2, 4}));
  EXPECT_EQ((*out)[0].data, x.data);
}

// [len, batch, 8] flattened to [len * batch, 8] and split back with sizes
// read off it: two run-time dims in one target, which takes the shape of
// the tensor they were read from.
TEST_F(OnnxImportTest, AFlattenedDimSplitsBackToTheShapeItCameFrom) {
  GraphBuilder g;
  g.input("x", {"batch", "len", "8"});
  g.ints("zero", {0}, true);
  g.ints("one", {1}, true);
  g.ints("axes", {0});
  g.ints("eight", {8});
  g.ints("minus", {-1});
  auto &t = g.node("Transpose", {"x"}, {"xt"});
  setInts(t, "perm", {1, 0, 2});
  g.node("Shape", {"xt"}, {"s"});
  g.node("Gather", {"s", "zero"}, {"len"});
  g.node("Gather", {"s", "one"}, {"batch"});
  g.node("Unsqueeze", {"len", "axes"}, {"len1"});
  g.node("Unsqueeze", {"batch", "axes"}, {"batch1"});
  auto concat = [&](const std::vector<std::string> &in,
                    const std::string &out) {
    setInt(g.node("Concat", in, {out}), "axis", 0);
  };
  concat({"minus", "eight"}, "flat_shape");
  concat({"len1", "batch1", "eight"}, "split_shape");
  g.node("Reshape", {"xt", "flat_shape"}, {"flat"});
  g.node("Relu", {"flat"}, {"flat_relu"});
  g.node("Reshape", {"flat_relu", "split_shape"}, {"y"});
  g.output("y");
  llvm::Expected<OnnxImport> imported = import(g);
  ASSERT_TRUE(bool(imported)) << llvm::toString(imported.takeError());
  std::string ir = text();
  EXPECT_NE(ir.find("loom.reshape_as"), std::string::npos) << ir;

  Interpreter interpreter(*module);
  HostTensor x = iotaTensor({2, 3, 8});
  auto out = interpreter.run("forward", {x});
  ASSERT_TRUE(bool(out)) << llvm::toString(out.takeError());
  ASSERT_EQ((*out)[0].shape, (std::vector<int64_t>{3, 2, 8}));
  for (int64_t l = 0; l < 3; ++l)
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t d = 0; d < 8; ++d)
        EXPECT_EQ((*out)[0].data[(l * 2 + b) * 8 + d],
                  x.data[(b * 3 + l) * 8 + d]);
}

// A table cut to a sequence's run-time length (positional encodings:
// `pe[:x.shape[1]]`) is its first rows, gathered at the positions.
TEST_F(OnnxImportTest, ASliceToARunTimeLengthGathersThePrefix) {
  GraphBuilder g;
  g.input("x", {"batch", "len", "4"});
  g.floats("pe", {10, 4});
  g.ints("one", {1}, true);
  g.ints("axes", {0});
  g.ints("zero", {0});
  g.node("Shape", {"x"}, {"s"});
  g.node("Gather", {"s", "one"}, {"len"});
  g.node("Unsqueeze", {"len", "axes"}, {"end"});
  g.node("Slice", {"pe", "zero", "end", "axes"}, {"prefix"});
  g.node("Add", {"x", "prefix"}, {"y"});
  g.output("y");
  llvm::Expected<OnnxImport> imported = import(g);
  ASSERT_TRUE(bool(imported)) << llvm::toString(imported.takeError());
  std::string ir = text();
  EXPECT_NE(ir.find("loom.iota"), std::string::npos) << ir;
  EXPECT_NE(ir.find("loom.gather"), std::string::npos) << ir;

  Interpreter interpreter(*module);
  HostTensor x = iotaTensor({2, 3, 4});
  auto out = interpreter.run("forward", {imported->parameters.at("pe"), x});
  ASSERT_TRUE(bool(out)) << llvm::toString(out.takeError());
  ASSERT_EQ((*out)[0].shape, (std::vector<int64_t>{2, 3, 4}));
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t t = 0; t < 3; ++t)
      for (int64_t d = 0; d < 4; ++d)
        EXPECT_EQ((*out)[0].data[(b * 3 + t) * 4 + d],
                  x.data[(b * 3 + t) * 4 + d] + (t * 4 + d + 0.5));
}

// Float initializers are parameters under their names, with their values;
// integer ones fold into what uses them.
TEST_F(OnnxImportTest, FloatInitializersAreNamedParameters) {
  GraphBuilder g;
  g.input("x", {"rows", "4"});
  g.floats("linear.weight", {3, 4});
  g.floats("linear.bias", {3});
  setInt(g.node("Gemm", {"x", "linear.weight", "linear.bias"}, {"y"}), "transB",
         1);
  g.output("y");
  llvm::Expected<OnnxImport> imported = import(g);
  ASSERT_TRUE(bool(imported)) << llvm::toString(imported.takeError());
  ASSERT_EQ(imported->parameters.size(), 2u);
  const HostTensor &w = imported->parameters.at("linear.weight");
  EXPECT_EQ(w.shape, (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(w.data[5], 5.5);
  std::string ir = text();
  EXPECT_NE(ir.find("loom.param = \"linear.weight\""), std::string::npos);
  EXPECT_NE(ir.find("loom.matmul %arg2, %arg0 {transpose_rhs}"),
            std::string::npos)
      << ir;

  // y = x W^T + b at 2 rows, against a hand computation.
  Interpreter interpreter(*module);
  HostTensor x = iotaTensor({2, 4});
  auto out = interpreter.run("forward",
                             {w, imported->parameters.at("linear.bias"), x});
  ASSERT_TRUE(bool(out)) << llvm::toString(out.takeError());
  for (int64_t r = 0; r < 2; ++r)
    for (int64_t o = 0; o < 3; ++o) {
      double want = o + 0.5;
      for (int64_t k = 0; k < 4; ++k)
        want += x.data[r * 4 + k] * (o * 4 + k + 0.5);
      EXPECT_NEAR((*out)[0].data[r * 3 + o], want, 1e-4);
    }
}

// Every op the importer takes, with every number of inputs up to four of
// every kind (a float tensor, an integer constant, a float constant, a run-
// time size, an omitted one) and no attributes: an import that succeeds
// verifies, and one that fails says which node; none aborts.
TEST_F(OnnxImportTest, EveryOpWithAnyInputsImportsOrSaysWhyNeverAborts) {
  const std::vector<std::string> kinds = {"x", "ints", "floats", "size", ""};
  int imported = 0, refused = 0;
  for (const std::string &op : onnxImportedOps())
    for (int arity = 0; arity <= 4; ++arity) {
      // Inputs drawn by index, so each arity sees several mixes.
      for (int mix = 0; mix < 5; ++mix) {
        GraphBuilder g;
        g.input("x", {"batch", "3"});
        g.ints("ints", {1, 2});
        g.floats("floats", {2});
        g.node("Shape", {"x"}, {"shape"});
        g.ints("zero", {0}, true);
        g.node("Gather", {"shape", "zero"}, {"size"});
        std::vector<std::string> inputs;
        for (int i = 0; i < arity; ++i)
          inputs.push_back(kinds[(mix + i) % kinds.size()]);
        g.node(op, inputs, {"y", "y2"});
        g.output("y");
        mlir::OwningOpRef<mlir::ModuleOp> m =
            mlir::ModuleOp::create(mlir::UnknownLoc::get(ctx.get()));
        llvm::Expected<OnnxImport> result =
            importOnnxModel(*m, g.model, OnnxImportOptions());
        if (result) {
          ++imported;
          EXPECT_TRUE(mlir::succeeded(mlir::verify(*m))) << op;
          continue;
        }
        ++refused;
        std::string message = llvm::toString(result.takeError());
        EXPECT_TRUE(message.find("(" + op + ", opset 17)") !=
                        std::string::npos ||
                    message.find("graph output 'y'") != std::string::npos)
            << op << " with " << arity << " inputs: " << message;
        EXPECT_FALSE(m->lookupSymbol("forward")) << op;
      }
    }
  EXPECT_GT(imported, 0);
  EXPECT_GT(refused, 0);
}

// What the importer refuses, each with where and why; the module keeps no
// half-built function.
TEST_F(OnnxImportTest, RefusalsSayWhereAndLeaveTheModuleAsItWas) {
  struct Case {
    const char *what;
    std::function<void(GraphBuilder &)> build;
    const char *message;
  };
  const Case cases[] = {
      {"an op Loom lacks",
       [](GraphBuilder &g) {
         g.input("x", {"2"});
         g.node("Hardmax", {"x"}, {"y"});
         g.output("y");
       },
       "node 'Hardmax_1' (Hardmax, opset 17): Loom does not import Hardmax"},
      {"another domain",
       [](GraphBuilder &g) {
         g.input("x", {"2"});
         g.node("Relu", {"x"}, {"y"}).set_domain("com.microsoft");
         g.output("y");
       },
       "the domain 'com.microsoft' is not ONNX's default one"},
      {"an input nothing produces",
       [](GraphBuilder &g) {
         g.input("x", {"2"});
         g.node("Add", {"x", "ghost"}, {"y"});
         g.output("y");
       },
       "input 'ghost' is not produced by an earlier node"},
      {"an output nothing produces",
       [](GraphBuilder &g) {
         g.input("x", {"2"});
         g.output("nowhere");
       },
       "graph output 'nowhere' is produced by no node"},
      {"an initializer twice",
       [](GraphBuilder &g) {
         g.floats("w", {2});
         g.floats("w", {2});
         g.output("w");
       },
       "initializer 'w' appears twice"},
      {"raw data of the wrong size",
       [](GraphBuilder &g) {
         auto *t = g.graph().add_initializer();
         t->set_name("w");
         t->set_data_type(onnx::TensorProto::FLOAT);
         t->add_dims(3);
         t->set_raw_data(std::string(8, '\0'));
         g.output("w");
       },
       "initializer 'w': its raw data is 8 bytes for 3 elements"},
      {"a few bytes claiming a huge tensor",
       [](GraphBuilder &g) {
         auto *t = g.graph().add_initializer();
         t->set_name("w");
         t->set_data_type(onnx::TensorProto::FLOAT);
         t->add_dims(int64_t(1) << 20);
         t->add_dims(int64_t(1) << 20);
         g.output("w");
       },
       "initializer 'w': it holds 0 elements for a shape of 1099511627776"},
      {"a dim name that is not UTF-8",
       [](GraphBuilder &g) {
         g.input("x", {"\xe2" "atch", "3"});
         g.node("Relu", {"x"}, {"y"});
         g.output("y");
       },
       "the dim name of 'x' '\xef\xbf\xbd" "atch' is not valid UTF-8"},
      {"a node output name that is not UTF-8",
       [](GraphBuilder &g) {
         g.input("x", {"2"});
         g.node("Relu", {"x"}, {"y\xff"});
         g.output("y\xff");
       },
       "graph output 'y\xef\xbf\xbd' is not valid UTF-8"},
      {"a permutation that is not one",
       [](GraphBuilder &g) {
         g.input("x", {"2", "3"});
         setInts(g.node("Transpose", {"x"}, {"y"}), "perm", {0, 0});
         g.output("y");
       },
       "perm is not a permutation of the input's dims"},
      {"shapes that do not broadcast",
       [](GraphBuilder &g) {
         g.input("x", {"2", "3"});
         g.input("z", {"4"});
         g.node("Add", {"x", "z"}, {"y"});
         g.output("y");
       },
       "node 'Add_1' (Add, opset 17): 'loom.add' cannot broadcast"},
      {"a squeeze of a dim that is not 1",
       [](GraphBuilder &g) {
         g.input("x", {"2", "3"});
         g.ints("axes", {1});
         g.node("Squeeze", {"x", "axes"}, {"y"});
         g.output("y");
       },
       "squeezes dim 1 of size 3"},
      {"an element type Loom lacks",
       [](GraphBuilder &g) {
         g.input("x", {"2"}, onnx::TensorProto::UINT8);
         g.output("x");
       },
       "graph input 'x': UINT8 has no Loom element type"},
  };
  for (const Case &c : cases) {
    GraphBuilder g;
    c.build(g);
    llvm::Expected<OnnxImport> imported = import(g);
    ASSERT_FALSE(bool(imported)) << c.what;
    std::string message = llvm::toString(imported.takeError());
    EXPECT_NE(message.find(c.message), std::string::npos)
        << c.what << ": " << message;
    EXPECT_FALSE(module->lookupSymbol("forward")) << c.what;
  }

  // A model without the default domain's opset, or without a graph.
  GraphBuilder g;
  g.model.clear_opset_import();
  llvm::Expected<OnnxImport> imported = import(g);
  ASSERT_FALSE(bool(imported));
  EXPECT_NE(llvm::toString(imported.takeError()).find("no opset"),
            std::string::npos);
}

} // namespace
