// Tell RequireJS where the ipywidgets HTML manager lives (_static/widgets/, next to this file), so that the
// webpack bundle computes its public path from there and finds its font files. Without this the bundle resolves
// itself relative to the page and the browser reports missing .woff/.ttf files.
(function () {
  var src = document.currentScript && document.currentScript.src;
  if (!src || !window.require) return;
  var base = src.slice(0, src.lastIndexOf("/")) + "/widgets";
  window.require.config({paths: {"@jupyter-widgets/html-manager/dist": base}});
})();
