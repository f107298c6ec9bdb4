// A lesson's keys in the page itself (installed once per browser tab, so it survives the page's reruns):
// → PageDown Space for the next step, ← PageUp for the previous, as a presentation clicker sends them.
// Streamlit has no key events, so the key clicks the panel's own button (its callback moves the step).
(() => {
  "use strict";
  if (window.__fxLessonKeys) return;
  const NEXT = new Set(["ArrowRight", "PageDown", " ", "Spacebar"]);
  const PREVIOUS = new Set(["ArrowLeft", "PageUp"]);
  // Where a key means something else: typing, a list, a slider, a radio group, the tabs' own arrows.
  const TYPING = "input, textarea, select, [contenteditable=''], [contenteditable='true'], [role='combobox'], " +
    "[role='listbox'], [role='option'], [role='slider'], [role='spinbutton'], [role='textbox']";
  const ARROWS_OWN = "[role='tab'], [role='radio'], [role='radiogroup'], [role='menu'], [role='menuitem']";
  const CONTROL = "button, a, [role='button'], [role='tab'], [role='switch'], [role='checkbox'], summary, label";
  const button = dir => document.querySelector(`.st-key-lesson-${dir} button`);
  const step = dir => {
    const b = button(dir);
    if (!b || b.disabled) return false;
    b.click();
    return true;
  };
  const direction = ev => {
    if (ev.ctrlKey || ev.metaKey || ev.altKey || ev.shiftKey) return null;
    return NEXT.has(ev.key) ? "next" : PREVIOUS.has(ev.key) ? "previous" : null;
  };
  // Whether a key pressed on ``target`` (an element of this document or of a drawing's frame) steps.
  const wanted = (ev, target) => {
    const dir = direction(ev);
    if (!dir || !button("next")) return null;  // no lesson open: the keys do what they always do
    const el = target && target.closest ? target : null;
    if (el && el.closest(TYPING)) return null;
    if (el && ev.key.startsWith("Arrow") && el.closest(ARROWS_OWN)) return null;
    if (el && (ev.key === " " || ev.key === "Spacebar") && el.closest(CONTROL)) return null;  // Space presses it
    return dir;
  };
  window.__fxLessonKeys = {
    // for the drawings' frames (linked_view.js): their keys do not reach this document
    key: (ev, target) => { const dir = wanted(ev, target); return dir ? step(dir) : false; },
  };
  document.addEventListener("keydown", ev => {
    if (ev.defaultPrevented) return;
    const dir = wanted(ev, ev.target);
    if (!dir) return;
    ev.preventDefault();
    if (!ev.repeat) step(dir);
  }, true);
})();
