//===- LongSentences.cpp - Sources longer than the model takes ------------===//

#include "api/LongSentences.h"

#include <algorithm>

namespace loom {

namespace {

/// SentencePiece marks a piece that starts a word with U+2581.
constexpr const char kWordStart[] = "\xE2\x96\x81";

bool startsWith(const std::string &s, const std::string &prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

bool endsWith(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// `piece` without the closing quotes and brackets that may follow a
/// sentence's last mark ("end." or "(end.)").
std::string withoutClosers(std::string piece) {
  static const char *const closers[] = {"\"",
                                        "'",
                                        ")",
                                        "]",
                                        "\xC2\xBB",
                                        "\xE2\x80\x9D",
                                        "\xE2\x80\x99",
                                        "\xE3\x80\x8D",
                                        "\xE3\x80\x8F"};
  for (bool found = true; found;) {
    found = false;
    for (const char *closer : closers)
      if (endsWith(piece, closer) &&
          piece.size() > std::string(closer).size()) {
        piece.resize(piece.size() - std::string(closer).size());
        found = true;
      }
  }
  return piece;
}

/// How good a cut between pieces `before` and `after` is: 3 after a
/// clause-like unit, 2 after a comma or closing bracket, 1 at a word start,
/// 0 elsewhere (inside a word).
int cutKind(const std::string &before, const std::string &after) {
  bool wordStart = startsWith(after, kWordStart);
  // Full-width marks end a clause without a space after them.
  static const char *const cjkEnds[] = {"\xE3\x80\x82", "\xEF\xBC\x81",
                                        "\xEF\xBC\x9F", "\xEF\xBC\x9B",
                                        "\xEF\xBC\x9A"};
  std::string end = withoutClosers(before);
  for (const char *mark : cjkEnds)
    if (endsWith(end, mark))
      return 3;
  if (!wordStart)
    return 0;
  for (const char *mark : {".", "!", "?", ";", ":"})
    if (endsWith(end, mark))
      return 3;
  for (const char *mark : {",", ")", "]", "\xE3\x80\x81", "\xEF\xBC\x8C"})
    if (endsWith(before, mark))
      return 2;
  return 1;
}

} // namespace

std::vector<size_t>
splitPoints(const std::vector<int32_t> &ids, size_t maxPart,
            const std::function<std::string(int32_t)> &piece) {
  std::vector<size_t> cuts;
  size_t n = ids.size();
  if (n <= maxPart || maxPart == 0)
    return cuts;
  // kinds[j]: the cut before ids[j].
  std::vector<std::string> pieces(n);
  for (size_t i = 0; i < n; ++i)
    pieces[i] = piece(ids[i]);
  std::vector<int> kinds(n, 0);
  for (size_t j = 1; j < n; ++j)
    kinds[j] = cutKind(pieces[j - 1], pieces[j]);
  for (size_t start = 0; n - start > maxPart;) {
    // The last cut of the best kind that keeps [start, cut) within maxPart.
    size_t best = start + maxPart;
    int bestKind = -1;
    for (size_t j = start + 1; j <= start + maxPart; ++j)
      if (kinds[j] >= bestKind) {
        best = j;
        bestKind = kinds[j];
      }
    cuts.push_back(best);
    start = best;
  }
  return cuts;
}

std::vector<Translation>
joinParts(const std::vector<std::vector<Translation>> &parts) {
  std::vector<Translation> joined;
  if (parts.empty())
    return joined;
  size_t ranks = parts[0].size();
  for (const std::vector<Translation> &part : parts)
    ranks = std::min(ranks, part.size());
  for (size_t r = 0; r < ranks; ++r) {
    Translation t;
    for (const std::vector<Translation> &part : parts) {
      const Translation &p = part[r];
      if (!p.text.empty())
        t.text += (t.text.empty() ? "" : " ") + p.text;
      // A part's pieces follow those of the parts before it.
      for (auto [source, target] : p.alignment)
        t.alignment.push_back(
            {int32_t(source + t.sourceTokens), int32_t(target + t.tokens)});
      t.score += p.score;
      t.logProb += p.logProb;
      t.tokens += p.tokens;
      t.sourceTokens += p.sourceTokens;
    }
    joined.push_back(std::move(t));
  }
  return joined;
}

std::vector<std::vector<Translation>>
joinSentences(std::vector<std::vector<Translation>> units,
              const std::vector<size_t> &partCounts) {
  std::vector<std::vector<Translation>> sentences(partCounts.size());
  size_t u = 0;
  for (size_t s = 0; s < partCounts.size(); u += partCounts[s++]) {
    if (partCounts[s] == 1)
      sentences[s] = std::move(units[u]);
    else if (partCounts[s] > 1)
      sentences[s] =
          joinParts({units.begin() + u, units.begin() + u + partCounts[s]});
  }
  return sentences;
}

} // namespace loom
