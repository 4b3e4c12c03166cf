//===- Validation.cpp - Validation loss and BLEU during training ----------===//

#include "api/train/Validation.h"

#include "abi/ModelAbi.h"
#include "runtime/Decoding.h"
#include "runtime/TrainStep.h"
#include "text/Batching.h"

#include <algorithm>
#include <chrono>

namespace loom::train {

namespace {

std::vector<std::vector<int64_t>>
pick(const std::vector<std::vector<int64_t>> &rows, const text::Batch &batch) {
  std::vector<std::vector<int64_t>> picked;
  for (int64_t index : batch)
    picked.push_back(rows[index]);
  return picked;
}

/// The greedy output length allowed for a source of `width` tokens, as
/// `loom translate --max-len-ratio 1.5` allows.
int64_t decodeLength(int64_t width, int64_t maxLen) {
  return std::min<int64_t>(maxLen, width + width / 2 + 1);
}

} // namespace

ErrorOr<ValidationResult> validate(runtime::Session &session,
                                   const ValidationSet &set,
                                   const text::Tokenizer &tokenizer,
                                   const ValidationLimits &limits) {
  auto start = std::chrono::steady_clock::now();
  ValidationResult result;

  // Loss: the references under teacher forcing, in length-sorted batches.
  std::vector<text::PairLengths> lengths;
  for (size_t i = 0; i < set.sources.size(); ++i)
    lengths.push_back(
        {int64_t(set.sources[i].size()), int64_t(set.targets[i].size())});
  double nll = 0;
  for (const text::Batch &batch : text::makeSortedBatches(
           lengths, limits.maxTokens, limits.maxSentences)) {
    ErrorOr<runtime::Tensor> src = runtime::idsTensor(pick(set.sources, batch));
    ErrorOr<runtime::Tensor> tgt = runtime::idsTensor(pick(set.targets, batch));
    if (!src || !tgt)
      return !src ? src.status() : tgt.status();
    std::vector<runtime::Tensor> staging;
    auto srcIn = runtime::deviceInput(session.device(), src->ref(), staging);
    auto tgtIn = runtime::deviceInput(session.device(), tgt->ref(), staging);
    if (!srcIn || !tgtIn)
      return !srcIn ? srcIn.status() : tgtIn.status();
    auto out = session.run(abi::kTokenLogProbs, {*srcIn, *tgtIn});
    if (!out)
      return out.status().withContext("validation");
    ErrorOr<runtime::Tensor> logProbs = runtime::toHost((*out)[0].tensor);
    if (!logProbs)
      return logProbs.status();
    for (int64_t i = 0; i < logProbs->numel(); ++i)
      nll -= logProbs->f32()[i];
    for (int64_t index : batch)
      result.tokens += int64_t(set.targets[index].size()) - 1;
  }
  result.nll = result.tokens ? nll / double(result.tokens) : 0;

  // BLEU: greedy translations, batched by source length; each batch's
  // outputs may be as long as its longest source allows.
  std::vector<text::PairLengths> decodeLengths;
  for (const auto &src : set.sources) {
    int64_t width = int64_t(src.size());
    decodeLengths.push_back({width, decodeLength(width, limits.maxLen)});
  }
  result.hypotheses.resize(set.sources.size());
  for (const text::Batch &batch : text::makeSortedBatches(
           decodeLengths, limits.maxTokens, limits.maxSentences)) {
    ErrorOr<runtime::Tensor> src = runtime::idsTensor(pick(set.sources, batch));
    if (!src)
      return src.status();
    runtime::GreedyOptions greedy;
    greedy.bos = text::Tokenizer::kBos;
    greedy.eos = text::Tokenizer::kEos;
    greedy.maxLen = 0;
    for (int64_t index : batch)
      greedy.maxLen = std::max(greedy.maxLen, decodeLengths[index].tgt);
    auto decoded = runtime::greedyDecode(session, src->ref(), greedy);
    if (!decoded)
      return decoded.status().withContext("validation");
    for (size_t i = 0; i < batch.size(); ++i) {
      ErrorOr<std::string> text = tokenizer.decode((*decoded)[i]);
      if (!text)
        return text.status();
      result.hypotheses[batch[i]] = std::move(*text);
    }
  }
  result.bleu = text::corpusBleu(result.hypotheses, set.references);
  result.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return result;
}

} // namespace loom::train
