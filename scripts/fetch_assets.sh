#!/usr/bin/env bash
# Fetch the JavaScript the rendered book needs offline (MathJax 3, RequireJS, the ipywidgets HTML manager) from the
# npm registry into _assets/ (git-ignored; Sphinx copies it to _build/html/_static/). Nothing third-party is committed.
set -euo pipefail
cd "$(dirname "$0")/.."
packages="mathjax@3.2.2 requirejs@2.3.8 @jupyter-widgets/html-manager@1.0.15"
dest=_assets
if [ -f "$dest/.packages" ] && [ "$(cat "$dest/.packages")" = "$packages" ]; then exit 0; fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent $packages >/dev/null)
rm -rf "$dest"
mkdir -p "$dest/mathjax" "$dest/widgets"
unpack() { mkdir -p "$tmp/$1" && tar xzf "$tmp"/$1-*.tgz -C "$tmp/$1"; }
unpack mathjax && cp -r "$tmp/mathjax/package/es5/." "$dest/mathjax/"
unpack requirejs && cp "$tmp/requirejs/package/require.js" "$dest/widgets/require.js"
unpack jupyter-widgets-html-manager && find "$tmp/jupyter-widgets-html-manager/package/dist" -maxdepth 1 -type f \
  ! -name '*.map' ! -name 'embed.js' ! -name 'libembed-amd.js' -exec cp {} "$dest/widgets/" \;
echo "$packages" > "$dest/.packages"
echo "fetched $packages into $dest/ ($(du -sh "$dest" | cut -f1))"
