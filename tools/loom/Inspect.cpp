//===- Inspect.cpp - `loom inspect` ---------------------------------------===//
//
// Prints an executable as protobuf text (runtime/executable.proto), so that
// what the writer wrote can be read: the CPU target, every buffer with its
// shape, the kernels, the entry points and their steps. The file is loaded
// and validated as the runtime would load it, so a file that prints is one
// the runtime accepts (on a machine with the features it records). The
// kernels' machine code becomes one line with its size and checksum, and so
// does any constant's data past a few dozen bytes; the checksum prints in
// hex, as the loader's messages show it. A CUDA executable's PTX is elided
// the same way; `--ptx` prints it instead of the executable.
//
//===----------------------------------------------------------------------===//

#include "tools/loom/Commands.h"
#include "tools/loom/Common.h"

#include "runtime/Executable.h"

#include "llvm/Support/raw_ostream.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/text_format.h>

#include <memory>
#include <sstream>

namespace loom::cli {

namespace {

using google::protobuf::TextFormat;

/// Constants up to this many bytes print in full.
constexpr size_t kShownDataBytes = 32;

std::string hex(uint64_t value) {
  std::ostringstream os;
  os << "0x" << std::hex << value;
  return os.str();
}

/// Prints bytes longer than `shown` as "<N bytes, FNV-1a 64 0x...>", a
/// string in place of the bytes, so the text stays well-formed.
class ElidedBytesPrinter : public TextFormat::FastFieldValuePrinter {
public:
  explicit ElidedBytesPrinter(size_t shown) : shown(shown) {}
  void PrintBytes(const std::string &value,
                  TextFormat::BaseTextGenerator *generator) const override {
    if (value.size() <= shown)
      return FastFieldValuePrinter::PrintBytes(value, generator);
    generator->PrintString("\"<" + std::to_string(value.size()) +
                           " bytes, FNV-1a 64 " + hex(fnv1a64(value)) + ">\"");
  }

private:
  size_t shown;
};

class HexPrinter : public TextFormat::FastFieldValuePrinter {
public:
  void PrintUInt64(uint64_t value,
                   TextFormat::BaseTextGenerator *generator) const override {
    generator->PrintString(hex(value));
  }
};

llvm::Error inspect(const std::string &path, bool ptx) {
  ErrorOr<Executable> exe = loadExecutable(path);
  if (!exe)
    return llvm::createStringError(llvm::inconvertibleErrorCode(), exe.error());
  if (ptx) {
    if (exe->target() != Executable::CUDA)
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          "--ptx: '" + path + "' is an executable for " +
              Executable::Target_Name(exe->target()) + ", which has no PTX");
    llvm::outs() << exe->cuda_target().ptx();
    return llvm::Error::success();
  }
  const google::protobuf::Descriptor *executable = Executable::descriptor();
  const google::protobuf::Descriptor *buffer = runtime::Buffer::descriptor();
  TextFormat::Printer printer;
  // The printer owns the field printers.
  printer.RegisterFieldValuePrinter(executable->FindFieldByName("code"),
                                    new ElidedBytesPrinter(0));
  printer.RegisterFieldValuePrinter(
      executable->FindFieldByName("code_checksum"), new HexPrinter());
  printer.RegisterFieldValuePrinter(buffer->FindFieldByName("data"),
                                    new ElidedBytesPrinter(kShownDataBytes));
  printer.RegisterFieldValuePrinter(
      runtime::CudaTarget::descriptor()->FindFieldByName("ptx"),
      new ElidedBytesPrinter(0));
  std::string text;
  if (!printer.PrintToString(*exe, &text))
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "cannot print '" + path + "' as text");
  llvm::outs() << text;
  return llvm::Error::success();
}

} // namespace

void addInspectCommand(CLI::App &app, int &exitCode) {
  auto path = std::make_shared<std::string>();
  auto ptx = std::make_shared<bool>(false);
  CLI::App *cmd = app.add_subcommand(
      "inspect", "Print a compiled executable (.loomx) as protobuf text");
  cmd->add_option("file", *path, "The executable, as `loom compile` wrote it")
      ->required();
  cmd->add_flag("--ptx", *ptx,
                "Print the PTX of a CUDA executable's kernels instead");
  cmd->callback([path, ptx, &exitCode] {
    if (llvm::Error err = inspect(*path, *ptx))
      exitCode = fail("inspect", std::move(err));
  });
}

} // namespace loom::cli
