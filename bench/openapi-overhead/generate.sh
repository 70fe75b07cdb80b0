#!/usr/bin/env bash
# Rewrites Sources/OpenAPIOverhead/Generated/ (types and server of listDisputes and captureOrder) from the ledger's
# document, Sources/LedgerAPI/openapi.yaml, with the generator pinned in deploy/openapi/generator/ (1.14.3), as
# deploy/openapi/generate-swift.sh does for Sources/LedgerAPI/Generated/. The output is committed: no build plugin.
#
#   bench/openapi-overhead/generate.sh            # rewrite
#   bench/openapi-overhead/generate.sh --check    # exit 1 when the committed files differ from what it generates
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"

check=false
case "${1:-}" in
  --check) check=true ;;
  "") ;;
  *) echo "usage: $0 [--check]" >&2; exit 2 ;;
esac

document="$root/Sources/LedgerAPI/openapi.yaml"
config="$here/openapi-generator-config.yaml"
target="$here/Sources/OpenAPIOverhead/Generated"
package="$root/deploy/openapi/generator"

swift build --package-path "$package" --product swift-openapi-generator >&2
generator="$(swift build --package-path "$package" --show-bin-path)/swift-openapi-generator"

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
if ! "$generator" generate "$document" --config "$config" --output-directory "$out/Generated" >"$out/log" 2>&1; then
  cat "$out/log" >&2
  exit 1
fi
grep -i 'warning' "$out/log" | sort -u >&2 || true

if $check; then
  if ! diff -r "$target" "$out/Generated" >"$out/diff"; then
    head -50 "$out/diff" >&2
    echo "$target is stale: run $0 and commit the result" >&2
    exit 1
  fi
  echo "$target: as generated from $document"
else
  rm -rf "$target"
  cp -R "$out/Generated" "$target"
  echo "wrote $target ($(cat "$target"/*.swift | wc -l) lines)"
fi
