//===- Error.cpp - The one error type of the runtime ----------------------===//

#include "abi/Error.h"

namespace loom {

const char *errorCodeName(ErrorCode code) {
  switch (code) {
  case ErrorCode::Ok:
    return "ok";
  case ErrorCode::InvalidArgument:
    return "invalid argument";
  case ErrorCode::NotFound:
    return "not found";
  case ErrorCode::Io:
    return "I/O error";
  case ErrorCode::Corrupt:
    return "corrupt";
  case ErrorCode::Unsupported:
    return "unsupported";
  case ErrorCode::OutOfMemory:
    return "out of memory";
  case ErrorCode::Internal:
    return "internal error";
  }
  return "unknown error";
}

} // namespace loom
