// Inline formulas break across lines only where the column is narrow (a phone); at desktop width each is kept whole
// (MathJax reads window.MathJax when it starts, after this script: it is deferred).
if (window.MathJax && window.MathJax.output && window.innerWidth > 700) {
  window.MathJax.output.linebreaks = {inline: false};
}
// Small reading aids for the book's pages (loaded on every page; see _config.yml html_js_files).

// Click a figure to see it full size (its natural pixel size, scrollable); click again or press Escape to close.
document.addEventListener("click", function (e) {
  var img = e.target.closest && e.target.closest(".bd-article figure img, .bd-article .cell_output img");
  var open = document.getElementById("ncbook-zoom");
  if (open) { open.remove(); e.preventDefault(); return; }
  if (!img) return;
  var box = document.createElement("div");
  box.id = "ncbook-zoom";
  box.setAttribute("role", "dialog");
  box.setAttribute("aria-label", "figure at full size; click or press Escape to close");
  var big = document.createElement("img");
  big.src = img.currentSrc || img.src;
  big.alt = img.alt;
  box.appendChild(big);
  document.body.appendChild(box);
  e.preventDefault();
});
document.addEventListener("keydown", function (e) {
  var open = document.getElementById("ncbook-zoom");
  if (open && e.key === "Escape") open.remove();
});

// A displayed formula that MathJax cannot break into lines (an aligned block wider than a phone) scrolls in its own
// box: marked ncbook-scrolls (ncbook.css), it says so above the formula, beside its equation number, and shades the
// edge that has more to show. Rechecked when the window is resized.
function ncbookMarkScrollingMath() {
  document.querySelectorAll(".bd-article div.math").forEach(function (d) {
    d.classList.remove("ncbook-scrolls");
    var c = d.querySelector("mjx-container") || d;                  // MathJax's box is the one that scrolls
    if (c.scrollWidth > c.clientWidth + 1 || d.scrollWidth > d.clientWidth + 1) d.classList.add("ncbook-scrolls");
  });
}
window.addEventListener("load", function () {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) MathJax.startup.promise.then(ncbookMarkScrollingMath);
});
window.addEventListener("resize", function () { clearTimeout(window.ncbookResize);
  window.ncbookResize = setTimeout(ncbookMarkScrollingMath, 100); });

// MathJax 4 breaks long displays into lines (_config.yml: displayOverflow linebreak), but inside an aligned or
// gathered block it breaks every cell apart, one symbol a line: such displays keep their rows and scroll instead
// (the math element's overflow attribute, set before they are laid out). Runs before MathJax loads (it is deferred).
if (window.MathJax && !window.MathJax.version) {
  MathJax.startup = MathJax.startup || {};
  MathJax.startup.ready = function () {
    MathJax.startup.defaultReady();
    [].concat(MathJax.startup.document.inputJax).forEach(function (jax) {
      jax.postFilters.add(function (args) {
        var root = args.data.root || args.data, table = false;            // the tree, or the parse options
        if (!args.math.display || !root.walkTree) return;
        root.walkTree(function (node) { if (node.isKind("mtable")) table = true; });
        if (table) root.attributes.set("overflow", "scroll");
      });
    });
  };
}

// Search results: Sphinx makes each snippet from the text of the page's main block, which holds the page's buttons,
// its contents sidebar, code and the TeX source of every formula. The snippet is taken from the prose alone, with
// each formula written out as text (\lambda_W as λ_W, \frac{a}{b} as a/b).
var NCBOOK_TEX = {alpha: "α", beta: "β", gamma: "γ", delta: "δ", epsilon: "ε", varepsilon: "ε", zeta: "ζ", eta: "η",
  theta: "θ", kappa: "κ", lambda: "λ", mu: "μ", nu: "ν", xi: "ξ", pi: "π", rho: "ρ", sigma: "σ", tau: "τ", phi: "φ",
  chi: "χ", psi: "ψ", omega: "ω", Gamma: "Γ", Delta: "Δ", Theta: "Θ", Lambda: "Λ", Sigma: "Σ", Phi: "Φ", Psi: "Ψ",
  Omega: "Ω", le: "≤", leq: "≤", ge: "≥", geq: "≥", ne: "≠", neq: "≠", approx: "≈", sim: "∼", to: "→", mapsto: "↦",
  infty: "∞", cdot: "·", times: "×", otimes: "⊗", top: "ᵀ", sum: "Σ", prod: "Π", in: "∈", nabla: "∇", partial: "∂",
  sqrt: "√", ell: "ℓ", "|": "‖", quad: " ", qquad: " ", ",": " ", ";": " ", "!": "", langle: "⟨", rangle: "⟩"};
function ncbookTexToText(tex) {
  var t = tex.replace(/\\(?:frac|tfrac|dfrac)\s*(\{[^{}]*\}|\w)\s*(\{[^{}]*\}|\w)/g, function (_, a, b) {
    var wrap = function (x) { x = x.replace(/[{}]/g, ""); return /^\w$/.test(x) ? x : "(" + x + ")"; };
    return wrap(a) + "/" + wrap(b); });
  t = t.replace(/\^\s*\{?\\top\}?/g, "ᵀ");
  t = t.replace(/\\(?:mathrm|operatorname|mathbf|mathcal|mathbb|text|textrm|boldsymbol|bar|tilde|hat)\s*\{([^{}]*)\}/g, "$1");
  t = t.replace(/\\(begin|end)\{[^}]*\}|\\(?:big|Big|bigg|Bigg|left|right)\b|&|\\\\/g, " ");
  t = t.replace(/\\([A-Za-z]+|.)/g, function (_, name) { return name in NCBOOK_TEX ? NCBOOK_TEX[name] : name; });
  return t.replace(/[{}]/g, "").replace(/\s+/g, " ").trim();
}
document.addEventListener("DOMContentLoaded", function () {
  if (typeof Search === "undefined" || !Search.htmlToText) return;              // only the search page has it
  var pageText = Search.htmlToText;
  Search.htmlToText = function (htmlString, anchor) {
    var doc = new DOMParser().parseFromString(htmlString, "text/html");
    doc.querySelectorAll(".bd-header-article, .header-article-items, .bd-sidebar-secondary, .prev-next-area, " +
      "#jb-print-docs-body, .onlyprint, nav, .cell_input, .cell_output, .ncsf, .eqno, .headerlink, script, style")
      .forEach(function (e) { e.remove(); });
    doc.querySelectorAll(".math").forEach(function (m) {
      m.textContent = " " + ncbookTexToText(m.textContent.replace(/^\s*\\[(\[]|\\[)\]]\s*$/g, "")) + " ";
    });
    return pageText(doc.documentElement.outerHTML, anchor);
  };
});

// Print: each slider figure prints as at most four of its positions (the first, the last and two evenly spaced
// between; the HTML book has them all), in a 2 x 2 grid small enough to keep the figure's caption on its page, and
// folded details open. Defined here, before the pages' figures run, so the figures' own fallback (every position,
// for a notebook printed outside the book; ncbook/interactive.py) is not installed.
window.ncsfPrintLayout = function () {
  document.querySelectorAll("div.ncsf").forEach(function (root) {
    if (root.querySelector(".ncsf-print")) return;
    var frames = JSON.parse(root.querySelector("script.ncsf-frames").textContent), keys = Object.keys(frames);
    var inputs = [].slice.call(root.querySelectorAll(".ncsf-control"));     // a slider or a two-value toggle
    var shown = keys.length <= 4 ? keys : [0, 1, 2, 3].map(function (i) {
      return keys[Math.round(i * (keys.length - 1) / 3)]; });
    var grid = document.createElement("div");
    grid.className = "ncsf-print";
    shown.forEach(function (key) {
      var ix = key.split(","), text = [], htmlText = [];
      inputs.forEach(function (input, n) {
        var value = JSON.parse(input.dataset.labels)[+ix[n]], span = document.createElement("span");
        span.textContent = value;
        text.push(input.dataset.name + " = " + value);
        htmlText.push(input.dataset.html + " = " + span.innerHTML);
      });
      var fig = document.createElement("figure"), img = document.createElement("img");
      var cap = document.createElement("figcaption");
      img.src = /\.png$/.test(frames[key]) ? frames[key] : "data:image/png;base64," + frames[key];
      img.alt = root.dataset.alt + " at " + text.join(", ");
      cap.innerHTML = htmlText.join(", ");
      fig.appendChild(img); fig.appendChild(cap); grid.appendChild(fig);
    });
    if (shown.length < keys.length) {
      var note = document.createElement("p");
      note.className = "ncsf-print-note";
      note.textContent = shown.length + " of the figure's " + keys.length + " slider positions; the HTML book has all.";
      grid.appendChild(note);
    }
    root.appendChild(grid);
  });
  document.querySelectorAll("details").forEach(function (d) { d.open = true; });
};
window.addEventListener("beforeprint", window.ncsfPrintLayout);
window.addEventListener("afterprint", function () {
  document.querySelectorAll(".ncsf-print").forEach(function (g) { g.remove(); });
});
