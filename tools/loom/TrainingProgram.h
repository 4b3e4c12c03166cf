//===- TrainingProgram.h - What a run compiles before it trains -*- C++ -*-===//
//
// `loom train` and `loom prepare` make the same vocabulary and compile the
// same @train_step from the same options, so that training in one process
// and training with a prepared folder give the same run.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_TOOLS_LOOM_TRAININGPROGRAM_H
#define LOOM_TOOLS_LOOM_TRAININGPROGRAM_H

#include "tools/loom/Sessions.h"

#include "api/train/TrainingRun.h"
#include "frontend/Config.h"
#include "text/Tokenizer.h"

#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace loom::cli {

/// One SentencePiece vocabulary for both languages of `files` (SRC TGT),
/// of `vocabSize` pieces, drawn with `seed`; prints its size and time.
llvm::Expected<text::Tokenizer>
trainVocabulary(const std::vector<std::string> &files, int64_t vocabSize,
                uint64_t seed);

/// Sets the config's vocabularies to the tokenizer's size and checks it.
llvm::Error fitVocabulary(TransformerConfig &config,
                          const text::Tokenizer &tokenizer);

/// The pipeline that compiles @train_step (and the validation entries) for
/// the run's batch bounds and schedule; `bucketBytes` of gradients per
/// all-reduce when `dataParallel`.
CompilePipelineOptions trainingPipeline(const TransformerConfig &config,
                                        const train::RunSettings &settings,
                                        bool dataParallel, int64_t bucketBytes);

} // namespace loom::cli

#endif // LOOM_TOOLS_LOOM_TRAININGPROGRAM_H
