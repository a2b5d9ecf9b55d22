// Filters the application table as one types. Without JavaScript the form
// submits ?q= and the server filters.
(function () {
  "use strict";
  var input = document.getElementById("q");
  var rows = document.querySelectorAll("table.apps tbody tr");
  var shown = document.getElementById("shown");
  var none = document.getElementById("nomatch");
  if (!input || !rows.length) { return; }
  function apply() {
    var terms = input.value.toLowerCase().split(/\s+/).filter(Boolean);
    var n = 0;
    rows.forEach(function (tr) {
      var hay = tr.getAttribute("data-search") || "";
      var ok = terms.every(function (t) { return hay.indexOf(t) >= 0; });
      tr.hidden = !ok;
      if (ok) { n++; }
    });
    if (shown) { shown.textContent = String(n); }
    if (none) { none.hidden = n !== 0; }
  }
  input.addEventListener("input", apply);
  apply();
})();
