#!/usr/bin/env bash
# Rewrites Sources/OpenAPIOverhead/Generated/ (types and server of listDisputes and captureOrder) from the ledger's
# document, Sources/LedgerAPI/openapi.yaml, with deploy/openapi/generate-swift.sh (the generator pinned in
# deploy/openapi/generator/) and this folder's configuration. The output is committed: no build plugin.
#
#   bench/openapi-overhead/generate.sh            # rewrite
#   bench/openapi-overhead/generate.sh --check    # exit 1 when the committed files differ from what it generates
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here/../.."
exec deploy/openapi/generate-swift.sh --config "$here/openapi-generator-config.yaml" --output "$here/Sources/OpenAPIOverhead/Generated" "$@"
