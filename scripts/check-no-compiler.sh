#!/usr/bin/env bash
# The runtime side of Loom links no compiler. Checks, for each file given
# (static archives, shared libraries, executables), that it neither defines
# nor references an LLVM or MLIR symbol and, for linked binaries, that it
# loads no libLLVM or libMLIR. With --sources DIR, also checks that the
# runtime's folders include nothing of the compiler's.
# Exit 1 with the offending symbols, libraries or lines.
set -euo pipefail

status=0
if [ "${1:-}" = "--sources" ]; then
  root=$2
  shift 2
  if hits=$(cd "$root" && grep -rnE \
      '#include *[<"](ir|passes|codegen|frontend|tools)/|#include *[<"](mlir|llvm)/' \
      abi runtime text api serve include); then
    echo "check-no-compiler: the runtime includes the compiler:" >&2
    echo "$hits" >&2
    status=1
  fi
fi

for file in "$@"; do
  if symbols=$(nm -C "$file" 2>/dev/null | grep -E '(^|[^A-Za-z_])(llvm|mlir)::' | head -20) && [ -n "$symbols" ]; then
    echo "check-no-compiler: $file has LLVM/MLIR symbols:" >&2
    echo "$symbols" >&2
    status=1
  fi
  case "$file" in
    *.a) ;;
    *)
      if libs=$(ldd "$file" 2>/dev/null | grep -iE 'libLLVM|libMLIR') && [ -n "$libs" ]; then
        echo "check-no-compiler: $file loads the compiler's libraries:" >&2
        echo "$libs" >&2
        status=1
      fi
      ;;
  esac
done
exit $status
