#!/usr/bin/env bash
# Debian's Chromium, which the browser tests and `make pdf` drive: installed with apt-get (as root, or through sudo)
# where neither `chromium` nor $NCBOOK_CHROMIUM is there; elsewhere one line saying what to install.
set -euo pipefail
if [ -n "${NCBOOK_CHROMIUM:-}" ] && [ -x "${NCBOOK_CHROMIUM}" ]; then exit 0; fi
if command -v chromium >/dev/null 2>&1; then exit 0; fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "Chromium is needed (browser tests, PDF) and apt-get is not here: install Chromium and put \`chromium\` on the PATH, or set NCBOOK_CHROMIUM to its binary" >&2
  exit 1
fi
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "Installing Debian's chromium (apt-get; about a minute)..."
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends chromium >/dev/null
command -v chromium >/dev/null
