#!/usr/bin/env bash
# Refreshes the README's picture of the console, docs/console-today.png: the console's browser test
# (deploy/console/browser_test.py, headless Chromium against a real `ledgerd serve`) saves Today after the day it
# walked was settled. Needs the debug build (`swift build`) and Debian's chromium, chromium-driver and python3-selenium.
set -euo pipefail
cd "$(dirname "$0")/../.."
/usr/bin/python3 deploy/console/browser_test.py --ledgerd .build/debug/ledgerd --docs-screenshot docs/console-today.png "$@"
echo "docs/console-today.png refreshed"
