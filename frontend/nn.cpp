//===- nn.cpp - Neural-network modules on the builder API -----------------===//

#include "frontend/nn.h"

#include <cmath>

namespace loom::nn {

double DropoutRates::at(DropoutSite site) const {
  switch (site) {
  case DropoutSite::Residual:
    return residual;
  case DropoutSite::Attention:
    return attention;
  case DropoutSite::Activation:
    return activation;
  }
  return residual;
}

Tensor Context::dropout(Tensor x, DropoutSite site) {
  // Every site takes an offset, used or not, so that one site's rate going to
  // 0 leaves the other sites' masks as they were.
  int64_t offset = nextOffset++;
  double rate = rates.at(site);
  if (rate <= 0.0 || !seed)
    return x;
  return loom::dropout(x, seed, rate, offset);
}

Tensor linear(Tensor x, Tensor weight, Tensor bias) {
  Tensor y = matmul(x, weight, /*transposeA=*/false, /*transposeB=*/true);
  return bias ? y + bias : y;
}

Tensor Linear::operator()(Graph &g, Tensor x) const {
  Graph::Scope scope(g, name);
  Tensor w = g.param(name + ".weight", {outFeatures, inFeatures});
  Tensor b = bias ? g.param(name + ".bias", {outFeatures}) : Tensor();
  return linear(x, w, b);
}

Tensor Embedding::weight(Graph &g) const {
  return g.param(name + ".weight", {vocab, dim});
}

Tensor Embedding::operator()(Graph &g, Tensor ids) const {
  Graph::Scope scope(g, name);
  return gather(weight(g), ids);
}

Tensor PositionalEncoding::operator()(Tensor positions) const {
  Graph &g = positions.graph();
  Graph::Scope scope(g, "positional_encoding");
  // The inverse frequencies are exact in double and rounded once to the
  // element type; the angles are then one product per element, as in the
  // usual PyTorch implementation.
  int64_t half = dim / 2;
  std::vector<double> inverse(half);
  for (int64_t i = 0; i < half; ++i)
    inverse[i] = 1.0 / std::pow(10000.0, 2.0 * i / dim);
  Tensor freq = g.constant(inverse, {half}, positions.elementType());
  // [n, 1] positions broadcast as they are.
  Tensor column =
      positions.rank() == 2 ? positions : expandDims(positions, {1});
  Tensor angles = column * freq; // [n, d/2]
  // Interleave: [n, d/2, 2] with sin at 0 and cos at 1 is [n, d] row-major.
  Tensor pairs =
      concat({expandDims(sin(angles), {2}), expandDims(cos(angles), {2})}, 2);
  return reshape(pairs, {0, dim});
}

Tensor PositionalEncoding::forIds(Tensor ids) const {
  return (*this)(iota(ids, 1, ids.graph().f32()));
}

Tensor LayerNorm::operator()(Graph &g, Tensor x) const {
  Graph::Scope scope(g, name);
  Tensor gamma = g.param(name + ".weight", {dim});
  Tensor beta = g.param(name + ".bias", {dim});
  return layerNorm(x, gamma, beta, epsilon);
}

Tensor MultiHeadAttention::projectLinear(Graph &g, Tensor x,
                                         Projection which) const {
  Graph::Scope scope(g, name);
  Tensor packedW = g.param(name + ".in_proj_weight", {3 * dModel, dModel});
  Tensor packedB = g.param(name + ".in_proj_bias", {3 * dModel});
  int64_t start = static_cast<int64_t>(which) * dModel;
  Tensor w = slice(packedW, 0, start, start + dModel);
  Tensor b = slice(packedB, 0, start, start + dModel);
  return linear(x, w, b);
}

Tensor MultiHeadAttention::project(Graph &g, Tensor x, Projection which) const {
  Tensor y = projectLinear(g, x, which); // [B, S, d]
  Graph::Scope scope(g, name);
  Tensor split = reshape(y, {0, 0, heads, headDim()}); // [B, S, H, Dh]
  return transpose(split, {0, 2, 1, 3});               // [B, H, S, Dh]
}

Tensor MultiHeadAttention::projectRows(Graph &g, Tensor x,
                                       Projection which) const {
  Tensor y = projectLinear(g, x, which); // [..., d]
  Graph::Scope scope(g, name);
  llvm::SmallVector<int64_t> shape(x.rank() - 1, 0);
  shape.append({heads, 1, headDim()});
  return reshape(y, shape); // [..., H, 1, Dh]
}

Tensor MultiHeadAttention::attendHeads(Context &ctx, Tensor q, Tensor k,
                                       Tensor v, llvm::ArrayRef<Tensor> masks,
                                       Tensor *probs) const {
  Graph &g = ctx.graph;
  Graph::Scope scope(g, name);
  Tensor scores = matmul(q, k, false, /*transposeB=*/true) *
                  (1.0 / std::sqrt(static_cast<double>(headDim())));
  for (Tensor mask : masks)
    scores = scores + mask;
  Tensor weights = softmax(scores, -1);
  if (probs)
    *probs = weights;
  return matmul(ctx.dropout(weights, DropoutSite::Attention), v);
}

Tensor MultiHeadAttention::attend(Context &ctx, Tensor q, Tensor k, Tensor v,
                                  llvm::ArrayRef<Tensor> masks,
                                  Tensor *probs) const {
  Tensor perHead = attendHeads(ctx, q, k, v, masks, probs); // [B, H, Sq, Dh]
  Graph::Scope scope(ctx.graph, name);
  Tensor merged = transpose(perHead, {0, 2, 1, 3}); // [B, Sq, H, Dh]
  return outProject(ctx.graph, reshape(merged, {0, 0, dModel}));
}

Tensor MultiHeadAttention::outProject(Graph &g, Tensor x) const {
  return Linear{name + ".out_proj", dModel, dModel}(g, x);
}

Tensor MultiHeadAttention::operator()(Context &ctx, Tensor query, Tensor memory,
                                      llvm::ArrayRef<Tensor> masks) const {
  Graph &g = ctx.graph;
  Tensor q = project(g, query, Projection::Query);
  Tensor k = project(g, memory, Projection::Key);
  Tensor v = project(g, memory, Projection::Value);
  return attend(ctx, q, k, v, masks);
}

Tensor FeedForward::operator()(Context &ctx, Tensor x) const {
  Graph &g = ctx.graph;
  Tensor h = relu(Linear{name + ".linear1", dModel, dFF}(g, x));
  return Linear{name + ".linear2", dFF,
                dModel}(g, ctx.dropout(h, DropoutSite::Activation));
}

Tensor residual(Context &ctx, Tensor x, const LayerNorm &norm, bool preNorm,
                const std::function<Tensor(Tensor)> &sublayer) {
  if (preNorm)
    return x + ctx.dropout(sublayer(norm(ctx.graph, x)));
  return norm(ctx.graph, x + ctx.dropout(sublayer(x)));
}

//===----------------------------------------------------------------------===//
// Layers
//===----------------------------------------------------------------------===//

MultiHeadAttention EncoderLayer::selfAttention() const {
  return {name + ".self_attn", sizes.dModel, sizes.heads};
}
FeedForward EncoderLayer::feedForward() const {
  // torch keeps linear1/linear2 directly in the layer.
  return {name, sizes.dModel, sizes.dFF};
}
LayerNorm EncoderLayer::norm(int index) const {
  return {name + ".norm" + std::to_string(index), sizes.dModel, sizes.epsilon};
}

Tensor EncoderLayer::operator()(Context &ctx, Tensor x, Tensor srcMask) const {
  // The layer's own ops (residual adds, their dropout) carry its name.
  Graph::Scope scope(ctx.graph, name);
  MultiHeadAttention attn = selfAttention();
  x = residual(ctx, x, norm(1), sizes.preNorm,
               [&](Tensor h) { return attn(ctx, h, h, {srcMask}); });
  FeedForward ff = feedForward();
  return residual(ctx, x, norm(2), sizes.preNorm,
                  [&](Tensor h) { return ff(ctx, h); });
}

MultiHeadAttention DecoderLayer::selfAttention() const {
  return {name + ".self_attn", sizes.dModel, sizes.heads};
}
MultiHeadAttention DecoderLayer::crossAttention() const {
  return {name + ".multihead_attn", sizes.dModel, sizes.heads};
}
FeedForward DecoderLayer::feedForward() const {
  return {name, sizes.dModel, sizes.dFF};
}
LayerNorm DecoderLayer::norm(int index) const {
  return {name + ".norm" + std::to_string(index), sizes.dModel, sizes.epsilon};
}

Tensor DecoderLayer::operator()(Context &ctx, Tensor x, Tensor memory,
                                Tensor selfMask, Tensor srcMask) const {
  Graph::Scope scope(ctx.graph, name);
  MultiHeadAttention self = selfAttention(), cross = crossAttention();
  x = residual(ctx, x, norm(1), sizes.preNorm,
               [&](Tensor h) { return self(ctx, h, h, {selfMask}); });
  x = residual(ctx, x, norm(2), sizes.preNorm,
               [&](Tensor h) { return cross(ctx, h, memory, {srcMask}); });
  FeedForward ff = feedForward();
  return residual(ctx, x, norm(3), sizes.preNorm,
                  [&](Tensor h) { return ff(ctx, h); });
}

DecoderLayer::StepResult DecoderLayer::step(Context &ctx, Tensor x,
                                            Tensor selfK, Tensor selfV,
                                            Tensor crossK, Tensor crossV,
                                            Tensor srcMask, Tensor start,
                                            bool alignment) const {
  using Projection = MultiHeadAttention::Projection;
  Graph &g = ctx.graph;
  Graph::Scope scope(g, name);
  MultiHeadAttention self = selfAttention(), cross = crossAttention();
  StepResult result;
  x = residual(ctx, x, norm(1), sizes.preNorm, [&](Tensor h) {
    // The caches hold positions first, [T, N, K, H, Dh], so that the new
    // position is appended after the earlier ones (in place, where the
    // runtime gives the cache room). The attention reads them as
    // [N, K, H, T + 1, Dh]: each hypothesis its own batch entry with one
    // query row over its own keys.
    auto newPosition = [&](Projection which) {
      Tensor y = self.projectLinear(g, h, which); // [N, K, d]
      return expandDims(reshape(y, {0, 0, sizes.heads, self.headDim()}), {0});
    };
    result.selfK = concat({selfK, newPosition(Projection::Key)}, 0);
    result.selfV = concat({selfV, newPosition(Projection::Value)}, 0);
    Tensor keys = transpose(result.selfK, {1, 2, 3, 0, 4});
    Tensor values = transpose(result.selfV, {1, 2, 3, 0, 4});
    // Cache position j is a sentence's own from its start on; before it
    // the positions belong to sentences decoded before it joined (the
    // runtime holds finite values there). [N, 1, 1, 1, T + 1].
    Tensor slots = iota(result.selfK, 0, g.f32());
    Tensor selfMask =
        select(compare(ComparePredicate::lt, slots, start),
               scalarLike(slots, kMaskedScore), scalarLike(slots, 0.0));
    Tensor perHead =
        self.attendHeads(ctx, self.projectRows(g, h, Projection::Query), keys,
                         values, {selfMask});
    return self.outProject(g, reshape(perHead, {0, 0, sizes.dModel}));
  });
  x = residual(ctx, x, norm(2), sizes.preNorm, [&](Tensor h) {
    // project() splits [N, K, d] into [N, H, K, Dh]: the hypotheses of a
    // sentence are the query rows of its memory.
    Tensor probs; // [N, H, K, S]
    Tensor out =
        cross.attend(ctx, cross.project(g, h, Projection::Query), crossK,
                     crossV, {srcMask}, alignment ? &probs : nullptr);
    // The heads last and kept, so that the mean reduces the trailing dim
    // as a CPU kernel region does: [N, K, S, 1] -> [N, K, S].
    if (alignment)
      result.alignment = reshape(reduceMean(transpose(probs, {0, 2, 3, 1}), {3},
                                            /*keepDims=*/true),
                                 {0, 0, 0});
    return out;
  });
  FeedForward ff = feedForward();
  result.output = residual(ctx, x, norm(3), sizes.preNorm,
                           [&](Tensor h) { return ff(ctx, h); });
  return result;
}

} // namespace loom::nn
