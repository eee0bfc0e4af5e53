// Run in the page's own world, where DevTools' getEventListeners sees the page's listeners:
// answers the positions (in forEachElement's order) of elements with a click-like listener.
// The page can make this answer lie only about its own elements, which it decides anyway;
// everything else the agent reports is worked out in a world the page cannot touch.
(() => {
/* ORDER */
  const KINDS = ['click', 'mousedown', 'mouseup', 'pointerdown', 'pointerup', 'drop', 'dragstart'];
  const MAX_ELEMENTS = 50000;
  const found = [];
  let i = 0;
  forEachElement((el) => {
    try {
      const l = getEventListeners(el);
      if (l && KINDS.some((k) => l[k] && l[k].length)) found.push(i);
    } catch (_) { /* not an element the API knows */ }
    i += 1;
    return i < MAX_ELEMENTS;
  });
  return found;
})()
