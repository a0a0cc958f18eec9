/* Optional filtering and sorting of the static report; the page reads fine without it.
   Reads only data-* attributes and never writes HTML, so case text stays inert. */
(function () {
  'use strict';
  var doc = document, root = doc.documentElement;
  var form = doc.getElementById('filters');
  var matrix = doc.querySelector('table.matrix');
  var rows = Array.prototype.slice.call(doc.querySelectorAll('tr[data-case]'));
  var cases = Array.prototype.slice.call(doc.querySelectorAll('details.case'));
  var shown = doc.getElementById('shown');

  /* The variant sub-rows that follow a case's row. */
  function subRows(row) {
    var out = [], id = row.getAttribute('data-id');
    for (var next = row.nextElementSibling; next && next.getAttribute('data-parent') === id; next = next.nextElementSibling) out.push(next);
    return out;
  }

  function hasWord(list, word) { return (' ' + list + ' ').indexOf(' ' + word + ' ') >= 0; }

  function selectedStates() {
    var out = [];
    form.querySelectorAll('input[name=state]').forEach(function (box) { if (box.checked) out.push(box.value); });
    return out;
  }

  function matches(el, states, tag, text) {
    var own = el.getAttribute('data-states');
    if (states.length && !states.some(function (s) { return hasWord(own, s); })) return false;
    if (tag && !hasWord(el.getAttribute('data-tags'), tag)) return false;
    if (text && el.getAttribute('data-text').indexOf(text) < 0) return false;
    return true;
  }

  function apply(updateHash) {
    var states = selectedStates(), tag = form.elements.tag.value;
    var text = form.elements.q.value.trim().toLowerCase(), count = 0;
    rows.forEach(function (row) {
      var ok = matches(row, states, tag, text);
      row.hidden = !ok;
      subRows(row).forEach(function (sub) { sub.hidden = !ok; });
      if (ok) count++;
    });
    cases.forEach(function (c) { c.hidden = !matches(c, states, tag, text); });
    doc.querySelectorAll('table.matrix tbody').forEach(function (body) {
      body.hidden = !body.querySelector('tr[data-case]:not([hidden])');
    });
    if (states.length) matrix.setAttribute('data-f', states.join(' ')); else matrix.removeAttribute('data-f');
    shown.textContent = count + ' of ' + rows.length + ' cases shown';
    root.setAttribute('data-shown-cases', String(count));
    root.setAttribute('data-filter', states.join(','));
    if (updateHash) {
      var parts = [];
      if (states.length) parts.push('filter=' + states.join(','));
      if (tag) parts.push('tag=' + encodeURIComponent(tag));
      if (text) parts.push('q=' + encodeURIComponent(text));
      history.replaceState(null, '', parts.length ? '#' + parts.join('&') : location.pathname);
    }
  }

  function sortRows() {
    var how = form.elements.sort.value;
    doc.querySelectorAll('table.matrix tbody').forEach(function (body) {
      var list = Array.prototype.slice.call(body.querySelectorAll('tr[data-case]'));
      list.sort(function (a, b) {
        if (how === 'bad') {
          var d = Number(b.getAttribute('data-bad')) - Number(a.getAttribute('data-bad'));
          if (d) return d;
        }
        if (how === 'id') return a.getAttribute('data-id') < b.getAttribute('data-id') ? -1 : 1;
        return Number(a.getAttribute('data-order')) - Number(b.getAttribute('data-order'));
      });
      list.forEach(function (row) {
        var subs = subRows(row);            // a case's variant sub-rows travel with it
        body.appendChild(row);
        subs.forEach(function (sub) { body.appendChild(sub); });
      });
    });
  }

  /* "#filter=FAIL,ERROR&tag=x&q=text&sort=bad&open=run-..." selects a view (and opens a detail in place);
     a plain "#run-..." / "#case-..." opens that detail and scrolls to it. */
  function decode(text) {
    try { return decodeURIComponent(text); } catch (err) { return text; }
  }

  function openDetail(target) {
    for (var el = target; el; el = el.parentElement) { if (el.tagName === 'DETAILS') el.open = true; }
  }

  function fromHash() {
    var hash = location.hash.slice(1);
    if (/^(filter|tag|q|sort|open)=/.test(hash)) {
      var params = {};
      hash.split('&').forEach(function (kv) {
        var i = kv.indexOf('=');
        if (i > 0) params[kv.slice(0, i)] = decode(kv.slice(i + 1));
      });
      var wanted = (params.filter || '').split(',');
      var opened = params.open ? doc.getElementById(params.open) : null;
      openDetail(opened);
      form.querySelectorAll('input[name=state]').forEach(function (box) { box.checked = wanted.indexOf(box.value) >= 0; });
      if (params.tag !== undefined) form.elements.tag.value = params.tag;
      if (params.q !== undefined) form.elements.q.value = params.q;
      if (params.sort !== undefined) { form.elements.sort.value = params.sort; sortRows(); }
      apply(false);
      /* after the view is filtered, so the run's place is final: a link with open= lands on it */
      if (opened) { opened.scrollIntoView(); doc.documentElement.setAttribute('data-scrolled-to', params.open); }
    } else if (hash) {
      var target = doc.getElementById(decode(hash));
      openDetail(target);
      if (target) target.scrollIntoView();
    }
  }

  form.hidden = false;
  form.addEventListener('submit', function (e) { e.preventDefault(); });
  form.addEventListener('input', function (e) { if (e.target.name !== 'sort') apply(true); });
  form.addEventListener('change', function (e) { if (e.target.name === 'sort') sortRows(); else apply(true); });
  doc.querySelectorAll('button[data-state]').forEach(function (chip) {
    chip.addEventListener('click', function () {
      form.querySelectorAll('input[name=state]').forEach(function (box) {
        if (box.value === chip.getAttribute('data-state')) { box.checked = !box.checked; apply(true); }
      });
    });
  });
  window.addEventListener('hashchange', fromHash);
  apply(false);
  fromHash();
  root.setAttribute('data-js', 'ready');

  /* Whether the matrix fits the window: how far it overflows horizontally, and how many
     non-passing chips lie (partly) right of the window's edge (the browser test reads both). */
  function measureFit() {
    var width = doc.documentElement.clientWidth, hidden = 0, bad = 0;
    doc.querySelectorAll('table.matrix a.r').forEach(function (chip) {
      if (/\bs-(PASS|SKIP|UNSUPPORTED|XFAIL)\b/.test(chip.className)) return;
      bad++;
      if (chip.getBoundingClientRect().right > width) hidden++;
    });
    root.setAttribute('data-matrix-overflow-px', String(Math.max(0, Math.ceil(matrix.getBoundingClientRect().right - width))));
    root.setAttribute('data-bad-chips', String(bad));
    root.setAttribute('data-bad-chips-offscreen', String(hidden));
  }

  /* Paint time as the page itself measures it: load, a forced layout, then the next frame. */
  window.addEventListener('load', function () {
    void doc.body.getBoundingClientRect();
    measureFit();
    root.setAttribute('data-load-ms', performance.now().toFixed(1));
    requestAnimationFrame(function () { root.setAttribute('data-paint-ms', performance.now().toFixed(1)); });
  });
})();
