// The filter box: every element with data-filter is a unit; it stays visible when all typed
// terms occur in its key, in the key of a unit around it, or in the key of a unit inside it.
(function () {
  "use strict";
  var box = document.getElementById("filter");
  var count = document.getElementById("filter-count");
  var units = Array.prototype.slice.call(document.querySelectorAll("[data-filter]"));
  var rows = units.filter(function (u) { return u.tagName === "TR"; });

  function matches(el, terms) {
    var key = el.getAttribute("data-filter");
    return terms.every(function (t) { return key.indexOf(t) !== -1; });
  }

  function apply() {
    var terms = box.value.toLowerCase().split(/\s+/).filter(Boolean);
    var hit = new Set();
    units.forEach(function (u) { if (!terms.length || matches(u, terms)) { hit.add(u); } });
    units.forEach(function (u) {
      var show = hit.has(u);
      for (var p = u.parentElement; !show && p; p = p.parentElement) {
        if (hit.has(p)) { show = true; }
      }
      if (!show) {
        show = Array.prototype.some.call(u.querySelectorAll("[data-filter]"), function (d) { return hit.has(d); });
      }
      u.hidden = !show;
    });
    var shown = rows.filter(function (r) { return !r.hidden; }).length;
    count.textContent = terms.length ? shown + " of " + rows.length + " rows match" : rows.length + " rows";
  }

  box.addEventListener("input", apply);
  // "/" jumps to the filter box from anywhere on the page; Escape clears it.
  document.addEventListener("keydown", function (e) {
    if (e.key === "/" && document.activeElement !== box) { e.preventDefault(); box.focus(); box.select(); }
    else if (e.key === "Escape" && document.activeElement === box) { box.value = ""; apply(); }
  });
  apply();
})();
