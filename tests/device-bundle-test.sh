#!/usr/bin/env bash
# The device bundle (scripts/device-bundle.sh) packs the runtime-only
# conformance suite with its libraries, and the suite runs from the
# unpacked folder through the packed loader, with no environment.
set -euo pipefail
build=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
DEVICE_BUNDLE_XZ_LEVEL=0 "$(dirname "$0")/../scripts/device-bundle.sh" "$build" "$work/b.tar.xz" \
  DeviceConformanceTest DeviceAgreementTest loom-translate
mkdir "$work/b"
tar -xJf "$work/b.tar.xz" -C "$work/b"
env -i PATH=/usr/bin:/bin "$work/b/run" DeviceConformanceTest --gtest_filter='*/cpu' --gtest_brief=1
env -i PATH=/usr/bin:/bin "$work/b/run" loom-translate --help > /dev/null
