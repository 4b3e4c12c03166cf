//===- ModelBench.h - Timing a compiled model -------------------*- C++ -*-===//
//
// Times a compiled Transformer in a session on random batches and returns
// one JSON record; `loom bench` (which compiles first) and `loom-bench`
// (which loads an executable and links only the runtime, so that it runs on
// a GPU machine) print the same record:
//
//   train:  a step is one @train_step (forward, backward, Adam) on B pairs of
//           S source and T target tokens; tokens per step = B * (S + T).
//   decode: a step is decoding B sources of S tokens for exactly T tokens
//           (@encode once, then T @decode_step calls with the cache, no
//           early stop), greedy or with beam N (N hypotheses a sentence,
//           eos refused before T); tokens per step = B * T whatever N.
//
// Every step returns its result to the host (the loss, the tokens), so the
// wall clock around it also holds for a GPU's asynchronous queue.
//
// Model FLOPs count 2*M*N*K for every GEMM of the model's forward (the
// projections, the FFN, the generator over every target position, and the
// two attention products per attention); a training step is three forwards'
// worth. bench/pytorch_bench.py and bench/pytorch_gpu_bench.py use the same
// definitions.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_API_BENCH_MODELBENCH_H
#define LOOM_API_BENCH_MODELBENCH_H

#include "abi/Error.h"
#include "runtime/Session.h"
#include "runtime/config.pb.h"

#include "nlohmann/json.hpp"

#include <cstdint>
#include <string>

namespace loom::bench {

struct ModelBenchOptions {
  std::string mode; // "train" or "decode"
  int64_t batch = 32, srcLen = 30, tgtLen = 30;
  int64_t beam = 1;
  /// The label of what decoding's linear layers multiply in (the executable
  /// says it; the record repeats it).
  std::string precision = "fp32";
  int steps = 10, warmup = 2;
  /// The time per kernel, to stderr after the record.
  bool profile = false;
};

/// Whether `options` make sense for a model of `config`: InvalidArgument,
/// naming the option, when not (a typo is refused rather than run for days).
Status checkModelBench(const ModelBenchOptions &options,
                       const TransformerConfig &config);

/// The rows (sentences times hypotheses) and the longest sequence a
/// compiled program must hold to run `options`.
int64_t benchRows(const ModelBenchOptions &options);
int64_t benchLen(const ModelBenchOptions &options);

/// FLOPs of one forward over B x S sources and B x T targets.
double forwardFlops(const TransformerConfig &config, double batch,
                    double srcLen, double tgtLen);
/// FLOPs of decoding: the encoder and the cross K/V once per sentence, then
/// per step one position for each of `beam` hypotheses a sentence,
/// attending over the positions so far.
double decodeFlops(const TransformerConfig &config, double batch, double srcLen,
                   double tgtLen, double beam);

/// Warms up, times `options.steps` steps on `session` (whose parameters are
/// set) and returns the record: system, mode, shapes, device, threads,
/// tokens and model GFLOP per second, the step times' median and spread,
/// the peak resident memory.
ErrorOr<nlohmann::json> runModelBench(runtime::Session &session,
                                      const TransformerConfig &config,
                                      const ModelBenchOptions &options);

} // namespace loom::bench

#endif // LOOM_API_BENCH_MODELBENCH_H
