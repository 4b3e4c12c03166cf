//===- Transformer.h - The Transformer of the paper -------------*- C++ -*-===//
//
// `buildModelModule` turns a TransformerConfig into the module every later
// stage starts from. Element type f32; batch and lengths dynamic; ids i32
// with 0 as padding. The functions, each taking the parameters first (by
// torch.nn.Transformer state_dict name, in first-use order):
//
//   @loss(params, src [B,S], tgt [B,T], seed) -> loss       loom.differentiable
//       teacher forcing on tgt[:, :-1] against tgt[:, 1:]; the mean over
//       non-padding targets of cross entropy with label smoothing, as
//       F.cross_entropy(..., label_smoothing=eps, ignore_index=0) computes it
//   @token_log_probs(params, src, tgt) -> log_probs [B, T-1]
//       log p(tgt[t+1] | tgt[..t], src), 0 on padding; dropout off
//   @encode(params, src) -> cross_k.{i}, cross_v.{i} [B, H, S, Dh]
//       every decoder layer's projected cross-attention keys and values
//   @decode_step(params, src, cross_k.{i}, cross_v.{i}, self_k.{i},
//                self_v.{i} [B, H, T, Dh], tokens [B, 1], position)
//       -> log_probs [B, V], self_k.{i}, self_v.{i} [B, H, T+1, Dh]
//       one target position with the self-attention cache appended to
//   @decode_step_logits(the same inputs)
//       -> logits [B, V], self_k.{i}, self_v.{i}
//       @decode_step before its log-softmax: greedy search needs each row's
//       best token alone, and beam search on the CPU subtracts each row's
//       log-sum-exp from the few tokens it keeps, so neither writes and
//       reads again a log-softmax over the whole vocabulary
//   @decode_step_align(the same inputs)
//       -> logits [B, V], self_k.{i}, self_v.{i}, alignment.{i} [B, K, S]
//       @decode_step_logits and, per decoder layer, its cross-attention
//       weights averaged over the heads: where each hypothesis looks in its
//       source, which a search returns on request (only this entry pays for
//       them; its attention stays fused, the weights rebuilt from the fused
//       op's log-sum-exp)
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_FRONTEND_TRANSFORMER_H
#define LOOM_FRONTEND_TRANSFORMER_H

#include "frontend/Config.h"
#include "frontend/nn.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

namespace loom {

/// The encoder-decoder of a config, as nn modules.
class TransformerModel {
public:
  /// `config` must have passed `validateConfig`.
  explicit TransformerModel(const TransformerConfig &config);

  const TransformerConfig &config() const { return cfg; }
  nn::Embedding sourceEmbedding() const;
  /// `src_embed` itself when embeddings are shared.
  nn::Embedding targetEmbedding() const;
  nn::EncoderLayer encoderLayer(int64_t index) const;
  nn::DecoderLayer decoderLayer(int64_t index) const;

  /// Scaled embeddings plus positional encoding (then dropout): [B, S, d].
  Tensor embed(nn::Context &ctx, const nn::Embedding &table, Tensor ids,
               Tensor positionalEncoding) const;
  /// The memory [B, S, d] of src ids [B, S].
  Tensor encode(nn::Context &ctx, Tensor src, Tensor srcMask) const;
  /// The decoder's output [B, T, d] for target inputs [B, T].
  Tensor decode(nn::Context &ctx, Tensor tgtIn, Tensor memory,
                Tensor srcMask) const;
  /// The decoder's final norm (identity without `final_norm`).
  Tensor decoderNorm(Graph &g, Tensor x) const;
  /// The generator: logits [..., tgt_vocab].
  Tensor generate(Graph &g, Tensor hidden) const;
  /// Logits [B, T, tgt_vocab] of every target input position.
  Tensor logits(nn::Context &ctx, Tensor src, Tensor tgtIn) const;

private:
  nn::LayerSizes sizes() const;

  TransformerConfig cfg;
};

/// Builds @loss, @token_log_probs, @encode, @decode_step,
/// @decode_step_logits and @decode_step_align for `config`
/// (validated here: an invalid config is reported as an error diagnostic
/// and gives a null module).
mlir::OwningOpRef<mlir::ModuleOp>
buildModelModule(mlir::MLIRContext &ctx, const TransformerConfig &config);

} // namespace loom

#endif // LOOM_FRONTEND_TRANSFORMER_H
