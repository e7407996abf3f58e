// Search and filters of the static site, over search-index.json (the server searches itself).
"use strict";

(function () {
  const script = document.currentScript;
  const form = document.getElementById("kb-search");
  const count = document.getElementById("result-count");
  const list = document.querySelector("ul.entries");
  if (!script || !form || !list) return;
  const items = Array.from(list.querySelectorAll("li[data-id]"));
  let index = null;

  function score(row, query) {
    const lowered = query.toLowerCase();
    const words = lowered.split(/[^\w-]+/).filter((w) => w.length > 2);
    let total = words.filter((w) => row.text.includes(w)).length;
    if (row.literals.some((literal) => lowered.includes(literal))) total += 10;
    return total;
  }

  function apply() {
    const fields = new FormData(form);
    const query = (fields.get("q") || "").trim();
    const wanted = (name, value) => !fields.get(name) || value === fields.get(name);
    const scores = new Map(index.map((row) => [row.id, query ? score(row, query) : 1]));
    const shown = items.filter((li) => {
      const d = li.dataset;
      const keep = scores.get(d.id) > 0 && wanted("category", d.category) && wanted("phase", d.phase)
        && wanted("severity", d.severity) && (!fields.get("system") || d.systems.includes(` ${fields.get("system")} `));
      li.hidden = !keep;
      return keep;
    });
    shown.sort((a, b) => scores.get(b.dataset.id) - scores.get(a.dataset.id));
    for (const li of shown) list.appendChild(li);
    count.textContent = `${shown.length} matching entries`;
  }

  fetch(script.dataset.index).then((response) => response.json()).then((rows) => {
    index = rows;
    const params = new URLSearchParams(window.location.search);
    for (const [name, value] of params) {
      if (form.elements[name]) form.elements[name].value = value;
    }
    if (params.toString()) apply();
    form.addEventListener("submit", (event) => { event.preventDefault(); apply(); });
  });
})();
