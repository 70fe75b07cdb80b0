#!/usr/bin/env bash
# The ledger API's Swift types and client, generated from its document by Apple's swift-openapi-generator (issue 31):
#
#   deploy/openapi/generate-swift.sh           # rewrites Sources/LedgerAPI/Generated/ from Sources/LedgerAPI/openapi.yaml
#   deploy/openapi/generate-swift.sh --check   # fails (exit 1) when the committed files differ from what it generates
#   deploy/openapi/generate-swift.sh --config C --output D [--check]
#                                              # the same for another configuration and folder (bench/openapi-overhead)
#
# The generated sources are committed rather than made by the generator's build plugin on every build: the plugin
# builds the generator, OpenAPIKit and Yams in each clean build of the package (README, "The published contract" says
# what that measured). The generator's version is pinned in deploy/openapi/generator/Package.swift (its own package, so
# the ledger's does not depend on it), its configuration (modes, the operations generated) is
# deploy/openapi/openapi-generator-config.yaml. `.ci/run` runs `--check`. After editing the document, run this and
# deploy/openapi/generate.py (which embeds the document in the binary).
set -euo pipefail
cd "$(dirname "$0")/../.."

check=false
document=Sources/LedgerAPI/openapi.yaml
config=deploy/openapi/openapi-generator-config.yaml
target=Sources/LedgerAPI/Generated
package=deploy/openapi/generator
while [ $# -gt 0 ]; do
  case "$1" in
    --check) check=true; shift ;;
    --config) config=$2; shift 2 ;;
    --output) target=$2; shift 2 ;;
    *) echo "usage: $0 [--config FILE --output DIR] [--check]" >&2; exit 2 ;;
  esac
done

swift build --package-path "$package" --product swift-openapi-generator >&2
generator="$(swift build --package-path "$package" --show-bin-path)/swift-openapi-generator"

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
if ! "$generator" generate "$document" --config "$config" --output-directory "$out/Generated" >"$out/log" 2>&1; then
  cat "$out/log" >&2
  exit 1
fi
# Its warnings (a schema it cannot represent is skipped, and with it the property that uses it) are worth reading.
grep -i 'warning' "$out/log" | sort -u >&2 || true

if $check; then
  if ! diff -r "$target" "$out/Generated" >"$out/diff"; then
    head -50 "$out/diff" >&2
    echo "$target is stale: run deploy/openapi/generate-swift.sh (with the same options) and commit the result" >&2
    exit 1
  fi
  echo "$target: as generated from $document"
else
  rm -rf "$target"
  cp -R "$out/Generated" "$target"
  echo "wrote $target ($(cat "$target"/*.swift | wc -l) lines)"
fi
