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

  // Frame sliders (perceptrons.widgets.frame_panel) switch saved frames in the browser. The
  // slider's handle says by itself only the position's number ("3.00"); have it name the
  // slider, the value shown and the status line of the frame in view, for screen readers.
  function describeFrameSliders() {
    document.querySelectorAll(".frame-slider").forEach(function (panel) {
      var status = panel.querySelector(".frame-status");
      panel.querySelectorAll(".widget-slider").forEach(function (slider) {
        var handle = slider.querySelector(".noUi-handle");
        var label = slider.querySelector(".widget-label");
        var readout = slider.querySelector(".widget-readout");
        if (!handle || !label || !readout) return;
        var name = label.textContent.trim();
        var text = name + " = " + readout.textContent.trim();
        if (status) text += "; " + status.textContent.trim();
        if (handle.getAttribute("aria-label") !== name) handle.setAttribute("aria-label", name);
        if (handle.getAttribute("aria-valuetext") !== text) handle.setAttribute("aria-valuetext", text);
      });
    });
  }
  document.addEventListener("DOMContentLoaded", function () {
    // after every change of the page (a frame shown, a readout updated, the slider's own
    // aria-valuetext); a second call changes nothing, so the calls stop there
    new MutationObserver(describeFrameSliders).observe(document.body, {
      childList: true,
      subtree: true,
      characterData: true,
      attributes: true,
      attributeFilter: ["class", "style", "aria-valuetext"],
    });
  });
})();
