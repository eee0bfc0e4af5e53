  // Every element of the page in one fixed order: depth first, an open shadow root's content
  // after its host's children, a same-origin frame's document after the frame's. The
  // listener probe (in the page's world) and the agent (in its own) both count in this
  // order, which is how the probe's answer names elements across the two worlds.
  // `fn(el, pruned)` returns false to stop, or PRUNE to be told (`pruned`) of every element
  // under `el` that they lie in a part it passed over; they are still counted.
  const PRUNE = 'prune';
  function forEachElement(fn) {
    const origin = document.location.origin;
    const stack = document.documentElement ? [[document.documentElement, false]] : [];
    while (stack.length) {
      const [el, pruned] = stack.pop();
      const said = fn(el, pruned);
      if (said === false) return;
      const under = pruned || said === PRUNE;
      const next = [];
      for (let c = el.firstElementChild; c; c = c.nextElementSibling) next.push(c);
      if (el.shadowRoot) {
        for (let c = el.shadowRoot.firstElementChild; c; c = c.nextElementSibling) next.push(c);
      }
      if (el.localName === 'iframe' || el.localName === 'frame') {
        try {
          const doc = el.contentDocument;
          if (doc && doc.documentElement && doc.location.origin === origin) next.push(doc.documentElement);
        } catch (_) { /* cross-origin */ }
      }
      for (let i = next.length - 1; i >= 0; i--) stack.push([next[i], under]);
    }
  }
