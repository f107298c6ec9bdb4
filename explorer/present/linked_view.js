(() => {
  "use strict";
  const root = document.getElementById("fx-root");
  const groups = JSON.parse(document.getElementById("fx-links").textContent);
  const hint = document.getElementById("fx-hint");
  const note = document.getElementById("fx-note");
  const idle = hint.textContent;
  const MIN_SCALE = parseFloat(root.dataset.minScale) || 0.75;
  const READ = 0.9;  // the presenter view: below this a label is too small for the back of a room
  const PRESENT = root.dataset.present === "1";
  const MAX_FIT = PRESENT ? 1.6 : 1.0;
  const TITLE = PRESENT ? 24 : 0;  // the presenter view's pane title, over the drawing's top (linked_view.css)  // "fit" never blows a small graph up past this
  const ZOOM_MIN = 0.05, ZOOM_MAX = 4, STEP = 1.25, GAP = 24;
  const ids = name => (root.dataset[name] || "").split(" ").filter(Boolean);

  // ---- the linked hover: a node and its counterparts on the other side ----------------------
  const byId = new Map();
  groups.forEach((g, i) => [...g.before, ...g.after].forEach(id => {
    if (!byId.has(id)) byId.set(id, []);
    byId.get(id).push(i);
  }));
  let pinned = null;
  const clear = () => {
    root.querySelectorAll(".fx-hl, .fx-linked").forEach(e => e.classList.remove("fx-hl", "fx-linked"));
    root.classList.remove("fx-active");
    hint.textContent = idle;
  };
  const light = (el) => {
    clear();
    const side = el.closest(".fx-pane").dataset.side;
    const hits = byId.get(el.id) || [];
    el.classList.add("fx-hl");
    root.classList.add("fx-active");
    const labels = [];
    for (const i of hits) {
      const g = groups[i];
      for (const s of ["before", "after"]) {
        for (const id of g[s]) {
          const other = document.getElementById(id);
          if (!other) continue;  // folded away (a constant) or not drawn
          other.classList.add("fx-hl");
          if (s !== side) other.classList.add("fx-linked");
        }
      }
      if (g.label) labels.push(g.label);
    }
    const shown = labels.length > 4 ? [...labels.slice(0, 4), `and ${labels.length - 4} more`] : labels;
    hint.textContent = labels.length ? shown.join("  ·  ") :
      (hits.length ? "" : "No counterpart on the other side: this node is new here, or gone there.");
  };

  // ---- the panes: one zoom for both sides (a node is the same size left and right) ----------
  const panes = root.querySelector(".fx-panes");
  const sides = [...root.querySelectorAll(".fx-pane")].map(pane => {
    const svg = pane.querySelector("svg");
    // Graphviz sizes are in pt; a px is 3/4 pt.
    return {pane, svg, view: pane.querySelector(".fx-view"), canvas: pane.querySelector(".fx-canvas"),
            w: (parseFloat(svg.getAttribute("width")) || 400) * 4 / 3,
            h: (parseFloat(svg.getAttribute("height")) || 400) * 4 / 3};
  });
  const zoomLabel = document.getElementById("fx-zoom");
  const layoutButton = root.querySelector("[data-act='layout']");
  let k = 1, stacked = false;
  // The presenter view may show one graph at a time (the whole pane's width for it): ``shown`` is its side.
  let single = false, shown = 1, auto = true;  // auto: the zoom is the view's own choice, redone when the width changes
  const singleButton = root.querySelector("[data-act='single']"), swapButton = root.querySelector("[data-act='swap']");
  const storageKey = "fx-view:" + (root.dataset.key || "");
  const store = (() => { try { return window.sessionStorage; } catch (e) { return null; } })();

  const parentWindow = () => { try { return window.frameElement ? window.parent : window; } catch (e) { return window; } };
  // The tallest a pane may be: what is left of the browser's window below the frame's top, or most of
  // the window when that is too little (the panes then fill the screen once scrolled to).
  const paneLimit = () => {
    const win = parentWindow();
    const height = win.innerHeight || 800;
    let top = 0;
    try { top = window.frameElement ? window.frameElement.getBoundingClientRect().top : 0; } catch (e) { top = 0; }
    const chrome = panes.getBoundingClientRect().top - root.getBoundingClientRect().top + (PRESENT ? 6 : 16);
    const below = height - Math.max(0, top) - chrome;
    // (the presenter view keeps to the first screen down to a smaller rest: the step's text is above it)
    return Math.max(240, below >= (PRESENT ? 240 : 0.45 * height) ? below : height - chrome - 60);
  };
  const inner = s => Math.max(1, s.view.clientWidth);
  const visible = () => single ? [sides[shown]] : sides;
  const fitting = width => Math.min(...visible().map(s => width / s.w));

  const apply = () => {
    const limit = paneLimit();
    sides.forEach(s => {
      s.svg.style.width = (s.w * k) + "px";
      s.svg.style.height = (s.h * k) + "px";
      s.canvas.style.width = (s.w * k) + "px";
    });
    const tallest = Math.max(...visible().map(s => s.h * k));
    sides.forEach(s => {
      const own = stacked ? s.h * k : tallest;
      const bar = s.w * k > s.view.clientWidth + 1 ? 18 : 2;  // room for the horizontal scrollbar
      // the presenter view's panes reach down to the window's bottom: the room's screen is the graphs' below the text
      s.view.style.height = Math.ceil(PRESENT && !stacked ? limit : Math.min(limit, own + bar)) + "px";
    });
    zoomLabel.textContent = Math.round(k * 100) + "%";
  };
  // Zoom to k2, keeping the point at (ax, ay) of each view (its centre by default) where it is.
  const zoomTo = (k2, anchor) => {
    k2 = Math.min(ZOOM_MAX, Math.max(ZOOM_MIN, k2));
    const points = sides.map(s => {
      const a = anchor && anchor.view === s.view ? anchor : {x: s.view.clientWidth / 2, y: s.view.clientHeight / 2};
      return {a, x: (s.view.scrollLeft + a.x - s.canvas.offsetLeft) / k, y: (s.view.scrollTop + a.y) / k};
    });
    k = k2;
    apply();
    sides.forEach((s, i) => {
      const p = points[i];
      s.view.scrollLeft = p.x * k + s.canvas.offsetLeft - p.a.x;
      s.view.scrollTop = p.y * k - p.a.y;
    });
    remember();
  };
  const fitWidth = () => {
    k = Math.min(MAX_FIT, fitting(Math.min(...visible().map(inner)) - 2));
    apply();
    sides.forEach(s => { s.view.scrollLeft = 0; s.view.scrollTop = 0; });
    remember();
  };
  const fitPane = () => {
    const limit = paneLimit();
    k = Math.min(MAX_FIT, ...visible().map(s => Math.min((inner(s) - 2) / s.w, (limit - 4) / s.h)));
    apply();
    sides.forEach(s => { s.view.scrollLeft = 0; s.view.scrollTop = 0; });
    remember();
  };
  const setLayout = (stack, chosen) => {
    stacked = stack;
    panes.classList.toggle("fx-stacked", stacked);
    note.hidden = !(stacked && !chosen);
    layoutButton.textContent = stacked ? "Side by side" : "One above the other";
    if (chosen && store) store.setItem("fx-layout", stacked ? "stacked" : "side");
  };
  // Below MIN_SCALE a side-by-side drawing is too small to read: one above the other instead (never in
  // the presenter view, whose point is the two side by side), unless the person chose a layout.
  const setSingle = (on, side) => {
    single = on;
    if (side !== undefined) shown = side;
    panes.classList.toggle("fx-single", single);
    sides.forEach((s, i) => { s.pane.hidden = single && i !== shown; });
    if (singleButton) singleButton.textContent = single ? "Both graphs" : "One graph";
    if (swapButton) {
      swapButton.hidden = !single;
      swapButton.textContent = "Show " + (shown ? sides[0] : sides[1]).pane.dataset.title;
    }
  };
  const autoLayout = () => {
    const chosen = store && store.getItem("fx-layout");
    if (chosen) return setLayout(chosen === "stacked", false);
    setLayout(!PRESENT && fitting((panes.clientWidth - GAP) / 2) < MIN_SCALE, false);
  };
  // The part of a pane the person sees: a tall pane may reach below the browser's window (the presenter
  // view's first screen), and what is centred should be centred where it can be seen.
  const seen = s => {
    const v = s.view.getBoundingClientRect();
    let top = v.top, bottom = v.bottom;
    try {
      if (window.frameElement) {
        const offset = window.frameElement.getBoundingClientRect().top;
        top = Math.max(top, -offset);
        bottom = Math.min(bottom, window.parent.innerHeight - offset);
      }
    } catch (e) { /* another origin: the whole pane */ }
    if (bottom - top < 120) { top = v.top; bottom = v.bottom; }
    return {left: v.left, width: v.width, top, bottom, middle: (top + bottom) / 2};
  };
  const centre = (el, s) => {
    const r = el.getBoundingClientRect(), v = seen(s);
    s.view.scrollLeft += (r.left + r.width / 2) - (v.left + v.width / 2);
    s.view.scrollTop += (r.top + r.height / 2) - v.middle;
  };
  const sideOf = el => sides.find(s => s.pane.contains(el));
  const inSide = (list, s) => list.map(id => document.getElementById(id)).filter(el => el && s.pane.contains(el));

  // ---- search matches (outlined in blue) and what a lesson points at (a magenta halo) -------------
  const marks = ids("marks"), focus = ids("focus");
  marks.forEach(id => { const el = document.getElementById(id); if (el) el.classList.add("fx-match"); });
  focus.forEach(id => { const el = document.getElementById(id); if (el) el.classList.add("fx-focus"); });
  const matches = sides.map(s => inSide(marks, s));
  const total = Math.max(0, ...matches.map(m => m.length));
  let current = -1;
  const findBox = document.getElementById("fx-find");
  const findCount = document.getElementById("fx-find-count");
  const showMatch = (i) => {
    current = (i + total) % total;
    root.querySelectorAll(".fx-current").forEach(e => e.classList.remove("fx-current"));
    sides.forEach((s, j) => {
      const list = matches[j];
      if (!list.length) return;
      const el = list[current % list.length];
      el.classList.add("fx-current");
      centre(el, s);
    });
    findCount.textContent = `match ${current + 1} of ${total}`;
    remember();
  };
  const showFocus = () => sides.forEach(s => {
    const els = inSide(focus, s);
    if (!els.length) return;
    // the middle of all of them: a chain of nodes is centred as a whole
    const rs = els.map(e => e.getBoundingClientRect());
    const v = seen(s);
    const left = Math.min(...rs.map(r => r.left)), right = Math.max(...rs.map(r => r.right));
    const top = Math.min(...rs.map(r => r.top)), bottom = Math.max(...rs.map(r => r.bottom));
    // all of them in the middle when they fit in sight; else the first ones, from the top left
    s.view.scrollLeft += right - left < 0.9 * v.width ? (left + right) / 2 - (v.left + v.width / 2) : left - v.left - 20;
    s.view.scrollTop += bottom - top < 0.9 * (v.bottom - v.top) ? (top + bottom) / 2 - v.middle : top - v.top - 20;
  });
  if (total) findBox.hidden = false;

  // ---- kept across the page's reruns (the same drawing comes back as a new document) -------------
  let saving = 0;
  function remember() {
    if (!store) return;
    clearTimeout(saving);
    saving = setTimeout(() => {
      try {
        store.setItem(storageKey, JSON.stringify({k, stacked, marks: root.dataset.marks || "",
          focus: root.dataset.focus || "", current, single, shown, auto,
          scroll: sides.map(s => [s.view.scrollLeft, s.view.scrollTop])}));
      } catch (e) { /* storage full or refused: the view just is not kept */ }
    }, 150);
  }
  const restore = () => {
    let saved = null;
    try { saved = store && JSON.parse(store.getItem(storageKey) || "null"); } catch (e) { saved = null; }
    if (!saved || typeof saved.k !== "number") return false;
    k = saved.k;
    setLayout(!!saved.stacked, false);
    if (PRESENT) setSingle(!!saved.single, saved.shown ? 1 : 0);
    auto = saved.auto !== false;
    apply();
    const newFocus = saved.focus !== (root.dataset.focus || "");
    if (newFocus && focus.length) showFocus();
    if (saved.marks !== (root.dataset.marks || "")) {
      if (total) showMatch(0);
      return true;
    }
    if (newFocus) return true;
    sides.forEach((s, i) => { const p = (saved.scroll || [])[i] || [0, 0]; s.view.scrollLeft = p[0]; s.view.scrollTop = p[1]; });
    if (total && saved.current >= 0) {
      current = saved.current % total;
      findCount.textContent = `match ${current + 1} of ${total}`;
    }
    return true;
  };
  // The zoom a drawing opens at. The presenter view fits the whole graph to what is in sight while that reads
  // (not below READ), shows one graph at a time where two side by side would not read, and then zooms out
  // further (never below READ) only to get all the nodes the lesson points at in sight; where they still do
  // not fit, showFocus brings the first of them into sight.
  const opening = () => {
    const half = stacked ? panes.clientWidth : (panes.clientWidth - GAP) / 2;
    if (!PRESENT) return Math.max(Math.min(MIN_SCALE, MAX_FIT), Math.min(MAX_FIT, fitting(half)));
    let width = Math.min(MAX_FIT, fitting(single ? panes.clientWidth : half));
    const sight = paneLimit();  // what of a pane is in sight: down to the window's bottom
    const whole = Math.min(width, ...visible().map(s => (sight - 6 - TITLE) / s.h));
    let zoom = Math.max(whole, READ);  // a graph wider than the pane even then: it pans (to the step's nodes)
    visible().forEach(s => {  // the focus nodes' extent, at zoom 1
      const els = inSide(focus, s);
      if (!els.length) return;
      const rs = els.map(e => e.getBBox ? e.getBBox() : {x: 0, y: 0, width: 0, height: 0});
      const tall = (Math.max(...rs.map(r => r.y + r.height)) - Math.min(...rs.map(r => r.y))) * 4 / 3 + 40;
      const wide = (Math.max(...rs.map(r => r.x + r.width)) - Math.min(...rs.map(r => r.x))) * 4 / 3 + 40;
      zoom = Math.min(zoom, Math.max(READ, Math.min(sight / tall, inner(s) / wide)));
    });
    return zoom;
  };
  const start = () => {
    autoLayout();
    if (PRESENT) {  // two graphs side by side below a readable size: the one with the step's nodes, or the after side
      const narrow = Math.min(MAX_FIT, fitting((panes.clientWidth - GAP) / 2)) < READ;
      const pointed = sides.map(s => inSide(focus, s).length);
      setSingle(narrow, pointed[1] || !pointed[0] ? 1 : 0);
    }
    k = opening();
    auto = true;
    apply();
    if (focus.length) showFocus();
    if (total) showMatch(0);
    else findCount.textContent = "";
  };
  if (!restore()) start();

  // ---- controls: the toolbar, the keyboard, the wheel, dragging ---------------------------------
  const actions = {
    in: () => { auto = false; zoomTo(k * STEP); }, out: () => { auto = false; zoomTo(k / STEP); },
    width: () => { auto = false; fitWidth(); }, pane: () => { auto = false; fitPane(); },
    actual: () => { auto = false; zoomTo(1); },
    single: () => { setSingle(!single); if (auto) { k = opening(); } apply(); if (focus.length) showFocus(); remember(); },
    swap: () => { if (!single) return; setSingle(true, 1 - shown); if (auto) { k = opening(); } apply(); if (focus.length) showFocus(); remember(); },
    layout: () => { setLayout(!stacked, true); apply(); remember(); },
    next: () => total && showMatch(current + 1), prev: () => total && showMatch(current - 1),
  };
  root.querySelector(".fx-bar").addEventListener("click", ev => {
    const button = ev.target.closest("button[data-act]");
    if (button) actions[button.dataset.act]();
  });
  document.addEventListener("keydown", ev => {
    if (ev.target.closest && ev.target.closest("input, textarea")) return;
    // A lesson's step keys (→ PageDown Space, ← PageUp) do not reach the page from inside this frame: hand them on.
    try {
      const lesson = window.frameElement && window.parent.__fxLessonKeys;
      if (lesson && lesson.key(ev, ev.target)) { ev.preventDefault(); return; }
    } catch (e) { /* another origin: the page's own keys only */ }
    const act = {"+": "in", "=": "in", "-": "out", "0": "pane", "w": "width", "1": "actual", "n": "next", "p": "prev",
                 "s": "swap", "g": "single"}[ev.key];
    if (act && !ev.ctrlKey && !ev.metaKey && !ev.altKey) { ev.preventDefault(); actions[act](); }
  });
  sides.forEach(s => {
    s.view.addEventListener("wheel", ev => {
      if (!(ev.ctrlKey || ev.metaKey)) return;  // a plain wheel scrolls the pane, then the page
      ev.preventDefault();
      auto = false;
      const v = s.view.getBoundingClientRect();
      zoomTo(k * Math.exp(-ev.deltaY * 0.0025), {view: s.view, x: ev.clientX - v.left, y: ev.clientY - v.top});
    }, {passive: false});
    s.view.addEventListener("scroll", remember, {passive: true});
  });
  let drag = null, dragged = false;
  root.addEventListener("pointerdown", ev => {
    const s = sides.find(x => x.view.contains(ev.target));
    if (!s || ev.button !== 0) return;
    drag = {s, x: ev.clientX, y: ev.clientY, left: s.view.scrollLeft, top: s.view.scrollTop, id: ev.pointerId};
    dragged = false;
  });
  root.addEventListener("pointermove", ev => {
    if (!drag || ev.pointerId !== drag.id) return;
    const dx = ev.clientX - drag.x, dy = ev.clientY - drag.y;
    if (!dragged && Math.abs(dx) + Math.abs(dy) < 5) return;
    if (!dragged) { dragged = true; drag.s.view.classList.add("fx-dragging"); }
    drag.s.view.scrollLeft = drag.left - dx;
    drag.s.view.scrollTop = drag.top - dy;
  });
  const endDrag = () => { if (drag) drag.s.view.classList.remove("fx-dragging"); drag = null; };
  root.addEventListener("pointerup", endDrag);
  root.addEventListener("pointercancel", endDrag);

  const target = (ev) => ev.target.closest("g.node, g.cluster");
  root.addEventListener("mouseover", ev => { const el = target(ev); if (el && !pinned && !drag) light(el); });
  root.addEventListener("mouseout", ev => {
    const el = target(ev);
    if (el && !pinned && !(ev.relatedTarget && el.contains(ev.relatedTarget))) clear();
  });
  root.addEventListener("click", ev => {
    if (dragged) { dragged = false; return; }  // the end of a drag is not a click on a node
    if (ev.target.closest(".fx-bar")) return;
    const el = target(ev);
    const release = !el || el === pinned;
    pinned = release ? null : el;
    root.classList.toggle("fx-pinned", !release);
    if (el) light(el); else clear();  // released over a node: it stays lit as hovered until the mouse leaves
  });

  // ---- the page around it: its width, its theme, the frame's height -------------------------------
  let lastWidth = panes.clientWidth;
  new ResizeObserver(() => {
    if (Math.abs(panes.clientWidth - lastWidth) < 2) return;
    lastWidth = panes.clientWidth;
    const chosen = store && store.getItem("fx-layout");
    if (!chosen) autoLayout();
    // A zoom the view chose itself follows the width (the sidebar opened or closed); one the person chose stays.
    if (auto) { k = opening(); apply(); if (focus.length) showFocus(); remember(); } else apply();
  }).observe(panes);
  try { if (window.frameElement) window.parent.addEventListener("resize", apply); } catch (e) { /* other origin */ }
  const themeOfPage = () => {
    try {
      const host = window.frameElement && window.parent.document.querySelector("[data-testid='stApp']");
      if (host) {
        const [r, g, b] = (getComputedStyle(host).backgroundColor.match(/\d+(\.\d+)?/g) || [255, 255, 255]).map(Number);
        return 0.2126 * r + 0.7152 * g + 0.0722 * b < 128 ? "dark" : "light";
      }
    } catch (e) { /* another origin */ }
    return root.dataset.theme || "light";
  };
  const followTheme = () => root.classList.toggle("fx-dark", themeOfPage() === "dark");
  followTheme();
  setInterval(followTheme, 1500);  // the page's theme can be switched in its settings at any time
  const fit = () => {
    try {
      const frame = window.frameElement;
      if (frame) frame.style.height = Math.ceil(document.body.getBoundingClientRect().height + 4) + "px";
    } catch (e) { /* another origin: keep the height given */ }
  };
  if (root.dataset.fit === "1") {  // a frame of fixed height (components.html): grow it to the drawing
    window.addEventListener("load", fit);
    new ResizeObserver(fit).observe(document.body);
  }
})();
