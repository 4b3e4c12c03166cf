//===- Transformer.cpp - The Transformer of the paper, as a module --------===//

#include "frontend/Transformer.h"

#include "abi/ModelAbi.h"
#include "ir/LoomDialect.h"

#include "mlir/IR/Diagnostics.h"

#include <cmath>

using namespace mlir;

namespace loom {

TransformerModel::TransformerModel(const TransformerConfig &config)
    : cfg(config) {}

nn::LayerSizes TransformerModel::sizes() const {
  return {cfg.d_model(), cfg.heads(), cfg.d_ff(), cfg.layer_norm_eps(),
          cfg.norm() == TransformerConfig::PRE};
}

nn::Embedding TransformerModel::sourceEmbedding() const {
  return {"src_embed", cfg.src_vocab(), cfg.d_model()};
}

nn::Embedding TransformerModel::targetEmbedding() const {
  if (cfg.share_embeddings())
    return sourceEmbedding();
  return {"tgt_embed", cfg.tgt_vocab(), cfg.d_model()};
}

nn::EncoderLayer TransformerModel::encoderLayer(int64_t index) const {
  return {"encoder.layers." + std::to_string(index), sizes()};
}

nn::DecoderLayer TransformerModel::decoderLayer(int64_t index) const {
  return {"decoder.layers." + std::to_string(index), sizes()};
}

Tensor TransformerModel::embed(nn::Context &ctx, const nn::Embedding &table,
                               Tensor ids, Tensor positionalEncoding) const {
  Tensor x = table(ctx.graph, ids) * std::sqrt(double(cfg.d_model()));
  return ctx.dropout(x + positionalEncoding);
}

Tensor TransformerModel::encode(nn::Context &ctx, Tensor src,
                                Tensor srcMask) const {
  nn::PositionalEncoding pe{cfg.d_model()};
  Tensor x = embed(ctx, sourceEmbedding(), src, pe.forIds(src));
  for (int64_t i = 0; i < cfg.encoder_layers(); ++i)
    x = encoderLayer(i)(ctx, x, srcMask);
  if (cfg.final_norm())
    x = nn::LayerNorm{"encoder.norm", cfg.d_model(),
                      cfg.layer_norm_eps()}(ctx.graph, x);
  return x;
}

Tensor TransformerModel::decoderNorm(Graph &g, Tensor x) const {
  if (!cfg.final_norm())
    return x;
  return nn::LayerNorm{"decoder.norm", cfg.d_model(), cfg.layer_norm_eps()}(g,
                                                                            x);
}

Tensor TransformerModel::decode(nn::Context &ctx, Tensor tgtIn, Tensor memory,
                                Tensor srcMask) const {
  Graph &g = ctx.graph;
  // Causal [T, T] plus target padding [B, 1, 1, T]: [B, 1, T, T].
  Tensor selfMask =
      paddingMask(tgtIn, 0, g.f32()) + causalMask(tgtIn, 1, g.f32());
  nn::PositionalEncoding pe{cfg.d_model()};
  Tensor x = embed(ctx, targetEmbedding(), tgtIn, pe.forIds(tgtIn));
  for (int64_t i = 0; i < cfg.decoder_layers(); ++i)
    x = decoderLayer(i)(ctx, x, memory, selfMask, srcMask);
  return decoderNorm(g, x);
}

Tensor TransformerModel::generate(Graph &g, Tensor hidden) const {
  Graph::Scope scope(g, "generator");
  Tensor weight = cfg.tie_output() ? targetEmbedding().weight(g)
                                   : g.param("generator.weight",
                                             {cfg.tgt_vocab(), cfg.d_model()});
  Tensor bias = g.param("generator.bias", {cfg.tgt_vocab()});
  return nn::linear(hidden, weight, bias);
}

Tensor TransformerModel::logits(nn::Context &ctx, Tensor src,
                                Tensor tgtIn) const {
  Tensor srcMask = paddingMask(src, 0, ctx.graph.f32());
  Tensor memory = encode(ctx, src, srcMask);
  return generate(ctx.graph, decode(ctx, tgtIn, memory, srcMask));
}

//===----------------------------------------------------------------------===//
// The module's functions
//===----------------------------------------------------------------------===//

namespace {

/// The config's rates; an unset attention or activation rate is `dropout`.
nn::DropoutRates dropoutRates(const TransformerConfig &cfg) {
  nn::DropoutRates rates = nn::DropoutRates::all(cfg.dropout());
  if (cfg.has_attention_dropout())
    rates.attention = cfg.attention_dropout();
  if (cfg.has_activation_dropout())
    rates.activation = cfg.activation_dropout();
  return rates;
}

RankedTensorType idsType(Graph &g) { return tensorOf({kDyn, kDyn}, g.i32()); }

/// The projected keys or values of one layer: [B, H, ?, Dh].
RankedTensorType cacheType(Graph &g, const TransformerConfig &cfg) {
  return tensorOf({kDyn, cfg.heads(), kDyn, cfg.d_model() / cfg.heads()},
                  g.f32());
}

void buildLoss(ModuleOp module, const TransformerModel &model) {
  const TransformerConfig &cfg = model.config();
  Graph g(module, abi::kLoss);
  Tensor src = g.input(abi::kSrc, idsType(g), {"batch", "src_len"});
  Tensor tgt = g.input(abi::kTgt, idsType(g), {"batch", "tgt_len"});
  Tensor seed = g.input(abi::kSeed, tensorOf({}, g.i64()));
  nn::Context ctx(g, dropoutRates(cfg), seed);
  // Teacher forcing: the decoder reads tgt[:, :-1] and predicts tgt[:, 1:].
  Tensor tgtIn = slice(tgt, 1, 0, -1);
  Tensor targets = slice(tgt, 1, 1, 0);
  Tensor losses = crossEntropy(model.logits(ctx, src, tgtIn), targets,
                               cfg.label_smoothing(), /*ignoreIndex=*/0);
  Graph::Scope scope(g, "loss");
  // The mean over real targets; max(count, 1) keeps an all-padding batch
  // finite.
  Tensor real = compare(ComparePredicate::ne, targets, g.scalar(0, g.i32()));
  Tensor count = sumAll(castTo(real, g.f32()));
  count.value().getDefiningOp()->setAttr(kTokenCountAttr,
                                         UnitAttr::get(module.getContext()));
  Tensor loss = sumAll(losses) / maximum(count, g.scalar(1.0, g.f32()));
  g.setDifferentiable();
  g.finish({{abi::kLossOutput, loss}});
}

void buildTokenLogProbs(ModuleOp module, const TransformerModel &model) {
  Graph g(module, abi::kTokenLogProbs);
  Tensor src = g.input(abi::kSrc, idsType(g), {"batch", "src_len"});
  Tensor tgt = g.input(abi::kTgt, idsType(g), {"batch", "tgt_len"});
  nn::Context ctx(g);
  Tensor tgtIn = slice(tgt, 1, 0, -1);
  Tensor targets = slice(tgt, 1, 1, 0);
  // Without smoothing, cross entropy is -log p(target), and 0 on padding.
  Tensor logProbs = -crossEntropy(model.logits(ctx, src, tgtIn), targets, 0.0,
                                  /*ignoreIndex=*/0);
  g.finish({{abi::kLogProbs, logProbs}});
}

void buildEncode(ModuleOp module, const TransformerModel &model) {
  using Projection = nn::MultiHeadAttention::Projection;
  const TransformerConfig &cfg = model.config();
  Graph g(module, abi::kEncode);
  Tensor src = g.input(abi::kSrc, idsType(g), {"batch", "src_len"});
  nn::Context ctx(g);
  Tensor memory = model.encode(ctx, src, paddingMask(src, 0, g.f32()));
  std::vector<std::pair<std::string, Tensor>> outputs;
  for (int64_t i = 0; i < cfg.decoder_layers(); ++i) {
    nn::MultiHeadAttention cross = model.decoderLayer(i).crossAttention();
    std::string index = std::to_string(i);
    outputs.push_back({abi::kCrossKeyPrefix + index,
                       cross.project(g, memory, Projection::Key)});
    outputs.push_back({abi::kCrossValuePrefix + index,
                       cross.project(g, memory, Projection::Value)});
  }
  g.finish(outputs);
}

/// The self-attention keys or values of one layer, position first:
/// [T, N, K, H, Dh].
RankedTensorType selfCacheType(Graph &g, const TransformerConfig &cfg) {
  return tensorOf({kDyn, kDyn, kDyn, cfg.heads(), cfg.d_model() / cfg.heads()},
                  g.f32());
}

/// One step of K hypotheses of each of N sentences (beam search, K = 1 for
/// greedy). The source, its mask and the cross-attention K/V are per
/// sentence and the self-attention caches per hypothesis; `beam` is a batch
/// dim, so the rows of a step, batch x beam, are bounded by max-batch.
/// `kind` says which entry: @decode_step (log-probabilities),
/// @decode_step_logits (the generator's logits) or @decode_step_align (the
/// logits, and each layer's alignment).
enum class StepKind { LogProbs, Logits, Align };

void buildDecodeStep(ModuleOp module, const TransformerModel &model,
                     StepKind kind) {
  const TransformerConfig &cfg = model.config();
  int64_t layers = cfg.decoder_layers();
  Graph g(module, kind == StepKind::LogProbs ? abi::kDecodeStep
                  : kind == StepKind::Logits ? abi::kDecodeStepLogits
                                             : abi::kDecodeStepAlign);
  Tensor src = g.input(abi::kSrc, idsType(g), {"batch", "src_len"});
  std::vector<Tensor> crossK, crossV, selfK, selfV;
  for (int64_t i = 0; i < layers; ++i) {
    std::string index = std::to_string(i);
    crossK.push_back(g.input(abi::kCrossKeyPrefix + index, cacheType(g, cfg),
                             {"batch", "", "src_len", ""}));
    crossV.push_back(g.input(abi::kCrossValuePrefix + index, cacheType(g, cfg),
                             {"batch", "", "src_len", ""}));
  }
  for (int64_t i = 0; i < layers; ++i) {
    std::string index = std::to_string(i);
    selfK.push_back(g.input(abi::kSelfKeyPrefix + index, selfCacheType(g, cfg),
                            {"cache_len", "batch", "beam", "", ""}));
    selfV.push_back(g.input(abi::kSelfValuePrefix + index,
                            selfCacheType(g, cfg),
                            {"cache_len", "batch", "beam", "", ""}));
  }
  Tensor tokens =
      g.input(abi::kTokens, tensorOf({kDyn, kDyn}, g.i32()), {"batch", "beam"});
  Tensor position = g.input(abi::kPosition, tensorOf({}, g.i64()));
  Tensor start = g.input(abi::kStart, tensorOf({kDyn}, g.i64()), {"batch"});

  nn::Context ctx(g);
  Tensor srcMask = paddingMask(src, 0, g.f32()); // [N, 1, 1, S]
  // Sentence n's own position is `position` less its start: the caches'
  // length when it joined.
  nn::PositionalEncoding pe{cfg.d_model()};
  Tensor x = model.embed(ctx, model.targetEmbedding(), tokens,
                         reshape(pe(castTo(position, g.f32()) -
                                    castTo(expandDims(start, {1}), g.f32())),
                                 {0, 1, cfg.d_model()})); // [N, 1, d]
  Tensor startF = castTo(expandDims(start, {1, 2, 3, 4}), g.f32());
  std::vector<std::pair<std::string, Tensor>> caches, alignments;
  for (int64_t i = 0; i < layers; ++i) {
    auto step = model.decoderLayer(i).step(ctx, x, selfK[i], selfV[i],
                                           crossK[i], crossV[i], srcMask,
                                           startF, kind == StepKind::Align);
    x = step.output;
    std::string index = std::to_string(i);
    caches.push_back({abi::kSelfKeyPrefix + index, step.selfK});
    caches.push_back({abi::kSelfValuePrefix + index, step.selfV});
    if (kind == StepKind::Align) // [N, K, S]: row s * K + j, as the logits
      alignments.push_back({abi::kAlignmentPrefix + index, step.alignment});
  }
  Tensor logits = model.generate(g, model.decoderNorm(g, x)); // [N, K, V]
  std::vector<std::pair<std::string, Tensor>> outputs;
  if (kind == StepKind::LogProbs)
    outputs.push_back({abi::kLogProbs,
                       reshape(logSoftmax(logits, -1), {-1, cfg.tgt_vocab()})});
  else
    outputs.push_back({abi::kLogits, reshape(logits, {-1, cfg.tgt_vocab()})});
  outputs.insert(outputs.end(), caches.begin(), caches.end());
  outputs.insert(outputs.end(), alignments.begin(), alignments.end());
  g.finish(outputs);
}

} // namespace

OwningOpRef<ModuleOp> buildModelModule(MLIRContext &ctx,
                                       const TransformerConfig &config) {
  ctx.loadDialect<LoomDialect, func::FuncDialect>();
  TransformerConfig checked = config;
  if (llvm::Error err = validateConfig(checked)) {
    emitError(UnknownLoc::get(&ctx))
        << "invalid config: " << llvm::toString(std::move(err));
    return nullptr;
  }
  OwningOpRef<ModuleOp> module = ModuleOp::create(UnknownLoc::get(&ctx));
  TransformerModel model(checked);
  buildLoss(*module, model);
  buildTokenLogProbs(*module, model);
  buildEncode(*module, model);
  buildDecodeStep(*module, model, StepKind::LogProbs);
  buildDecodeStep(*module, model, StepKind::Logits);
  buildDecodeStep(*module, model, StepKind::Align);
  return module;
}

} // namespace loom
