// Run in the page's own world, where DevTools' getEventListeners sees the page's listeners:
// answers the positions (in forEachElement's order) of elements with a click-like listener.
// The page can make this answer lie only about its own elements, which it decides anyway;
// everything else the agent reports is worked out in a world the page cannot touch.
//
// Unless the whole page is asked for, a part of the page the agent will only count (a
// visible box wholly beyond the viewport and its margin, neither fixed nor sticky: the
// rule of agent.snapshot's `far`) is passed over: asking for listeners costs about a
// microsecond an element, which on a long page is most of a state's time.
((full) => {
/* ORDER */
  const KINDS = ['click', 'mousedown', 'mouseup', 'pointerdown', 'pointerup', 'drop', 'dragstart'];
  const MAX_ELEMENTS = 50000;
  const vh = innerHeight;
  const margin = vh * 0.25;
  // Whether the agent will count `el`'s part of the page without reading it. Frames' own
  // documents are always read: their boxes are on their own frame's clock.
  const passedOver = (el) => {
    if (full || el.ownerDocument !== document) return false;
    const r = el.getBoundingClientRect();
    if (r.width <= 1 || r.height <= 1 || !(r.top > vh + margin || r.bottom < -margin)) return false;
    const style = getComputedStyle(el);
    if (style.display === 'contents' || style.position === 'fixed' || style.position === 'sticky') return false;
    if (style.visibility === 'hidden' || style.visibility === 'collapse') return false;
    return !el.checkVisibility || el.checkVisibility({ checkOpacity: true, checkVisibilityCSS: true });
  };
  const found = [];
  let i = 0;
  forEachElement((el, pruned) => {
    let said = true;
    if (!pruned) {
      try {
        if (passedOver(el)) {
          said = PRUNE;
        } else {
          const l = getEventListeners(el);
          if (l && KINDS.some((k) => l[k] && l[k].length)) found.push(i);
        }
      } catch (_) { /* not an element the API knows */ }
    }
    i += 1;
    return i < MAX_ELEMENTS ? said : false;
  });
  return found;
})
