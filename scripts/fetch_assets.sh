#!/usr/bin/env bash
# Fetch the JavaScript the rendered book needs offline from the npm registry into _assets/ (git-ignored; Sphinx copies
# it to _build/html/_static/): of MathJax 3, only what the pages load (tex-chtml.js and its CHTML woff2 fonts; the
# browser test fails on any request that does not resolve). Nothing third-party is committed.
set -euo pipefail
cd "$(dirname "$0")/.."
packages="mathjax@3.2.2"
dest=_assets
if [ -f "$dest/.packages" ] && [ "$(cat "$dest/.packages")" = "$packages" ]; then exit 0; fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent $packages >/dev/null)
rm -rf "$dest"
mkdir -p "$dest/mathjax/output/chtml/fonts"
unpack() { mkdir -p "$tmp/$1" && tar xzf "$tmp"/$1-*.tgz -C "$tmp/$1"; }
unpack mathjax
cp "$tmp/mathjax/package/es5/tex-chtml.js" "$dest/mathjax/"
cp -r "$tmp/mathjax/package/es5/output/chtml/fonts/woff-v2" "$dest/mathjax/output/chtml/fonts/"
echo "$packages" > "$dest/.packages"
echo "fetched $packages into $dest/ ($(du -sh "$dest" | cut -f1))"
