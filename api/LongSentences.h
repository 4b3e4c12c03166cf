//===- LongSentences.h - Sources longer than the model takes ----*- C++ -*-===//
//
// An executable takes sources of at most max_len tokens (its positions).
// A longer sentence is refused, naming it, unless the caller asks for it to
// be split (TranslationOptions::splitLong): then it is cut into parts that
// fit, each translated as a sentence of its own, and the translations are
// joined. Where it is cut matters to the translation, so the cuts go, in
// order of preference, after the end of a clause-like unit (a piece ending
// in . ! ? ; : or their CJK forms, before a word start), after a comma or a
// closing bracket, at a word start, and only then between any two pieces:
// each part ends at the last cut of the best kind that keeps it within the
// limit. For "A b c. D e, f g h." with parts of at most 6 pieces:
//
//   ▁A ▁b ▁c . | ▁D ▁e , | ▁f ▁g ▁h .     (cut after ".", then after ",")
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_API_LONGSENTENCES_H
#define LOOM_API_LONGSENTENCES_H

#include "api/Translator.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace loom {

/// Where to cut `ids` (without eos) into parts of at most `maxPart` ids:
/// the index each part after the first starts at, ascending; empty when
/// `ids` fits. `piece` gives an id's SentencePiece piece ("▁word", ".").
std::vector<size_t>
splitPoints(const std::vector<int32_t> &ids, size_t maxPart,
            const std::function<std::string(int32_t)> &piece);

/// A sentence's translations from those of its parts (each part's n-best,
/// parts in order): rank r joins rank r of every part with spaces (a part
/// translated to nothing adds nothing), its score, log-probability and
/// tokens the parts' summed; as many ranks as the part with fewest.
std::vector<Translation>
joinParts(const std::vector<std::vector<Translation>> &parts);

/// Per sentence, its translations from those of its units: sentence s has
/// the next `partCounts[s]` units, in order; none gives it none, one its
/// unit's as they are, more joinParts of them.
std::vector<std::vector<Translation>>
joinSentences(std::vector<std::vector<Translation>> units,
              const std::vector<size_t> &partCounts);

} // namespace loom

#endif // LOOM_API_LONGSENTENCES_H
