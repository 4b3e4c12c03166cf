//===- LineReader.h - Lines of text, whatever ends them ---------*- C++ -*-===//
//
// Every reader of text in Loom (corpora, the tokenizer's trainer, the lines
// to translate) splits lines here, so that they all agree on what a line is:
//   - a line ends at "\n", "\r\n" or a lone "\r" (files saved by old Mac
//     editors), so that a CR-only file is not one enormous line;
//   - a line is at most `maxBytes` long; the reader keeps that many bytes,
//     consumes the rest and says the line was too long, so a file without
//     a line break cannot make the reader hold it whole, and each caller
//     decides whether to refuse the line or skip it.
// Header-only: the SentencePiece module, which links nothing of Loom's,
// uses it too.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_TEXT_LINEREADER_H
#define LOOM_TEXT_LINEREADER_H

#include <cstddef>
#include <istream>
#include <string>

namespace loom::text {

/// The longest line any reader accepts: far more than any sentence, little
/// enough that tokenizing one takes a moment.
constexpr size_t kMaxLineBytes = size_t(1) << 20;

class LineReader {
public:
  explicit LineReader(std::istream &in, size_t maxBytes = kMaxLineBytes)
      : in(in), maxBytes(maxBytes) {}

  /// Reads the next line into `line`, without its terminator. Returns false
  /// at the end of the input (a last line without a terminator is still a
  /// line). After a line of more than maxBytes, `tooLong()` is true and
  /// `line` holds its first maxBytes bytes.
  bool next(std::string &line) {
    line.clear();
    longLine = false;
    std::streambuf *buffer = in.rdbuf();
    if (!buffer)
      return false;
    bool any = false;
    for (;;) {
      int c = buffer->sbumpc();
      if (c == std::char_traits<char>::eof()) {
        if (!any)
          in.setstate(std::ios::eofbit);
        break;
      }
      any = true;
      if (c == '\n')
        break;
      if (c == '\r') {
        if (buffer->sgetc() == '\n')
          buffer->sbumpc();
        break;
      }
      if (line.size() < maxBytes)
        line.push_back(static_cast<char>(c));
      else
        longLine = true;
    }
    if (any)
      ++count;
    return any;
  }

  bool tooLong() const { return longLine; }
  /// The 1-based number of the line `next` returned last.
  size_t lineNumber() const { return count; }

private:
  std::istream &in;
  size_t maxBytes;
  size_t count = 0;
  bool longLine = false;
};

} // namespace loom::text

#endif // LOOM_TEXT_LINEREADER_H
