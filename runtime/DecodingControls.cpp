//===- DecodingControls.cpp - What a hypothesis may say next --------------===//

#include "runtime/DecodingControls.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace loom::runtime {

Status checkDecodingControls(const DecodingControls &c, int64_t vocab) {
  if (!(c.repetitionPenalty > 0) || !std::isfinite(c.repetitionPenalty))
    return Status::failure("the repetition penalty must be a finite number "
                           "above 0 (1: none), got " +
                               std::to_string(c.repetitionPenalty),
                           ErrorCode::InvalidArgument);
  if (c.noRepeatNgram < 0)
    return Status::failure("the no-repeat n-gram size must not be negative, "
                           "got " +
                               std::to_string(c.noRepeatNgram),
                           ErrorCode::InvalidArgument);
  for (size_t i = 0; i < c.forbidden.size(); ++i) {
    if (c.forbidden[i].empty())
      return Status::failure("forbidden sequence " + std::to_string(i + 1) +
                                 " is empty",
                             ErrorCode::InvalidArgument);
    for (int32_t token : c.forbidden[i])
      if (token < 0 || token >= vocab)
        return Status::failure("forbidden sequence " + std::to_string(i + 1) +
                                   " holds token " + std::to_string(token) +
                                   ", outside the vocabulary of " +
                                   std::to_string(vocab),
                               ErrorCode::InvalidArgument);
  }
  return Status::success();
}

void appendScoreEdits(const DecodingControls &c,
                      const std::vector<int32_t> &tokens, int64_t row,
                      int64_t vocab, std::vector<Device::ScoreEdit> &edits) {
  using Edit = Device::ScoreEdit;
  int64_t first = row * vocab;
  auto ban = [&](int32_t token) {
    edits.push_back({Edit::Ban, first + token});
  };
  // The sequences whose last token would complete them.
  for (const std::vector<int32_t> &seq : c.forbidden) {
    size_t before = seq.size() - 1;
    if (tokens.size() >= before &&
        std::equal(seq.begin(), seq.end() - 1, tokens.end() - before))
      ban(seq.back());
  }
  // Each earlier occurrence of the last n-1 tokens bans what followed it.
  int64_t n = c.noRepeatNgram, len = int64_t(tokens.size());
  if (n == 1) {
    for (int32_t token : tokens)
      ban(token);
  } else if (n > 1 && len >= n) {
    auto suffix = tokens.end() - (n - 1);
    for (int64_t i = 0; i + n <= len; ++i)
      if (std::equal(tokens.begin() + i, tokens.begin() + i + n - 1, suffix))
        ban(tokens[i + n - 1]);
  }
  if (c.repetitionPenalty != 1) {
    std::vector<int32_t> held(tokens);
    std::sort(held.begin(), held.end());
    held.erase(std::unique(held.begin(), held.end()), held.end());
    for (int32_t token : held)
      edits.push_back({Edit::Penalize, first + token,
                       static_cast<float>(c.repetitionPenalty)});
  }
}

} // namespace loom::runtime
