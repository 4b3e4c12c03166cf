//===- TransformerTest.cpp - The model module of a config -----------------===//
//
// The functions and their signatures, parameter names and shapes against a
// formula written from torch.nn.Transformer's state_dict (not from the
// frontend), dropout sites, and on the interpreter: incremental decoding
// agrees with scoring the whole prefix, and the loss is the mean negative
// log-probability.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include "frontend/InterpretedModel.h"
#include "frontend/Transformer.h"
#include "ir/LoomDialect.h"

#include "mlir/IR/Verifier.h"
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>

using namespace mlir;
using namespace loom;

namespace {

using Shapes = std::map<std::string, std::vector<int64_t>>;

TransformerConfig tiny() {
  auto config = presetConfig("tiny");
  EXPECT_TRUE(static_cast<bool>(config)) << llvm::toString(config.takeError());
  return *config;
}

/// The state_dict of torch.nn.Transformer (batch_first) with Loom's
/// embeddings and generator, under the tying rules.
Shapes expectedParameters(const TransformerConfig &c) {
  int64_t d = c.d_model(), ff = c.d_ff();
  Shapes shapes;
  auto attention = [&](const std::string &p) {
    shapes[p + ".in_proj_weight"] = {3 * d, d};
    shapes[p + ".in_proj_bias"] = {3 * d};
    shapes[p + ".out_proj.weight"] = {d, d};
    shapes[p + ".out_proj.bias"] = {d};
  };
  auto norm = [&](const std::string &p) {
    shapes[p + ".weight"] = {d};
    shapes[p + ".bias"] = {d};
  };
  auto feedForward = [&](const std::string &p) {
    shapes[p + ".linear1.weight"] = {ff, d};
    shapes[p + ".linear1.bias"] = {ff};
    shapes[p + ".linear2.weight"] = {d, ff};
    shapes[p + ".linear2.bias"] = {d};
  };
  for (int64_t i = 0; i < c.encoder_layers(); ++i) {
    std::string p = "encoder.layers." + std::to_string(i);
    attention(p + ".self_attn");
    feedForward(p);
    norm(p + ".norm1");
    norm(p + ".norm2");
  }
  for (int64_t i = 0; i < c.decoder_layers(); ++i) {
    std::string p = "decoder.layers." + std::to_string(i);
    attention(p + ".self_attn");
    attention(p + ".multihead_attn");
    feedForward(p);
    norm(p + ".norm1");
    norm(p + ".norm2");
    norm(p + ".norm3");
  }
  if (c.final_norm()) {
    norm("encoder.norm");
    norm("decoder.norm");
  }
  shapes["src_embed.weight"] = {c.src_vocab(), d};
  if (!c.share_embeddings())
    shapes["tgt_embed.weight"] = {c.tgt_vocab(), d};
  if (!c.tie_output())
    shapes["generator.weight"] = {c.tgt_vocab(), d};
  shapes["generator.bias"] = {c.tgt_vocab()};
  return shapes;
}

/// Names of a function's arguments: parameters, then inputs (checked).
struct Signature {
  Shapes params;
  std::vector<std::string> paramOrder, inputs, outputs;
};

Signature signatureOf(func::FuncOp fn) {
  Signature s;
  for (unsigned i = 0; i < fn.getNumArguments(); ++i) {
    auto type = cast<RankedTensorType>(fn.getArgument(i).getType());
    if (auto p = fn.getArgAttrOfType<StringAttr>(i, kParamAttr)) {
      EXPECT_TRUE(s.inputs.empty())
          << "parameter " << p.str() << " comes after an input";
      s.params[p.str()] = type.getShape().vec();
      s.paramOrder.push_back(p.str());
    } else if (auto in = fn.getArgAttrOfType<StringAttr>(i, kInputAttr)) {
      s.inputs.push_back(in.str());
    } else {
      ADD_FAILURE() << "argument " << i << " of @" << fn.getName().str()
                    << " has no name";
    }
  }
  for (unsigned i = 0; i < fn.getNumResults(); ++i)
    if (auto out = fn.getResultAttrOfType<StringAttr>(i, kOutputAttr))
      s.outputs.push_back(out.str());
  return s;
}

OwningOpRef<ModuleOp> build(MLIRContext &ctx, const TransformerConfig &c) {
  auto module = buildModelModule(ctx, c);
  EXPECT_TRUE(module);
  if (module)
    EXPECT_TRUE(succeeded(verify(*module)));
  return module;
}

std::vector<std::string> indexed(const std::string &a, const std::string &b,
                                 int64_t n) {
  std::vector<std::string> names;
  for (int64_t i = 0; i < n; ++i) {
    names.push_back(a + "." + std::to_string(i));
    names.push_back(b + "." + std::to_string(i));
  }
  return names;
}

TEST(Transformer, TinyHasTheFunctionsWithTheirSignatures) {
  auto ctx = test::makeContext();
  auto module = build(*ctx, tiny());
  ASSERT_TRUE(module);

  auto loss = module->lookupSymbol<func::FuncOp>("loss");
  ASSERT_TRUE(loss);
  EXPECT_TRUE(loss->hasAttr(kDifferentiableAttr));
  Signature s = signatureOf(loss);
  EXPECT_EQ(s.inputs, (std::vector<std::string>{"src", "tgt", "seed"}));
  EXPECT_EQ(s.outputs, std::vector<std::string>{"loss"});
  EXPECT_EQ(loss.getResultTypes()[0],
            RankedTensorType::get({}, Float32Type::get(ctx.get())));
  EXPECT_EQ(s.params, expectedParameters(tiny()));
  // First-use order: the source embedding is the first thing the model reads.
  EXPECT_EQ(s.paramOrder.front(), "src_embed.weight");

  auto ids = RankedTensorType::get({ShapedType::kDynamic, ShapedType::kDynamic},
                                   IntegerType::get(ctx.get(), 32));
  unsigned n = s.params.size();
  EXPECT_EQ(loss.getArgument(n).getType(), ids);
  EXPECT_EQ(loss.getArgument(n + 1).getType(), ids);

  auto logProbs = module->lookupSymbol<func::FuncOp>("token_log_probs");
  ASSERT_TRUE(logProbs);
  EXPECT_FALSE(logProbs->hasAttr(kDifferentiableAttr));
  s = signatureOf(logProbs);
  EXPECT_EQ(s.inputs, (std::vector<std::string>{"src", "tgt"}));
  EXPECT_EQ(s.outputs, std::vector<std::string>{"log_probs"});
  EXPECT_EQ(s.params, expectedParameters(tiny()));

  auto encode = module->lookupSymbol<func::FuncOp>("encode");
  ASSERT_TRUE(encode);
  s = signatureOf(encode);
  EXPECT_EQ(s.inputs, std::vector<std::string>{"src"});
  EXPECT_EQ(s.outputs, indexed("cross_k", "cross_v", 2));
  EXPECT_FALSE(s.params.count("generator.bias"));
  EXPECT_TRUE(s.params.count("decoder.layers.1.multihead_attn.in_proj_weight"));
  auto cache =
      RankedTensorType::get({ShapedType::kDynamic, 2, ShapedType::kDynamic, 16},
                            Float32Type::get(ctx.get()));
  for (Type t : encode.getResultTypes())
    EXPECT_EQ(t, cache);

  auto step = module->lookupSymbol<func::FuncOp>("decode_step");
  ASSERT_TRUE(step);
  s = signatureOf(step);
  std::vector<std::string> inputs = {"src"};
  for (auto names :
       {indexed("cross_k", "cross_v", 2), indexed("self_k", "self_v", 2)})
    inputs.insert(inputs.end(), names.begin(), names.end());
  inputs.push_back("tokens");
  inputs.push_back("position");
  inputs.push_back("start");
  EXPECT_EQ(s.inputs, inputs);
  std::vector<std::string> outputs = {"log_probs"};
  for (auto name : indexed("self_k", "self_v", 2))
    outputs.push_back(name);
  EXPECT_EQ(s.outputs, outputs);
  EXPECT_EQ(step.getResultTypes()[0],
            RankedTensorType::get({ShapedType::kDynamic, 32},
                                  Float32Type::get(ctx.get())));
  EXPECT_FALSE(s.params.count("src_embed.weight") &&
               s.params.count("encoder.layers.0.norm1.weight"))
      << "decode_step must not run the encoder";
}

struct Variant {
  const char *name;
  TransformerConfig::Norm norm;
  bool finalNorm, share, tie;
  int64_t srcVocab, tgtVocab;
};

void PrintTo(const Variant &v, std::ostream *os) { *os << v.name; }

class TransformerVariants : public testing::TestWithParam<Variant> {};

TEST_P(TransformerVariants, ParametersFollowTorchNames) {
  const Variant &v = GetParam();
  TransformerConfig c = tiny();
  c.set_norm(v.norm);
  c.set_final_norm(v.finalNorm);
  c.set_share_embeddings(v.share);
  c.set_tie_output(v.tie);
  c.set_src_vocab(v.srcVocab);
  c.set_tgt_vocab(v.tgtVocab);
  c.set_encoder_layers(3);
  c.set_decoder_layers(1);
  auto ctx = test::makeContext();
  auto module = build(*ctx, c);
  ASSERT_TRUE(module);
  Signature s = signatureOf(module->lookupSymbol<func::FuncOp>("loss"));
  EXPECT_EQ(s.params, expectedParameters(c));
  // 12 tensors per encoder layer, 18 per decoder layer, 2 per final norm,
  // the source embedding and generator bias, and the untied rest.
  size_t count = 12 * 3 + 18 * 1 + (v.finalNorm ? 4 : 0) + 2 +
                 (v.share ? 0 : 1) + (v.tie ? 0 : 1);
  EXPECT_EQ(s.params.size(), count);
  EXPECT_EQ(s.paramOrder.size(), count) << "a parameter appears twice";
}

INSTANTIATE_TEST_SUITE_P(
    Transformer, TransformerVariants,
    testing::Values(
        Variant{"post", TransformerConfig::POST, false, false, false, 32, 24},
        Variant{"pre_final", TransformerConfig::PRE, true, false, false, 32,
                24},
        Variant{"tied", TransformerConfig::POST, false, false, true, 32, 24},
        Variant{"shared", TransformerConfig::PRE, false, true, false, 32, 32},
        Variant{"shared_tied", TransformerConfig::PRE, true, true, true, 32,
                32}),
    [](const testing::TestParamInfo<Variant> &info) {
      return std::string(info.param.name);
    });

TEST(Transformer, PreAndPostNormDifferInWhereTheNormSits) {
  // Post-norm: the first layer norm reads the residual sum; pre-norm: the
  // first layer norm reads the embedding sum directly.
  for (auto norm : {TransformerConfig::POST, TransformerConfig::PRE}) {
    TransformerConfig c = tiny();
    c.set_norm(norm);
    auto ctx = test::makeContext();
    auto module = build(*ctx, c);
    ASSERT_TRUE(module);
    auto fn = module->lookupSymbol<func::FuncOp>("token_log_probs");
    LayerNormOp first;
    fn.walk([&](LayerNormOp op) {
      if (!first)
        first = op;
    });
    ASSERT_TRUE(first);
    Operation *input = first.getInput().getDefiningOp();
    ASSERT_TRUE(input);
    auto add = dyn_cast<AddOp>(input);
    ASSERT_TRUE(add);
    // Pre: embedding * sqrt(d) + positional encoding, read directly.
    // Post: x + attention(x), where x is that sum.
    bool readsEmbedding = isa_and_nonnull<MulOp>(add.getLhs().getDefiningOp());
    EXPECT_EQ(readsEmbedding, norm == TransformerConfig::PRE);
  }
}

TEST(Transformer, DropoutSitesAreDistinctAndOnlyInTheLoss) {
  TransformerConfig c = tiny();
  c.set_dropout(0.1);
  auto ctx = test::makeContext();
  auto module = build(*ctx, c);
  ASSERT_TRUE(module);
  for (auto fn : module->getOps<func::FuncOp>()) {
    std::set<int64_t> offsets;
    int64_t sites = 0;
    fn.walk([&](DropoutOp op) {
      ++sites;
      offsets.insert(op.getOffset());
      EXPECT_EQ(op.getRate().convertToDouble(), 0.1);
      auto seed = dyn_cast<BlockArgument>(op.getSeed());
      ASSERT_TRUE(seed);
      EXPECT_EQ(fn.getArgAttrOfType<StringAttr>(seed.getArgNumber(), kInputAttr)
                    .str(),
                "seed");
    });
    EXPECT_EQ(offsets.size(), size_t(sites)) << "in @" << fn.getName().str();
    if (fn.getName() == "loss") {
      // Embeddings (2); per encoder layer attention, two residuals, FFN (4);
      // per decoder layer two attentions, three residuals, FFN (6).
      EXPECT_EQ(sites, 2 + 4 * 2 + 6 * 2);
    } else {
      EXPECT_EQ(sites, 0) << "in @" << fn.getName().str();
    }
  }
}

TEST(Transformer, AttentionAndActivationDropoutHaveTheirOwnRates) {
  // Residual sites keep `dropout`; the attention weights and the FFN's
  // hidden activations take their own rate, and a rate of 0 leaves the site
  // out while every other site keeps its offset (its mask).
  auto sitesOf = [](const TransformerConfig &c) {
    auto ctx = test::makeContext();
    auto module = build(*ctx, c);
    std::map<int64_t, double> rates; // offset -> rate
    EXPECT_TRUE(module);
    if (!module)
      return rates;
    auto loss = module->lookupSymbol<func::FuncOp>("loss");
    loss.walk([&](DropoutOp op) {
      rates[op.getOffset()] = op.getRate().convertToDouble();
    });
    return rates;
  };
  TransformerConfig c = tiny();
  c.set_dropout(0.3);
  std::map<int64_t, double> same = sitesOf(c);
  ASSERT_EQ(same.size(), size_t(2 + 4 * 2 + 6 * 2));

  c.set_attention_dropout(0.1);
  c.set_activation_dropout(0.2);
  std::map<int64_t, double> own = sitesOf(c);
  ASSERT_EQ(own.size(), same.size());
  int64_t attention = 0, activation = 0, residual = 0;
  for (auto [offset, rate] : own) {
    ASSERT_TRUE(same.count(offset)) << offset;
    attention += rate == 0.1;
    activation += rate == 0.2;
    residual += rate == 0.3;
  }
  // Attention: one per encoder layer, two per decoder layer; FFN: one per
  // layer; residual: the rest.
  EXPECT_EQ(attention, 2 * 1 + 2 * 2);
  EXPECT_EQ(activation, 2 + 2);
  EXPECT_EQ(residual, 2 + 2 * 2 + 2 * 3);

  c.set_attention_dropout(0.0);
  c.set_activation_dropout(0.0);
  std::map<int64_t, double> residualOnly = sitesOf(c);
  EXPECT_EQ(int64_t(residualOnly.size()), residual);
  for (auto [offset, rate] : residualOnly) {
    EXPECT_EQ(rate, 0.3);
    EXPECT_EQ(same.count(offset), 1u) << "offset " << offset << " moved";
  }
}

TEST(Transformer, InvalidConfigIsReportedNotBuilt) {
  TransformerConfig c = tiny();
  c.set_heads(3);
  auto ctx = test::makeContext();
  std::string message;
  ScopedDiagnosticHandler handler(ctx.get(), [&](Diagnostic &d) {
    message += d.str();
    return success();
  });
  EXPECT_FALSE(buildModelModule(*ctx, c));
  EXPECT_NE(message.find("heads"), std::string::npos) << message;
}

//===----------------------------------------------------------------------===//
// On the interpreter
//===----------------------------------------------------------------------===//

double at(const HostTensor &t, int64_t row, int64_t col) {
  return t.data.at(row * t.shape.at(1) + col);
}

/// Decodes `tgt` one position at a time with @encode and @decode_step and
/// compares each step's log-probability of the next token with
/// @token_log_probs over the whole sentence.
void checkIncrementalDecoding(const TransformerConfig &c) {
  auto ctx = test::makeContext();
  auto module = build(*ctx, c);
  ASSERT_TRUE(module);
  InterpretedModel model(*module);
  model.initParameters(7);

  std::vector<std::vector<int64_t>> srcRows = {{5, 9, 4, 3}, {6, 3}},
                                    tgtRows = {{2, 7, 8, 11, 3}, {2, 12, 3}};
  HostTensor src = padBatch(srcRows), tgt = padBatch(tgtRows);
  auto whole = model.call("token_log_probs", {{"src", src}, {"tgt", tgt}});
  ASSERT_TRUE(static_cast<bool>(whole)) << llvm::toString(whole.takeError());
  const HostTensor &expected = (*whole)["log_probs"];
  ASSERT_EQ(expected.shape, (std::vector<int64_t>{2, 4}));

  auto encoded = model.call("encode", {{"src", src}});
  ASSERT_TRUE(static_cast<bool>(encoded))
      << llvm::toString(encoded.takeError());
  NamedTensors state = *encoded;
  state["src"] = src;
  int64_t heads = c.heads(), headDim = c.d_model() / c.heads();
  for (int64_t i = 0; i < c.decoder_layers(); ++i)
    for (const char *kind : {"self_k.", "self_v."})
      state[kind + std::to_string(i)] =
          HostTensor({0, 2, 1, heads, headDim}, DType::F32);

  int64_t length = tgt.shape[1];
  for (int64_t t = 0; t + 1 < length; ++t) {
    HostTensor tokens({2, 1}, DType::I32);
    for (int64_t b = 0; b < 2; ++b)
      tokens.data[b] = at(tgt, b, t);
    state["tokens"] = tokens;
    state["position"] = HostTensor::scalar(t, DType::I64);
    state["start"] = HostTensor({2}, DType::I64);
    auto step = model.call("decode_step", state);
    ASSERT_TRUE(static_cast<bool>(step)) << llvm::toString(step.takeError());
    const HostTensor &logProbs = (*step)["log_probs"];
    ASSERT_EQ(logProbs.shape, (std::vector<int64_t>{2, c.tgt_vocab()}));
    for (int64_t b = 0; b < 2; ++b) {
      if (t + 1 >= int64_t(tgtRows[b].size()))
        continue; // Past the end of this sentence.
      int64_t next = tgtRows[b][t + 1];
      EXPECT_NEAR(at(logProbs, b, next), at(expected, b, t), 2e-5)
          << "sentence " << b << " position " << t;
    }
    for (auto &[name, value] : *step)
      if (llvm::StringRef(name).starts_with("self_")) {
        EXPECT_EQ(value.shape,
                  (std::vector<int64_t>{t + 1, 2, 1, heads, headDim}));
        state[name] = value;
      }
  }
}

TEST(Transformer, DecodeStepMatchesTokenLogProbsPostNorm) {
  checkIncrementalDecoding(tiny());
}

TEST(Transformer, DecodeStepMatchesTokenLogProbsPreNormSharedTied) {
  TransformerConfig c = tiny();
  c.set_norm(TransformerConfig::PRE);
  c.set_final_norm(true);
  c.set_share_embeddings(true);
  c.set_tie_output(true);
  checkIncrementalDecoding(c);
}

TEST(Transformer, LossIsTheMeanNegativeLogProbabilityOfRealTargets) {
  TransformerConfig c = tiny();
  auto ctx = test::makeContext();
  auto module = build(*ctx, c);
  ASSERT_TRUE(module);
  InterpretedModel model(*module, InterpreterOptions{/*f64=*/true});
  model.initParameters(3);
  HostTensor src = padBatch({{5, 9, 3}, {6, 4, 8, 3}});
  HostTensor tgt = padBatch({{2, 7, 3}, {2, 12, 13, 14, 3}});
  auto logProbs = model.call("token_log_probs", {{"src", src}, {"tgt", tgt}});
  ASSERT_TRUE(static_cast<bool>(logProbs))
      << llvm::toString(logProbs.takeError());
  double sum = 0;
  for (double v : (*logProbs)["log_probs"].data)
    sum += v; // Padding contributes 0.
  auto loss = model.call("loss", {{"src", src},
                                  {"tgt", tgt},
                                  {"seed", HostTensor::scalar(0, DType::I64)}});
  ASSERT_TRUE(static_cast<bool>(loss)) << llvm::toString(loss.takeError());
  // 2 + 4 real targets.
  EXPECT_NEAR((*loss)["loss"].data.at(0), -sum / 6.0, 1e-12);
}

} // namespace
