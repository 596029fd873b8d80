// labtools' script for formgrader's submission page (nbgrader 0.9.6), loaded after
// nbgrader's own scripts and before the page's load event, when formgrader starts.

// 1. nbgrader's formgrade.js waits for MathJax 2's startup signal before it selects the
// last input; the page loads MathJax 3 from this server, whose startup is a promise. Without
// MathJax (not served), the signal comes at once and the math stays as LaTeX.
(function () {
    var mathjax = window.MathJax && window.MathJax.version ? window.MathJax : null;
    var hub = {
        Startup: {signal: {Interest: function (listener) {
            var end = function () { listener("End"); };
            if (mathjax && mathjax.startup && mathjax.startup.promise) {
                mathjax.startup.promise.then(end, end);
            } else {
                setTimeout(end, 0);
            }
        }}},
        Queue: function () {}
    };
    if (mathjax) {
        mathjax.Hub = hub;
    } else {
        window.MathJax = {Hub: hub};
    }
})();

// 2. Two graders on one gradebook: each save of a score or a comment says what this page
// last had from the server (labtools_seen); the server refuses it (409) when another
// grader has saved something else there since, and answers with what is there now. The page
// then shows that, and says so; saving again (the grader's choice, knowing) replaces it.
(function () {
    var box = null;

    function say(text) {
        if (box === null) {
            box = $("<div/>").attr({id: "labtools-conflict", role: "alert"}).css({
                position: "fixed", top: "1em", left: "50%", transform: "translateX(-50%)",
                "z-index": 2000, "max-width": "40em", padding: "0.75em 1em",
                background: "#fff3cd", border: "1px solid #c69500", "border-radius": "4px",
                color: "#5c4400", "box-shadow": "0 2px 6px rgba(0,0,0,0.2)"
            });
            box.append($("<span/>").addClass("labtools-text"));
            box.append($("<button/>").attr({type: "button", "aria-label": "Close"})
                .addClass("close").css({"margin-left": "1em"}).html("&times;")
                .click(function () { box.hide(); }));
            $("body").append(box);
        }
        box.find(".labtools-text").text(text);
        box.show();
    }

    function shown(value) {
        return value === null || value === undefined || value === "" ? "nothing" : String(value);
    }

    function guard(Model, fields, what) {
        var save = Model.prototype.save;
        Model.prototype.save = function (attrs, options) {
            var model = this;
            var seen = _.pick(model.attributes, fields);  // the server's, as last loaded or saved
            var mine = _.extend({}, model.attributes, attrs)[fields[0]];
            options = _.extend({}, options);
            options.attrs = _.extend({}, model.attributes, attrs, {labtools_seen: seen});
            var failed = options.error;
            options.error = function (m, xhr) {
                if (xhr && xhr.status === 409) {
                    var now = JSON.parse(xhr.responseText).current;
                    model.set(now);
                    say(what + " " + model.get("name") + ": another grader saved " +
                        shown(now[fields[0]]) + " there since this page loaded it, so your " +
                        shown(mine) + " was not saved. The page shows theirs now; enter yours " +
                        "again to replace it.");
                    $(document).trigger("finished_saving");
                }
                if (failed) {
                    failed.apply(this, arguments);
                }
            };
            return save.call(this, attrs, options);
        };
    }

    guard(Grade, ["manual_score", "extra_credit"], "The score of");
    guard(Comment, ["manual_comment"], "The comment on");
})();
