//===- ConfigFuzzer.cpp - Fuzzing the config parser -----------------------===//
//
// Protobuf text in, `parseConfig` (the parser, the error collector that
// places the first error, `validateConfig`) over it. Beyond not crashing,
// what parseConfig accepts must hold up:
//   - a refusal carries a message;
//   - an accepted config validates again unchanged (validation fills its
//     defaults once and for all);
//   - its own text, as `loom compile` records it in an executable, parses
//     back to the same config.
//
//===----------------------------------------------------------------------===//

#include "frontend/Config.h"
#include "fuzz/FuzzUtil.h"

#include <google/protobuf/text_format.h>
#include <google/protobuf/util/message_differencer.h>

using loom::TransformerConfig;
using loom::fuzz::fail;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  llvm::Expected<TransformerConfig> config = loom::parseConfig(text, "fuzz");
  if (!config) {
    if (llvm::toString(config.takeError()).empty())
      fail("a refused config without a message");
    return 0;
  }

  TransformerConfig again = *config;
  if (llvm::Error err = loom::validateConfig(again))
    fail("an accepted config fails validation: " +
         llvm::toString(std::move(err)));
  if (!google::protobuf::util::MessageDifferencer::Equals(again, *config))
    fail("validating an accepted config changes it");

  std::string printed;
  if (!google::protobuf::TextFormat::PrintToString(*config, &printed))
    fail("an accepted config does not print");
  llvm::Expected<TransformerConfig> reparsed =
      loom::parseConfig(printed, "printed");
  if (!reparsed)
    fail("the text of an accepted config is refused: " +
         llvm::toString(reparsed.takeError()) + "\n" + printed);
  if (!google::protobuf::util::MessageDifferencer::Equals(*reparsed, *config))
    fail("the text of an accepted config parses to another config:\n" +
         printed);
  return 0;
}
