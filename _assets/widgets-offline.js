// Let the saved ipywidgets in the book's pages render without a CDN or a kernel.
// Loaded on every page before RequireJS and the widget manager (tools/vendor_assets.py).
(function () {
  // The manager looks for its icon fonts next to its module; RequireJS would place that
  // module under the page's own folder. Point it at _static/vendor/html-manager/ instead.
  var root = document.documentElement.dataset.content_root || "./";
  var manager = new URL(root + "_static/vendor/html-manager", document.baseURI).href;
  window.require = { paths: { "@jupyter-widgets/html-manager/dist": manager } };

  // Widget labels are typeset with the MathJax 2 call MathJax.Hub.Queue; the book loads
  // MathJax 3. Provide that one call once MathJax 3 is there (deferred scripts have run).
  document.addEventListener("DOMContentLoaded", function () {
    var mathjax = window.MathJax;
    if (mathjax && mathjax.typesetPromise && !mathjax.Hub) {
      mathjax.Hub = {
        Queue: function (job) {
          var element = job && job[2];
          mathjax.startup.promise.then(function () {
            return mathjax.typesetPromise(element ? [element] : undefined);
          });
        },
      };
    }
  });
})();
