//===- FrontendTest.cpp - The builder API and configs ---------------------===//

#include "TestUtil.h"

#include "frontend/Config.h"
#include "frontend/Graph.h"

#include "mlir/IR/Verifier.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"
#include <gtest/gtest.h>

#include <map>

using namespace mlir;
using namespace loom;

namespace {

//===----------------------------------------------------------------------===//
// Graph
//===----------------------------------------------------------------------===//

TEST(Graph, ParametersComeFirstInFirstUseOrderAndOnce) {
  auto ctx = test::makeContext();
  OwningOpRef<ModuleOp> module = ModuleOp::create(UnknownLoc::get(ctx.get()));
  Graph g(*module, "f");
  Tensor x = g.input("x", tensorOf({kDyn, 4}, g.f32()));
  Tensor w = g.param("b.weight", {3, 4});
  Tensor y = g.input("y", tensorOf({kDyn, 3}, g.f32()));
  Tensor v = g.param("a.weight", {3});
  Tensor again = g.param("b.weight", {3, 4});
  EXPECT_EQ(again.value(), w.value());
  Tensor out = matmul(x, w, false, true) + v + y;
  func::FuncOp fn = g.finish({{"out", out}});
  ASSERT_TRUE(succeeded(verify(*module)));

  ASSERT_EQ(fn.getNumArguments(), 4u);
  auto tag = [&](unsigned i, const char *attr) {
    auto s = fn.getArgAttrOfType<StringAttr>(i, attr);
    return s ? s.str() : std::string();
  };
  EXPECT_EQ(tag(0, kParamAttr), "b.weight");
  EXPECT_EQ(tag(1, kParamAttr), "a.weight");
  EXPECT_EQ(tag(2, kInputAttr), "x");
  EXPECT_EQ(tag(3, kInputAttr), "y");
  EXPECT_EQ(fn.getArgument(0), w.value());
  EXPECT_EQ(fn.getArgument(2), x.value());
  EXPECT_EQ(fn.getFunctionType().getResults()[0], tensorOf({kDyn, 3}, g.f32()));
  EXPECT_EQ(fn.getResultAttrOfType<StringAttr>(0, kOutputAttr).str(), "out");
  EXPECT_FALSE(fn->hasAttr(kDifferentiableAttr));
}

TEST(Graph, ScalarOperandsAreConstantsOfTheTensorsElementType) {
  auto ctx = test::makeContext();
  OwningOpRef<ModuleOp> module = ModuleOp::create(UnknownLoc::get(ctx.get()));
  Graph g(*module, "f");
  Type f64 = g.opBuilder().getF64Type();
  Tensor x = g.input("x", tensorOf({2}, f64));
  Tensor y = 1.0 - x * 2.5;
  auto sub = cast<SubOp>(y.value().getDefiningOp());
  auto one = sub.getLhs().getDefiningOp<ConstantOp>();
  ASSERT_TRUE(one);
  EXPECT_EQ(one.getType(), tensorOf({}, f64));
  auto mul = sub.getRhs().getDefiningOp<MulOp>();
  ASSERT_TRUE(mul);
  auto scale = mul.getRhs().getDefiningOp<ConstantOp>();
  ASSERT_TRUE(scale);
  auto value = cast<DenseElementsAttr>(scale.getValue());
  EXPECT_EQ(value.getSplatValue<APFloat>().convertToDouble(), 2.5);
  g.setDifferentiable();
  g.finish({{"y", y}});
  EXPECT_TRUE(succeeded(verify(*module)));
}

TEST(Graph, ScopesNameTheOpsTheyBuild) {
  auto ctx = test::makeContext();
  OwningOpRef<ModuleOp> module = ModuleOp::create(UnknownLoc::get(ctx.get()));
  Graph g(*module, "f");
  Tensor x = g.input("x", tensorOf({2, 3}, g.f32()));
  Tensor y;
  {
    Graph::Scope scope(g, "encoder.layers.0");
    y = relu(x);
  }
  Tensor z = exp(y);
  auto named = dyn_cast<NameLoc>(y.value().getDefiningOp()->getLoc());
  ASSERT_TRUE(named);
  EXPECT_EQ(named.getName().str(), "encoder.layers.0");
  EXPECT_FALSE(isa<NameLoc>(z.value().getDefiningOp()->getLoc()));
  g.finish({{"z", z}});
}

TEST(Graph, ShapeOpsInferTheirTypes) {
  auto ctx = test::makeContext();
  OwningOpRef<ModuleOp> module = ModuleOp::create(UnknownLoc::get(ctx.get()));
  Graph g(*module, "f");
  Tensor ids = g.input("ids", tensorOf({kDyn, kDyn}, g.i32()));
  Tensor table = g.param("embed.weight", {10, 8});
  Tensor e = gather(table, ids);
  EXPECT_EQ(e.type(), tensorOf({kDyn, kDyn, 8}, g.f32()));
  Tensor heads = transpose(reshape(e, {0, 0, 2, 4}), {0, 2, 1, 3});
  EXPECT_EQ(heads.type(), tensorOf({kDyn, 2, kDyn, 4}, g.f32()));
  Tensor shifted = slice(ids, 1, 1, 0);
  EXPECT_EQ(shifted.type(), tensorOf({kDyn, kDyn}, g.i32()));
  Tensor both = concat({e, e}, -1);
  EXPECT_EQ(both.dim(-1), 16);
  Tensor mask = paddingMask(ids, 0, g.f32()) + causalMask(ids, 1, g.f32());
  EXPECT_EQ(mask.type(), tensorOf({kDyn, 1, kDyn, kDyn}, g.f32()));
  Tensor positions = iota(ids, 1, g.f32());
  EXPECT_EQ(positions.type(), tensorOf({kDyn}, g.f32()));
  Tensor loss =
      sumAll(crossEntropy(matmul(e, table, false, true), ids, 0.1, 0));
  EXPECT_EQ(loss.rank(), 0);
  g.finish({{"loss", loss}, {"mask", mask}, {"positions", positions}});
  EXPECT_TRUE(succeeded(verify(*module)));
}

//===----------------------------------------------------------------------===//
// Configs
//===----------------------------------------------------------------------===//

const char *kValid = R"(
d_model: 16
heads: 2
d_ff: 32
encoder_layers: 1
decoder_layers: 1
src_vocab: 20
tgt_vocab: 24
)";

std::string parseError(const std::string &text) {
  auto config = parseConfig(text, "test.pbtxt");
  if (config)
    return "";
  return llvm::toString(config.takeError());
}

/// kValid with the lines of `fields` ("name: value" per line) replacing
/// the fields of the same names.
std::string withFields(const std::string &fields) {
  std::map<std::string, std::string> lines;
  std::vector<std::string> order;
  auto add = [&](llvm::StringRef text) {
    llvm::SmallVector<llvm::StringRef> split;
    text.split(split, '\n', -1, /*KeepEmpty=*/false);
    for (llvm::StringRef line : split) {
      std::string name = line.split(':').first.trim().str();
      if (!lines.count(name))
        order.push_back(name);
      lines[name] = line.str();
    }
  };
  add(kValid);
  add(fields);
  std::string text;
  for (const std::string &name : order)
    text += lines[name] + "\n";
  return text;
}

TEST(Config, ParsesAndFillsDefaults) {
  auto config = parseConfig(kValid, "test.pbtxt");
  ASSERT_TRUE(static_cast<bool>(config)) << llvm::toString(config.takeError());
  EXPECT_EQ(config->d_model(), 16);
  EXPECT_EQ(config->tgt_vocab(), 24);
  EXPECT_EQ(config->layer_norm_eps(), 1e-5);
  EXPECT_EQ(config->max_len(), 256);
  EXPECT_EQ(config->norm(), TransformerConfig::POST);

  auto custom = parseConfig(
      std::string(kValid) + "layer_norm_eps: 1e-6\nmax_len: 40\nnorm: PRE\n",
      "test.pbtxt");
  ASSERT_TRUE(static_cast<bool>(custom)) << llvm::toString(custom.takeError());
  EXPECT_EQ(custom->layer_norm_eps(), 1e-6);
  EXPECT_EQ(custom->max_len(), 40);
  EXPECT_EQ(custom->norm(), TransformerConfig::PRE);
}

TEST(Config, UnknownFieldIsReportedWithLineAndColumn) {
  std::string message = parseError("d_model: 16\nheads: 2\nd_modle: 3\n");
  // The column is where the unknown name starts.
  EXPECT_NE(message.find("test.pbtxt:3:1:"), std::string::npos) << message;
  EXPECT_NE(message.find("d_modle"), std::string::npos) << message;
}

TEST(Config, ValidationNamesTheField) {
  struct Case {
    const char *extra, *field;
  };
  for (Case c :
       {Case{"heads: 3", "heads"}, Case{"d_model: 15\nheads: 1", "d_model"},
        Case{"d_ff: -4", "d_ff"}, Case{"encoder_layers: 0", "encoder_layers"},
        Case{"dropout: 1.0", "dropout"},
        Case{"label_smoothing: -0.1", "label_smoothing"},
        Case{"layer_norm_eps: 0", "layer_norm_eps"},
        Case{"max_len: -1", "max_len"}, Case{"max_len: 1", "max_len"},
        Case{"max_len: 2", "max_len"},
        Case{"share_embeddings: true", "share_embeddings"},
        // Sizes beyond any real model: refused by name before anything is
        // allocated or compiled.
        Case{"d_model: 2147483648", "d_model"},
        Case{"src_vocab: 1099511627776", "src_vocab"},
        Case{"tgt_vocab: 576460752303423488", "tgt_vocab"},
        Case{"encoder_layers: 1000000000", "encoder_layers"},
        Case{"heads: 4096", "heads"}, Case{"max_len: 1000000", "max_len"},
        Case{"layer_norm_eps: inf", "layer_norm_eps"},
        Case{"layer_norm_eps: nan", "layer_norm_eps"},
        Case{"dropout: nan", "dropout"},
        Case{"attention_dropout: 1", "attention_dropout"},
        Case{"activation_dropout: -0.5", "activation_dropout"},
        // Proto3 enums are open: a number no enumerator has still parses.
        Case{"norm: 7", "norm"}, Case{"norm: -1", "norm"},
        // Each size within its bound, the product beyond any machine.
        Case{"d_model: 65536\nheads: 1\nd_ff: 262144\nencoder_layers: "
             "1024\ndecoder_layers: 1024",
             "parameters"}}) {
    std::string message = parseError(withFields(c.extra));
    // A duplicate field would be refused by the parser, naming the field
    // too: the case must reach validation.
    EXPECT_EQ(message.find("multiple times"), std::string::npos) << message;
    EXPECT_NE(message.find(c.field), std::string::npos)
        << c.extra << " gave: '" << message << "'";
    EXPECT_NE(message.find("test.pbtxt"), std::string::npos) << message;
  }
}

TEST(Config, PresetsAreValidAndAsInThePaper) {
  for (const std::string &name : presetNames()) {
    auto config = presetConfig(name);
    ASSERT_TRUE(static_cast<bool>(config)) << name;
  }
  auto base = presetConfig("base");
  ASSERT_TRUE(static_cast<bool>(base));
  EXPECT_EQ(base->d_model(), 512);
  EXPECT_EQ(base->heads(), 8);
  EXPECT_EQ(base->d_ff(), 2048);
  EXPECT_EQ(base->encoder_layers(), 6);
  EXPECT_EQ(base->src_vocab(), 37000);
  EXPECT_TRUE(base->share_embeddings() && base->tie_output());
  auto big = presetConfig("big");
  ASSERT_TRUE(static_cast<bool>(big));
  EXPECT_EQ(big->d_model(), 1024);
  EXPECT_EQ(big->heads(), 16);
  EXPECT_EQ(big->dropout(), 0.3);
  auto small = presetConfig("small");
  ASSERT_TRUE(static_cast<bool>(small));
  EXPECT_EQ(small->norm(), TransformerConfig::PRE);
  EXPECT_TRUE(small->final_norm());
  auto multi30k = presetConfig("multi30k");
  ASSERT_TRUE(static_cast<bool>(multi30k));
  EXPECT_EQ(multi30k->d_model(), 128);
  EXPECT_EQ(multi30k->encoder_layers(), 4);
  EXPECT_EQ(multi30k->dropout(), 0.3);
  EXPECT_TRUE(multi30k->has_attention_dropout() &&
              multi30k->has_activation_dropout());
  EXPECT_EQ(multi30k->attention_dropout(), 0.0);
  auto tiny = presetConfig("tiny");
  ASSERT_TRUE(static_cast<bool>(tiny));
  EXPECT_EQ(tiny->d_model(), 32);
  EXPECT_EQ(tiny->dropout(), 0.0);

  auto unknown = presetConfig("huge");
  ASSERT_FALSE(static_cast<bool>(unknown));
  std::string message = llvm::toString(unknown.takeError());
  EXPECT_NE(message.find("huge"), std::string::npos) << message;
  EXPECT_NE(message.find("tiny"), std::string::npos) << message;
}

TEST(Config, LoadsFilesAndNamesMissingOnes) {
  llvm::SmallString<128> path;
  ASSERT_FALSE(llvm::sys::fs::createTemporaryFile("config", "pbtxt", path));
  {
    std::error_code ec;
    llvm::raw_fd_ostream out(path, ec);
    ASSERT_FALSE(ec);
    out << kValid;
  }
  auto config = loadConfig(path);
  EXPECT_TRUE(static_cast<bool>(config)) << llvm::toString(config.takeError());
  llvm::sys::fs::remove(path);

  auto missing = loadConfig(path);
  ASSERT_FALSE(static_cast<bool>(missing));
  std::string message = llvm::toString(missing.takeError());
  EXPECT_NE(message.find(path.str().str()), std::string::npos) << message;
}

} // namespace
