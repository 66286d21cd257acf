#!/usr/bin/env bash
# Fetch the JavaScript the rendered book needs offline from the npm registry into _assets/ (git-ignored; Sphinx copies
# it to _build/html/_static/): of MathJax 4 (which breaks long formulas into lines), only what the pages load:
# tex-chtml.js and its New Computer Modern font (the CHTML woff2 files and the character ranges it loads on demand);
# the browser test fails on any request that does not resolve. Nothing third-party is committed.
set -euo pipefail
cd "$(dirname "$0")/.."
version=4.1.3
packages="mathjax@$version @mathjax/mathjax-newcm-font@$version"
dest=_assets
if [ -f "$dest/.packages" ] && [ "$(cat "$dest/.packages")" = "$packages" ]; then exit 0; fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent $packages >/dev/null)
rm -rf "$dest"
mkdir -p "$dest/mathjax/fonts/mathjax-newcm"
unpack() { mkdir -p "$tmp/$1" && tar xzf "$tmp/$1-$version.tgz" -C "$tmp/$1"; }
unpack mathjax
unpack mathjax-mathjax-newcm-font
cp "$tmp/mathjax/package/tex-chtml.js" "$dest/mathjax/"
mkdir -p "$dest/mathjax/a11y"                     # MathML for screen readers (_config.yml: assistiveMml)
cp "$tmp/mathjax/package/a11y/assistive-mml.js" "$dest/mathjax/a11y/"
cp -r "$tmp/mathjax-mathjax-newcm-font/package/chtml" "$tmp/mathjax-mathjax-newcm-font/package/chtml.js" \
  "$dest/mathjax/fonts/mathjax-newcm/"
echo "$packages" > "$dest/.packages"
echo "fetched $packages into $dest/ ($(du -sh "$dest" | cut -f1))"
