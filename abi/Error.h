//===- Error.h - The one error type of the runtime --------------*- C++ -*-===//
//
// Everything below the compiler (abi/, runtime/, text/, the C API) reports a
// failure the same way: a `Status` that is either success or an error code
// with a message naming what is wrong, and `ErrorOr<T>` for a value or such a
// status. Both are [[nodiscard]], so an ignored failure is a compile warning
// rather than a silent wrong answer. The runtime links no LLVM, so these stand
// in for llvm::Error and llvm::Expected; the compiler converts at its edge.
//
// The codes are few on purpose: they are what a caller of the C API can act
// on (fix its input, look for a file, give up). The message carries the rest.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_ABI_ERROR_H
#define LOOM_ABI_ERROR_H

#include <optional>
#include <string>
#include <utility>

namespace loom {

/// Values are part of the C API (include/loom/loom.h spells them again).
enum class ErrorCode : int {
  Ok = 0,
  InvalidArgument = 1, // the caller's input: shapes, options, ids, text
  NotFound = 2,        // a file, an entry point, a tensor by name
  Io = 3,              // reading or writing a file failed
  Corrupt = 4,         // a file exists but is damaged or of another format
  Unsupported = 5,     // this runtime or machine cannot run it (CPU features)
  OutOfMemory = 6,
  Internal = 7, // a bug: an invariant the runtime itself broke
};

/// "invalid argument", "not found", ...
const char *errorCodeName(ErrorCode code);

class [[nodiscard]] Status {
public:
  /// Success.
  Status() = default;
  static Status success() { return Status(); }
  static Status failure(std::string message,
                        ErrorCode code = ErrorCode::InvalidArgument) {
    Status status;
    status.errorCode = code == ErrorCode::Ok ? ErrorCode::Internal : code;
    status.text = std::move(message);
    return status;
  }

  bool ok() const { return errorCode == ErrorCode::Ok; }
  explicit operator bool() const { return ok(); }
  ErrorCode code() const { return errorCode; }
  /// Why it failed; empty on success.
  const std::string &message() const { return text; }
  /// The same failure with `context` before its message ("'f.loomx': ...").
  Status withContext(const std::string &context) const {
    return ok() ? *this : failure(context + ": " + text, errorCode);
  }

private:
  ErrorCode errorCode = ErrorCode::Ok;
  std::string text;
};

/// A value, or the failure that says why there is none.
template <typename T> class [[nodiscard]] ErrorOr {
public:
  ErrorOr(T value) : value(std::move(value)) {}
  /// A failure; a successful Status here is a bug and becomes Internal.
  ErrorOr(Status failed) : failed(std::move(failed)) {
    if (this->failed.ok())
      this->failed =
          Status::failure("ErrorOr built from success", ErrorCode::Internal);
  }
  static ErrorOr failure(std::string message,
                         ErrorCode code = ErrorCode::InvalidArgument) {
    return ErrorOr(Status::failure(std::move(message), code));
  }

  explicit operator bool() const { return value.has_value(); }
  T &operator*() { return *value; }
  const T &operator*() const { return *value; }
  T *operator->() { return &*value; }
  const T *operator->() const { return &*value; }
  /// Success, or the failure.
  const Status &status() const { return failed; }
  /// The reason for the failure; empty on success.
  const std::string &error() const { return failed.message(); }
  ErrorCode code() const { return failed.code(); }

private:
  std::optional<T> value;
  Status failed;
};

} // namespace loom

/// Returns a failed Status (or anything built from one) from the enclosing
/// function.
#define LOOM_RETURN_IF_ERROR(expr)                                             \
  do {                                                                         \
    if (::loom::Status loomStatus_ = (expr); !loomStatus_.ok())                \
      return loomStatus_;                                                      \
  } while (false)

#endif // LOOM_ABI_ERROR_H
