//===- nn.h - Neural-network modules on the builder API ---------*- C++ -*-===//
//
// Modules in the manner of torch.nn: each is a small description (its full
// parameter-name prefix and sizes) whose call builds ops on a Graph. Modules
// hold no tensors: `Graph::param` returns the same argument for the same
// name, so calling a module twice shares its weights, and two modules that
// name one tensor (tied embeddings) share it too.
//
// Parameter names and layouts are those of torch.nn.Transformer's
// state_dict, so checkpoints move between Loom and PyTorch unchanged.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_FRONTEND_NN_H
#define LOOM_FRONTEND_NN_H

#include "frontend/Graph.h"

#include <functional>
#include <string>

namespace loom::nn {

/// Where a dropout sits: each has its own rate.
enum class DropoutSite {
  Residual,   // embeddings and each sublayer's output
  Attention,  // attention weights, after the softmax
  Activation, // the feed-forward's hidden activations
};

/// Dropout's rate at each site.
struct DropoutRates {
  double residual = 0.0, attention = 0.0, activation = 0.0;

  static DropoutRates all(double rate) { return {rate, rate, rate}; }
  double at(DropoutSite site) const;
};

/// What modules share while building one function: the Graph, and dropout's
/// rates and seed with a counter that gives every dropout site its own
/// stream (`offset`).
class Context {
public:
  /// Dropout is off where its rate is 0, and everywhere when `seed` is null.
  Context(Graph &graph, DropoutRates rates = {}, Tensor seed = {})
      : graph(graph), rates(rates), seed(seed) {}

  Graph &graph;

  /// Dropout with the next site's offset; `x` itself when dropout is off
  /// there.
  Tensor dropout(Tensor x, DropoutSite site = DropoutSite::Residual);

private:
  DropoutRates rates;
  Tensor seed;
  int64_t nextOffset = 0;
};

/// y = x W^T + b with W [out, in] (`name.weight`) and b [out] (`name.bias`).
struct Linear {
  std::string name;
  int64_t inFeatures, outFeatures;
  bool bias = true;

  Tensor operator()(Graph &g, Tensor x) const;
};

/// y = x W^T + b for a given W and b (tied weights, packed projections).
Tensor linear(Tensor x, Tensor weight, Tensor bias);

/// Rows of `name.weight` [vocab, dim] picked by ids.
struct Embedding {
  std::string name;
  int64_t vocab, dim;

  Tensor weight(Graph &g) const;
  Tensor operator()(Graph &g, Tensor ids) const;
};

/// The sinusoidal encoding of "Attention Is All You Need":
/// pe[p, 2i] = sin(p / 10000^(2i/d)), pe[p, 2i+1] = cos(p / 10000^(2i/d)).
struct PositionalEncoding {
  int64_t dim;

  /// [n, dim] for float positions [n] or [n, 1] (each sentence's own
  /// position, when decoding sentences that are at different positions:
  /// given as [n, 1], no dim of a computed value moves).
  Tensor operator()(Tensor positions) const;
  /// [S, dim] for positions 0..S-1 of ids [B, S].
  Tensor forIds(Tensor ids) const;
};

/// torch.nn.LayerNorm over the last dim: `name.weight`, `name.bias` [dim].
struct LayerNorm {
  std::string name;
  int64_t dim;
  double epsilon;

  Tensor operator()(Graph &g, Tensor x) const;
};

/// torch.nn.MultiheadAttention with packed projections: `in_proj_weight`
/// [3d, d] and `in_proj_bias` [3d] hold q, k, v in that order; `out_proj`.
struct MultiHeadAttention {
  enum class Projection { Query = 0, Key = 1, Value = 2 };

  std::string name;
  int64_t dModel, heads;

  int64_t headDim() const { return dModel / heads; }
  /// x [..., d] projected by the packed weight's `which` rows: [..., d].
  Tensor projectLinear(Graph &g, Tensor x, Projection which) const;
  /// x [B, S, d] projected and split into heads: [B, H, S, Dh].
  Tensor project(Graph &g, Tensor x, Projection which) const;
  /// x [..., d] projected and split into heads as one query row each:
  /// [..., H, 1, Dh], a view of the projection (no transpose).
  Tensor projectRows(Graph &g, Tensor x, Projection which) const;
  /// Attention of q [..., Sq, Dh] over k, v [..., Sk, Dh] with additive
  /// masks that broadcast against the scores [..., Sq, Sk]; heads not
  /// merged.
  /// `probs`, when given, receives the attention weights [..., Sq, Sk]
  /// before dropout.
  Tensor attendHeads(Context &ctx, Tensor q, Tensor k, Tensor v,
                     llvm::ArrayRef<Tensor> masks,
                     Tensor *probs = nullptr) const;
  /// attendHeads of q [B, H, Sq, Dh] over k, v [B, H, Sk, Dh]; heads merged
  /// and `out_proj` applied: [B, Sq, d].
  Tensor attend(Context &ctx, Tensor q, Tensor k, Tensor v,
                llvm::ArrayRef<Tensor> masks, Tensor *probs = nullptr) const;
  /// `out_proj` of x [..., d].
  Tensor outProject(Graph &g, Tensor x) const;
  /// Queries from `query` [B, Sq, d], keys and values from `memory`.
  Tensor operator()(Context &ctx, Tensor query, Tensor memory,
                    llvm::ArrayRef<Tensor> masks) const;
};

/// linear2(dropout(relu(linear1(x)))).
struct FeedForward {
  std::string name;
  int64_t dModel, dFF;

  Tensor operator()(Context &ctx, Tensor x) const;
};

/// A residual sublayer with dropout on its output. Post-norm (the paper):
/// norm(x + dropout(f(x))); pre-norm: x + dropout(f(norm(x))).
Tensor residual(Context &ctx, Tensor x, const LayerNorm &norm, bool preNorm,
                const std::function<Tensor(Tensor)> &sublayer);

/// Sizes shared by the layers of one model.
struct LayerSizes {
  int64_t dModel, heads, dFF;
  double epsilon;
  bool preNorm;
};

/// torch.nn.TransformerEncoderLayer: self_attn, linear1/linear2,
/// norm1/norm2.
struct EncoderLayer {
  std::string name;
  LayerSizes sizes;

  MultiHeadAttention selfAttention() const;
  FeedForward feedForward() const;
  LayerNorm norm(int index) const;
  /// `srcMask` masks padded keys.
  Tensor operator()(Context &ctx, Tensor x, Tensor srcMask) const;
};

/// torch.nn.TransformerDecoderLayer: self_attn, multihead_attn,
/// linear1/linear2, norm1/norm2/norm3.
struct DecoderLayer {
  std::string name;
  LayerSizes sizes;

  MultiHeadAttention selfAttention() const;
  MultiHeadAttention crossAttention() const;
  FeedForward feedForward() const;
  LayerNorm norm(int index) const;

  /// The whole target at once: `selfMask` is causal plus target padding,
  /// `srcMask` masks padded memory positions.
  Tensor operator()(Context &ctx, Tensor x, Tensor memory, Tensor selfMask,
                    Tensor srcMask) const;

  /// One target position of K hypotheses of each of N sentences during
  /// decoding, x [N, K, d]. `selfK`/`selfV` [T, N, K, H, Dh] hold each
  /// hypothesis's projected self-attention keys and values of the T earlier
  /// positions, position first; the new position's are appended to them (no
  /// causal mask is needed: nothing later exists). `crossK`/`crossV` [N, H, S,
  /// Dh] are the projected memory of each sentence, which its K hypotheses read
  /// as K query rows: the memory is read once per sentence, not once per
  /// hypothesis.
  /// With `alignment`, also the cross-attention weights averaged over the
  /// heads: [N, K, S], where each hypothesis looks in its source.
  struct StepResult {
    Tensor output, selfK, selfV, alignment;
  };
  /// `start` ([N, 1, 1, 1, 1] f32) is per sentence the first cache
  /// position its hypotheses attend to: a sentence that joined a running
  /// batch after its first step has the positions before it masked out.
  StepResult step(Context &ctx, Tensor x, Tensor selfK, Tensor selfV,
                  Tensor crossK, Tensor crossV, Tensor srcMask, Tensor start,
                  bool alignment = false) const;
};

} // namespace loom::nn

#endif // LOOM_FRONTEND_NN_H
