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

// Inline math wider than its paragraph (long formulas on a phone) becomes its own horizontally scrolling box
// (class ncbook-wide, see ncbook.css) instead of running past the column; rechecked when the window is resized.
function ncbookMarkWideMath() {
  document.querySelectorAll(".bd-article mjx-container:not([display='true'])").forEach(function (m) {
    m.classList.remove("ncbook-wide");
    var block = m.parentElement.closest("p, li, dd, td, th, div") || m.parentElement;
    if (m.getBoundingClientRect().width > block.clientWidth + 1) m.classList.add("ncbook-wide");
  });
}
window.addEventListener("load", function () {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) MathJax.startup.promise.then(ncbookMarkWideMath);
});
window.addEventListener("resize", function () { clearTimeout(window.ncbookResize);
  window.ncbookResize = setTimeout(ncbookMarkWideMath, 100); });
