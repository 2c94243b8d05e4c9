// The live notice: every few seconds, ask the viewer whether a session or a commit has
// arrived since this page was made (/api/pulse), and say so with a link to reload.
// A page that is still scoring (Compare) reloads itself until its figures are in.
(function () {
  "use strict";
  var since = document.body.getAttribute("data-pulse");
  var notice = document.getElementById("live");
  function check() {
    fetch("/api/pulse", { credentials: "same-origin", cache: "no-store" })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (data) {
        if (data && since && data.pulse !== since && notice) { notice.hidden = false; }
      })
      .catch(function () { /* the server stopped: nothing to say */ });
  }
  setInterval(check, 5000);
  var scoring = document.querySelector("[data-reload]");
  if (scoring) {
    setTimeout(function () { window.location.reload(); },
      1000 * parseInt(scoring.getAttribute("data-reload"), 10));
  }
})();
