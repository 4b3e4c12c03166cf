//===- Translator.h - A model directory that translates text ----*- C++ -*-===//
//
// The runtime's translator, without the compiler: a folder holding a
// compiled executable, the weights and the SentencePiece vocabulary becomes
// an object that turns sentences into n-best translations. `loom translate`,
// `loom-translate` and the C API (include/loom/loom.h) are all this class.
//
//   DIR/translate.loomx    @encode and @decode_step compiled for this CPU
//   DIR/model.safetensors  the parameters
//   DIR/spm.model          the vocabulary
//
// Sentences are tokenized, followed by eos, sorted by length into batches
// (so similar lengths decode together; api/BatchPlan.h), beam-searched, and
// returned in input order. Each sentence has its own length limit, so its
// translation does not depend on the sentences it is batched with. A blank
// sentence translates to empty text; one longer than the executable takes is
// refused, or translated in parts and joined (api/LongSentences.h).
//
// translate() may be called from several threads; the calls run one at a
// time (each already uses every thread the translator was given). A caller
// that batches sentences itself uses encodeParts() and decodeBatch().
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_API_TRANSLATOR_H
#define LOOM_API_TRANSLATOR_H

#include "runtime/Session.h"
#include "text/Tokenizer.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace loom::runtime {
struct BeamOptions;
struct Hypothesis;
struct JoiningSentences;
} // namespace loom::runtime

namespace loom {

/// The files of a translator folder, by name.
inline constexpr const char kTranslateExecutable[] = "translate.loomx";
inline constexpr const char kModelWeights[] = "model.safetensors";
inline constexpr const char kVocabulary[] = "spm.model";
inline constexpr const char kModelConfig[] = "config.pbtxt";

/// The metadata key under which weights record vocabularyChecksum of the
/// vocabulary they were trained with.
inline constexpr const char kVocabularyChecksumKey[] = "vocabulary_crc32";

/// The CRC-32 of a vocabulary's serialized model, as 8 hex digits.
std::string vocabularyChecksum(const text::Tokenizer &tokenizer);

/// Whether the three files of a translator belong together: the executable
/// has @encode and @decode_step, the vocabulary fits its embeddings, and
/// the weights (by their header) were trained with this vocabulary when
/// they record it. What Translator::create checks, for tools that ship the
/// files without opening them (`loom export`).
Status checkTranslatorFiles(const runtime::Program &program,
                            const text::Tokenizer &tokenizer,
                            const std::string &weights);

struct TranslatorOptions {
  /// CPU threads; 0 uses one per hardware thread (at most 1024).
  int threads = 0;
  /// Decoders that translate batches side by side on the CPU, each with its
  /// own session and threads / workers of the threads (CTranslate2's
  /// inter_threads): where one batch's kernels are too small to split,
  /// throughput still grows with the cores. Each holds its own copy of the
  /// weights. A batch's translation is the same whichever decoder takes it.
  int workers = 1;
  /// The device ("cpu", "cuda", "cuda:N"); empty: the one the executable
  /// was compiled for (GPU 0 for a CUDA executable).
  std::string device;
  /// Files to use instead of the folder's own (empty: the folder's).
  std::string executable;
  std::string weights;
};

struct TranslationOptions {
  int64_t beam = 4;
  double alpha = 0.6;       // length penalty ((5 + len) / 6)^alpha
  /// The length penalty len^alpha instead (CTranslate2's length_penalty:
  /// at alpha 1 a score is the mean log-probability per token).
  bool powerLengthPenalty = false;
  double maxLenRatio = 1.5; // longest output per source token
  int64_t nbest = 1;
  int64_t batch = 32; // sentences decoded together, at most
  /// Where > 0, batches hold at most this many source tokens, padding
  /// included (sentences times the longest), in place of `batch` sentences.
  int64_t batchTokens = 0;
  /// A sentence longer than the executable takes: refused when false; when
  /// true, cut at clause-like boundaries into parts that fit, each
  /// translated alone, the translations joined with spaces (their scores
  /// and log-probabilities summed, n-best joined rank by rank).
  bool splitLong = false;
  /// Output tokens (eos not counted) at least and, where > 0, at most;
  /// the ratio above bounds the most too.
  int64_t minLength = 0, maxLength = 0;
  /// > 1 makes tokens a translation already holds less likely (1: none).
  double repetitionPenalty = 1;
  /// > 0: no n-gram of this many tokens appears twice in a translation.
  int64_t noRepeatNgram = 0;
  /// Words or phrases no translation contains (each as the vocabulary
  /// splits it: its pieces never follow one another in that order).
  std::vector<std::string> forbidden;
  /// Sampling, with beam 1 (CTranslate2's names): top-k 1 is the search
  /// itself; otherwise each token is drawn from the `samplingTopK` likeliest
  /// (0: all), within those the fewest whose probabilities reach
  /// `samplingTopP`, at `samplingTemperature`. A sentence's draws are
  /// seeded by `seed` and its own tokens, so the same sentence samples the
  /// same way in any batch, call or process.
  int64_t samplingTopK = 1;
  double samplingTopP = 1;
  double samplingTemperature = 1;
  uint64_t seed = 0;
  /// Whether Translation::alignment is wanted, and from which decoder
  /// layer's cross-attention (averaged over its heads): -1 the last, -2 the
  /// one before, ...; 0 the first.
  bool alignments = false;
  int64_t alignmentLayer = -1;
  /// Whether Translation::score and logProb are wanted; without them a
  /// greedy search (beam 1, nbest 1, alpha 0) skips each step's log-sum-exp
  /// and leaves them 0 (runtime::BeamOptions::scores).
  bool scores = true;
};

/// Whether sentences with options `a` and with `b` may share one
/// decodeBatch: every field that decoding reads is equal (splitLong acts
/// before, on encoding). Beside the struct, so that a field added there is
/// added here.
inline bool decodeAlike(const TranslationOptions &a,
                        const TranslationOptions &b) {
  return a.beam == b.beam && a.alpha == b.alpha &&
         a.powerLengthPenalty == b.powerLengthPenalty &&
         a.maxLenRatio == b.maxLenRatio && a.nbest == b.nbest &&
         a.batch == b.batch && a.batchTokens == b.batchTokens &&
         a.scores == b.scores && a.minLength == b.minLength &&
         a.maxLength == b.maxLength &&
         a.repetitionPenalty == b.repetitionPenalty &&
         a.noRepeatNgram == b.noRepeatNgram && a.forbidden == b.forbidden &&
         a.samplingTopK == b.samplingTopK && a.samplingTopP == b.samplingTopP &&
         a.samplingTemperature == b.samplingTemperature && a.seed == b.seed &&
         a.alignments == b.alignments && a.alignmentLayer == b.alignmentLayer;
}

struct Translation {
  std::string text;
  double score = 0;   // logProb / length penalty
  double logProb = 0; // sum of the tokens' log-probabilities
  int64_t tokens = 0; // target tokens, eos left out
  /// With TranslationOptions::alignments: (source piece, target piece)
  /// pairs, from 0, one per target piece whose step attended most to a
  /// source piece (one that attended most to the source's eos has none),
  /// in target order; the pieces are the vocabulary's.
  std::vector<std::pair<int32_t, int32_t>> alignment;
  int64_t sourceTokens = 0; // the source's pieces, eos left out
};

/// How scorePairs normalizes and batches.
struct ScoreOptions {
  double alpha = 0.6; // PairScore::score's length penalty, as translating's
  bool powerLengthPenalty = false;
  int64_t batch = 32;      // pairs scored together, at most
  int64_t batchTokens = 0; // > 0: at most this many source tokens a batch
};

/// A translation's log-probability given its source, as the search scores
/// a hypothesis that ends with eos.
struct PairScore {
  double logProb = 0; // the sum of tokenLogProbs
  double score = 0;   // logProb / length penalty of the tokens, eos counted
  /// The target's pieces and then "</s>", and the log-probability of each.
  std::vector<std::string> tokens;
  std::vector<float> tokenLogProbs;
};

class Translator {
public:
  /// Opens the translator folder `dir`.
  static ErrorOr<std::unique_ptr<Translator>>
  open(const std::string &dir, const TranslatorOptions &options = {});
  /// A translator of an executable already loaded (`loom translate` compiles
  /// one in the same process) with the parameters at `weights`.
  static ErrorOr<std::unique_ptr<Translator>>
  create(std::shared_ptr<const runtime::Program> program,
         text::Tokenizer tokenizer, const std::string &weights, int threads);
  /// The same on `device`, which must run the executable's target.
  static ErrorOr<std::unique_ptr<Translator>>
  create(std::shared_ptr<const runtime::Program> program,
         text::Tokenizer tokenizer, const std::string &weights,
         std::shared_ptr<runtime::Device> device);
  /// The same with one decoder per device (TranslatorOptions::workers).
  static ErrorOr<std::unique_ptr<Translator>>
  create(std::shared_ptr<const runtime::Program> program,
         text::Tokenizer tokenizer, const std::string &weights,
         std::vector<std::shared_ptr<runtime::Device>> devices);
  /// The device `options` names for `program` (openDevice's errors).
  static ErrorOr<std::shared_ptr<runtime::Device>>
  openDeviceFor(const runtime::Program &program,
                const TranslatorOptions &options);
  /// One device per worker, the threads split between them; more than one
  /// worker is for the CPU only.
  static ErrorOr<std::vector<std::shared_ptr<runtime::Device>>>
  openDevicesFor(const runtime::Program &program,
                 const TranslatorOptions &options);

  /// Per sentence, its n-best translations, best first. `warn`, when given,
  /// receives one message per sentence translated in parts.
  ErrorOr<std::vector<std::vector<Translation>>>
  translate(const std::vector<std::string> &sentences,
            const TranslationOptions &options,
            const std::function<void(const std::string &)> &warn = {});
  /// The same, each translation starting with `targetPrefixes[i]` (one per
  /// sentence, or none; an empty one is no prefix), which the beam shares
  /// and whose tokens count in its score as chosen tokens do. A sentence
  /// split for its length takes its prefix in its first part.
  /// `beforeBatch`, when given, is asked before each batch decodes (from
  /// the workers' threads, so it must be thread-safe): a failure stops the
  /// call with it, the batches under way finishing first (a caller's
  /// interruption: Ctrl-C in the Python module).
  ErrorOr<std::vector<std::vector<Translation>>>
  translate(const std::vector<std::string> &sentences,
            const std::vector<std::string> &targetPrefixes,
            const TranslationOptions &options,
            const std::function<void(const std::string &)> &warn = {},
            const std::function<Status()> &beforeBatch = {});

  /// Per pair (sources[i], targets[i]), the log-probability the model gives
  /// targets[i] followed by eos, batched; a translation translate() returned
  /// scores what translate() reported for it (with the same alpha and
  /// form, and no controls that edit scores). A blank target is eos alone.
  /// A source or target longer than the model takes is refused, as is a
  /// blank source.
  ErrorOr<std::vector<PairScore>>
  scorePairs(const std::vector<std::string> &sources,
             const std::vector<std::string> &targets,
             const ScoreOptions &options = {});

  // The parts of translate(), for callers that form batches themselves
  // (`loom serve` batches the sentences of concurrent requests): a sentence
  // is encoded once, then decoded in any batch on any worker, and its
  // translation is the same whatever it was batched with.

  /// Whether `options` can be decoded by this executable (beam within its
  /// rows, finite positive ratios); the message names the option.
  Status checkOptions(const TranslationOptions &options) const;
  /// The most sentences one decodeBatch takes with `options`.
  int64_t maxBatchSentences(const TranslationOptions &options) const;
  /// `sentence` as the decoder takes it: its pieces followed by eos, one
  /// source per part, none when it is blank. A sentence longer than
  /// maxSourceTokens() is cut into parts that fit where `splitLong`
  /// (TranslationOptions::splitLong), else refused. Refuses invalid UTF-8.
  /// Messages name it as `number`. Thread-safe.
  ErrorOr<std::vector<std::vector<int32_t>>>
  encodeParts(const std::string &sentence, int64_t number,
              bool splitLong) const;
  /// A target prefix as decodeBatch takes it: its pieces, no eos (empty for
  /// an empty prefix). Refuses invalid UTF-8, naming sentence `number`.
  ErrorOr<std::vector<int32_t>> encodePrefix(const std::string &prefix,
                                             int64_t number) const;
  /// Decodes `sources` (encodeParts', none blank; at most
  /// maxBatchSentences) together on decoder `worker`; per source its
  /// n-best translations. `numbers` (one per source) name them in
  /// messages. Calls on different workers run side by side; a call on a
  /// busy worker waits for it. `options` must pass checkOptions.
  ErrorOr<std::vector<std::vector<Translation>>> decodeBatch(
      int worker, const std::vector<const std::vector<int32_t> *> &sources,
      const std::vector<int64_t> &numbers, const TranslationOptions &options,
      const std::vector<std::vector<int32_t>> &targetPrefixes = {});

  /// Sentences that join a batch decodeInFlight runs.
  struct JoiningSources {
    std::vector<const std::vector<int32_t> *> sources; // encodeParts'
    std::vector<int64_t> numbers;                      // one per source
    std::vector<std::vector<int32_t>> prefixes; // none, or one per source
  };
  /// Whether decodeInFlight can run: the executable's @decode_step takes
  /// each sentence's start (one compiled before it was added does not).
  bool decodesInFlight() const;
  /// decodeBatch with in-flight batching: `first` starts a batch on
  /// `worker`; before each later step, `more(room)` may hand over up to
  /// `room` sentences (the sources must live until they are done), which
  /// join the batch there and translate as they would alone. `done(i,
  /// n-best)` is called as each sentence ends, i counting first's sources
  /// and then those that joined, in order. Returns once every sentence
  /// ended; after an error, done is not called for those left.
  Status decodeInFlight(
      int worker, const JoiningSources &first, const TranslationOptions &o,
      const std::function<JoiningSources(int64_t room)> &more,
      const std::function<void(size_t, std::vector<Translation>)> &done);

  const runtime::Program &program() const { return sessions[0]->program(); }
  /// Decoders translating side by side (TranslatorOptions::workers).
  int workers() const { return int(sessions.size()); }
  const text::Tokenizer &vocabulary() const { return tokenizer; }
  /// The longest source, eos included, the executable takes.
  int64_t maxSourceTokens() const;

  /// Times every kernel every decoder runs from now on (each step then waits
  /// for its kernel: on an asynchronous device the figures slow decoding).
  void setProfiling(bool on);
  /// Kernels by decreasing seconds, summed over the decoders.
  std::vector<runtime::KernelProfile> profile() const;

private:
  /// Runs decode(worker, b) for batches b = count - 1 down to 0, the workers
  /// side by side, each taking the next batch not taken (longest first
  /// where the batches are sorted by length).
  void
  forEachBatch(size_t count,
               const std::function<void(int worker, size_t batch)> &decode);

  Translator(std::vector<std::unique_ptr<runtime::Session>> sessions,
             text::Tokenizer tokenizer);

  // The parts of a search decodeBatch and decodeInFlight share.
  /// What the search takes per sentence of `part` (ids, length limits,
  /// numbers, prefixes, sampling seeds), checked: none blank, the counts
  /// agree. No ids where `part` has no sentence.
  ErrorOr<runtime::JoiningSentences>
  decoderInputs(const JoiningSources &part, const TranslationOptions &o) const;
  /// The search `o` asks for, without what is per sentence.
  ErrorOr<runtime::BeamOptions>
  searchOptions(const TranslationOptions &o) const;
  /// A sentence's own sampling seed, from the seed and its tokens.
  static uint64_t samplingSeed(const std::vector<int32_t> &source,
                               uint64_t seed);
  /// The most tokens `source`'s translation takes (its prefix included).
  int64_t sentenceMaxLen(const std::vector<int32_t> &source,
                         size_t prefixTokens,
                         const TranslationOptions &o) const;
  /// A search's n-best for `source` as translations.
  ErrorOr<std::vector<Translation>>
  translationsOf(const std::vector<runtime::Hypothesis> &nbest,
                 const std::vector<int32_t> &source) const;

  std::vector<std::unique_ptr<runtime::Session>> sessions;
  /// One per session: a session decodes one batch at a time.
  std::vector<std::unique_ptr<std::mutex>> sessionInUse;
  text::Tokenizer tokenizer;
  std::mutex calls;
};

} // namespace loom

#endif // LOOM_API_TRANSLATOR_H
