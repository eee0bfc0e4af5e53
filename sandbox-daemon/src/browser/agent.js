// coved's page agent. Evaluated as an expression in an isolated world (the page's scripts
// cannot see or change it, nor the builtins it uses), it installs itself once per document
// and evaluates to the agent object.
//
// A snapshot walks the DOM, same-origin iframes and open shadow roots, lists the visible
// interactive elements with short lines of visible text, viewport first, and keeps the
// element objects under the snapshot's id so actions reach the very element the model saw,
// or learn that it is gone.
(() => {
  const VERSION = 7;
  const G = globalThis;
  if (G.__coveAgent && G.__coveAgent.version === VERSION) return G.__coveAgent;

  const KEEP_SNAPSHOTS = 8;
  const SKIP = new Set(['script', 'style', 'noscript', 'template', 'head', 'meta', 'link', 'title', 'base']);
  const ROLES = new Set([
    'button', 'link', 'checkbox', 'radio', 'menuitem', 'menuitemcheckbox', 'menuitemradio', 'tab',
    'switch', 'option', 'combobox', 'textbox', 'searchbox', 'slider', 'spinbutton', 'treeitem',
  ]);
  const INLINE = new Set(['inline', 'inline-block', 'contents', 'inline-flex', 'inline-grid']);
  const TYPABLE = new Set(['', 'text', 'search', 'email', 'url', 'tel', 'password', 'number']);
  const SETTABLE = new Set(['date', 'time', 'datetime-local', 'month', 'week', 'range', 'color']);

  const clip = (s, n) => {
    s = String(s == null ? '' : s).replace(/\s+/g, ' ').trim();
    return s.length > n ? s.slice(0, n - 1) + '…' : s;
  };

  const agent = { version: VERSION, snapshots: new Map(), order: [] };

/* ORDER */
  // Elements the page's world says have a click-like listener (see probe.js), for the
  // snapshot being taken.
  let listening = new Set();
  const MAX_PROBED = 50000;

  function hearListeners(positions) {
    listening = new Set();
    if (!Array.isArray(positions) || !positions.length) return;
    const wanted = new Set(positions.slice(0, MAX_PROBED));
    let i = 0;
    forEachElement((el) => {
      if (wanted.has(i)) listening.add(el);
      i += 1;
      return i < MAX_PROBED;
    });
  }

  function hasClickListener(el) {
    return listening.has(el);
  }

  function isInteractive(el, style, parentPointer) {
    const tag = el.localName;
    if (tag === 'a') return el.hasAttribute('href') || el.hasAttribute('onclick') || hasClickListener(el);
    if (tag === 'button' || tag === 'select' || tag === 'textarea' || tag === 'summary') return true;
    if (tag === 'input') return el.type !== 'hidden';
    if (el.isContentEditable) return !(el.parentElement && el.parentElement.isContentEditable);
    const role = el.getAttribute('role');
    if (role && ROLES.has(role)) return true;
    if (el.hasAttribute('onclick') || typeof el.onclick === 'function') return true;
    if (el.getAttribute('draggable') === 'true') return true;
    const tabindex = el.getAttribute('tabindex');
    if (tabindex !== null && Number(tabindex) >= 0 && tag !== 'body' && tag !== 'html') return true;
    if (style.cursor === 'pointer' && !parentPointer) return true;
    return hasClickListener(el);
  }

  // Elements whose content is part of the control itself.
  const CONTROL_TAGS = new Set(['a', 'button', 'summary', 'select', 'textarea', 'option', 'input']);
  const CONTROL_ROLES = new Set(['button', 'link', 'option', 'menuitem', 'tab', 'checkbox', 'radio', 'switch']);
  function isControl(el) {
    return CONTROL_TAGS.has(el.localName) || CONTROL_ROLES.has(el.getAttribute('role'));
  }

  function visibleBox(el, style) {
    if (style.visibility === 'hidden' || style.visibility === 'collapse') return null;
    if (el.checkVisibility && !el.checkVisibility({ checkOpacity: true, checkVisibilityCSS: true })) return null;
    const r = el.getBoundingClientRect();
    if (r.width <= 1 || r.height <= 1) return null;
    return r;
  }

  // Is `el` what a click at its centre would reach? Checked through shadow roots and frames.
  function reaches(el, x, y) {
    let target = el;
    let lx = x, ly = y;
    for (;;) {
      const root = target.getRootNode();
      const hit = root.elementFromPoint ? root.elementFromPoint(lx, ly) : null;
      if (!hit) return { ok: false, by: null };
      const ok = hit === target || target.contains(hit) ||
        (hit.localName === 'label' && hit.control === target);
      if (!ok) return { ok: false, by: hit };
      if (root instanceof ShadowRoot) {
        target = root.host;
        continue;
      }
      const frame = root.defaultView && root.defaultView.frameElement;
      if (!frame) return { ok: true, by: hit };
      const fr = frame.getBoundingClientRect();
      lx += fr.left + frame.clientLeft;
      ly += fr.top + frame.clientTop;
      target = frame;
    }
  }

  // A full-viewport overlay (a modal's backdrop) on top of the page, if there is one.
  function blockingOverlay(vw, vh) {
    const points = [[0.5, 0.5], [0.2, 0.2], [0.8, 0.2], [0.2, 0.8], [0.8, 0.8]];
    let common = null;
    for (const [fx, fy] of points) {
      let hit = document.elementFromPoint(vw * fx, vh * fy);
      let fixed = null;
      for (let n = hit; n && n !== document.documentElement; n = n.parentElement) {
        const pos = getComputedStyle(n).position;
        if (pos === 'fixed') fixed = n;
      }
      if (!fixed) return null;
      if (common && common !== fixed) return null;
      common = fixed;
    }
    if (!common) return null;
    const r = common.getBoundingClientRect();
    return r.width * r.height >= 0.9 * vw * vh ? common : null;
  }

  function shortHref(a) {
    const href = a.getAttribute('href') || '';
    try {
      const u = new URL(href, a.baseURI);
      if (u.origin === location.origin) return u.pathname + u.search + u.hash;
      return u.href;
    } catch (_) {
      return href;
    }
  }

  function describe(el) {
    const tag = el.localName;
    const attrs = [];
    const add = (k, v) => {
      if (v === null || v === undefined || v === '') return;
      attrs.push(`${k}="${clip(v, 60).replace(/"/g, "'")}"`);
    };
    const flag = (k, on) => { if (on) attrs.push(k); };
    if (tag === 'input') {
      add('type', el.type);
      add('name', el.name);
      add('placeholder', el.placeholder);
      if (el.type === 'checkbox' || el.type === 'radio') {
        flag('checked', el.checked);
        add('value', el.value === 'on' ? '' : el.value);
      } else if (el.type === 'password') {
        if (el.value) attrs.push('value="••••"');
      } else if (el.type !== 'file') {
        add('value', el.value);
      }
    } else if (tag === 'textarea') {
      add('name', el.name);
      add('placeholder', el.placeholder);
      add('value', el.value);
    } else if (tag === 'select') {
      add('name', el.name);
      const o = el.selectedOptions && el.selectedOptions[0];
      add('value', o ? o.text : '');
    } else if (tag === 'a') {
      add('href', shortHref(el));
      if (el.target && el.target !== '_self') add('target', el.target);
    }
    add('role', el.getAttribute('role'));
    add('aria-label', el.getAttribute('aria-label'));
    add('title', el.getAttribute('title'));
    add('alt', el.getAttribute('alt'));
    add('aria-expanded', el.getAttribute('aria-expanded'));
    flag('disabled', el.disabled);
    flag('contenteditable', el.isContentEditable && tag !== 'input' && tag !== 'textarea');
    const text = (tag === 'input' || tag === 'select' || tag === 'textarea')
      ? '' : clip(el.innerText !== undefined ? el.innerText : el.textContent, 80);
    return `<${tag}${attrs.length ? ' ' + attrs.join(' ') : ''}>${text}`;
  }

  // Element rect in the top frame's viewport coordinates.
  function topRect(el) {
    const r = el.getBoundingClientRect();
    let x = r.left, y = r.top;
    let win = el.ownerDocument.defaultView;
    while (win && win.frameElement) {
      const f = win.frameElement;
      const fr = f.getBoundingClientRect();
      x += fr.left + f.clientLeft;
      y += fr.top + f.clientTop;
      win = f.ownerDocument.defaultView;
    }
    return { left: x, top: y, width: r.width, height: r.height };
  }

  agent.snapshot = (opts) => {
    hearListeners(opts.listeners);
    const vw = innerWidth, vh = innerHeight;
    const overlay = blockingOverlay(vw, vh);
    const items = [];

    const walk = (node, ctx) => {
      for (let child = node.firstChild; child; child = child.nextSibling) {
        if (child.nodeType === 3) {
          if (ctx.inListed || !ctx.visible) continue;
          const t = clip(child.nodeValue, 120);
          if (t) items.push({ text: t, y: ctx.y, block: ctx.block });
          continue;
        }
        if (child.nodeType !== 1) continue;
        const el = child;
        const tag = el.localName;
        if (SKIP.has(tag)) continue;
        const style = getComputedStyle(el);
        if (style.display === 'none') continue;
        const box = style.display === 'contents' ? null : visibleBox(el, style);
        const pointer = style.cursor === 'pointer';
        let listed = false;
        let top = ctx.y;
        if (box) {
          const off = topRect(el);
          top = off.top;
          if (!ctx.inControl && isInteractive(el, style, ctx.pointer)) {
            const inView = off.top + off.height > 0 && off.top < vh && off.left + off.width > 0 && off.left < vw;
            let covered = overlay !== null && !overlay.contains(el);
            if (inView) {
              // Hit-test the centre of the part of the element its frame shows.
              const win = el.ownerDocument.defaultView;
              const x1 = Math.max(box.left, 0), y1 = Math.max(box.top, 0);
              const x2 = Math.min(box.right, win.innerWidth), y2 = Math.min(box.bottom, win.innerHeight);
              if (x2 > x1 && y2 > y1) covered = !reaches(el, (x1 + x2) / 2, (y1 + y2) / 2).ok;
            }
            if (!covered) {
              items.push({ el, top: off.top, bottom: off.top + off.height });
              listed = true;
            }
          }
        }
        const visible = !!box || (style.display === 'contents' && ctx.visible);
        const childCtx = {
          // Inside a real control, nothing more is listed; inside any listed element, its text
          // is already in its own line.
          inControl: ctx.inControl || (listed && isControl(el)) || tag === 'select' || tag === 'svg',
          inListed: ctx.inListed || listed || tag === 'select' || tag === 'svg',
          pointer,
          visible: visible && !(overlay && !overlay.contains(el) && !el.contains(overlay)),
          y: top,
          // Text merges into one line only within the same block.
          block: INLINE.has(style.display) ? ctx.block : el,
        };
        if (el.shadowRoot) walk(el.shadowRoot, childCtx);
        if (tag === 'iframe' || tag === 'frame') {
          let doc = null;
          try { doc = el.contentDocument; } catch (_) { doc = null; }
          if (doc && doc.documentElement && box) walk(doc.documentElement, { ...childCtx, inControl: false, inListed: false });
          continue;
        }
        walk(el, childCtx);
      }
    };
    // A document being replaced may have no root for a moment.
    if (document.documentElement) walk(document.documentElement, { inControl: false, inListed: false, pointer: false, visible: true, y: 0, block: null });

    // Merge text into lines and sort every item into viewport / below / above.
    const inView = [], below = [], above = [];
    for (const it of items) {
      const y = it.el ? it.top : it.y;
      const bottom = it.el ? it.bottom : it.y + 1;
      (bottom <= 0 ? above : y >= vh ? below : inView).push(it);
    }
    const ordered = [];
    const section = (label, list) => {
      if (!list.length) return;
      if (label) ordered.push({ text: label, marker: true });
      let lastText = null;
      for (const it of list) {
        if (it.el) { ordered.push(it); lastText = null; continue; }
        if (lastText && lastText.block === it.block && lastText.text.length + it.text.length < 160) {
          lastText.text += ' ' + it.text;
        } else {
          lastText = { text: it.text, block: it.block };
          ordered.push(lastText);
        }
      }
    };
    section(null, inView);
    section('[below the viewport]', below);
    section('[above the viewport]', above);

    const elements = [];
    const lines = [];
    let length = 0, truncated = false, hidden = 0, hiddenAbove = 0;
    for (const it of ordered) {
      const line = it.el ? `[${elements.length + 1}]${describe(it.el)}` : it.text;
      if (it.el) elements.push(it.el);
      if (!truncated && length + line.length + 1 > opts.maxChars) truncated = true;
      if (truncated) {
        if (it.el) { hidden++; if (it.bottom <= 0) hiddenAbove++; }
        continue;
      }
      lines.push(line);
      length += line.length + 1;
    }
    if (truncated) {
      lines.push(hiddenAbove === 0
        ? `... ${hidden} more elements below (scroll down to see them)`
        : `... ${hidden} more elements not shown (${hiddenAbove} of them above; scroll to see them)`);
    }

    agent.snapshots.set(opts.snapshotId, elements);
    agent.order.push(opts.snapshotId);
    while (agent.order.length > KEEP_SNAPSHOTS) agent.snapshots.delete(agent.order.shift());

    const se = document.scrollingElement || document.documentElement;
    return {
      url: location.href,
      title: document.title,
      elements: lines.join('\n'),
      element_count: elements.length,
      truncated,
      pixels_above: Math.max(0, Math.round(scrollY)),
      pixels_below: Math.max(0, Math.round(se.scrollHeight - scrollY - innerHeight)),
      viewport: { width: vw, height: vh },
      content: opts.content ? clip(document.body ? document.body.innerText : '', opts.contentChars) : null,
    };
  };

  function lookup(sid, index) {
    const list = agent.snapshots.get(sid);
    if (!list) return { error: 'stale', reason: `snapshot ${sid} does not belong to this page (it navigated or reloaded)` };
    const el = list[index - 1];
    if (!el) return { error: 'not_found', reason: `snapshot ${sid} has no element [${index}] (it has ${list.length})` };
    if (!el.isConnected) return { error: 'stale', reason: `element [${index}] is no longer on the page` };
    const style = getComputedStyle(el);
    if (style.display === 'none' || !visibleBox(el, style)) return { error: 'stale', reason: `element [${index}] is no longer visible` };
    return { el };
  }

  // Scrolls the element into view; answers where to click and whether a click would reach it.
  agent.locate = (sid, index) => {
    const r = lookup(sid, index);
    if (r.error) return r;
    const el = r.el;
    el.scrollIntoView({ block: 'center', inline: 'center', behavior: 'instant' });
    const box = topRect(el);
    const local = el.getBoundingClientRect();
    const hit = reaches(el, local.left + local.width / 2, local.top + local.height / 2);
    return {
      x: box.left + box.width / 2,
      y: box.top + box.height / 2,
      reachable: hit.ok,
      covered_by: hit.ok || !hit.by ? null : describe(hit.by),
      desc: describe(el),
    };
  };

  // Focuses a text field and selects its content, so typed text replaces it.
  agent.prepareInput = (sid, index) => {
    const r = lookup(sid, index);
    if (r.error) return r;
    const el = r.el;
    const tag = el.localName;
    const type = (el.type || '').toLowerCase();
    el.scrollIntoView({ block: 'center', behavior: 'instant' });
    if (tag === 'textarea' || (tag === 'input' && TYPABLE.has(type))) {
      el.focus();
      el.select();
      return { mode: 'type', desc: describe(el) };
    }
    if (tag === 'input' && SETTABLE.has(type)) return { mode: 'set', desc: describe(el) };
    if (el.isContentEditable) {
      el.focus();
      const range = el.ownerDocument.createRange();
      range.selectNodeContents(el);
      const sel = el.ownerDocument.defaultView.getSelection();
      sel.removeAllRanges();
      sel.addRange(range);
      return { mode: 'type', desc: describe(el) };
    }
    return { error: 'wrong_kind', reason: `${describe(el)} does not take text; click it instead` };
  };

  // Sets a value the keyboard cannot type (dates, ranges, colours) as the page would see it.
  agent.setValue = (sid, index, text) => {
    const r = lookup(sid, index);
    if (r.error) return r;
    const el = r.el;
    const setter = Object.getOwnPropertyDescriptor(Object.getPrototypeOf(el), 'value');
    if (setter && setter.set) setter.set.call(el, text); else el.value = text;
    el.dispatchEvent(new Event('input', { bubbles: true }));
    el.dispatchEvent(new Event('change', { bubbles: true }));
    return { value: el.value, desc: describe(el) };
  };

  // After typing: the change event a person's blur would fire, and the value now.
  agent.finishInput = (sid, index) => {
    const r = lookup(sid, index);
    if (r.error) return r;
    const el = r.el;
    if (el.localName === 'input' || el.localName === 'textarea') {
      el.dispatchEvent(new Event('change', { bubbles: true }));
      return { value: el.value, desc: describe(el) };
    }
    return { value: el.innerText, desc: describe(el) };
  };

  function selectOf(sid, index) {
    const r = lookup(sid, index);
    if (r.error) return r;
    if (r.el.localName !== 'select') return { error: 'wrong_kind', reason: `${describe(r.el)} is not a native <select>` };
    return r;
  }

  agent.options = (sid, index) => {
    const r = selectOf(sid, index);
    if (r.error) return r;
    return {
      desc: describe(r.el),
      options: Array.from(r.el.options).map((o, i) => ({ index: i, text: clip(o.text, 200), value: o.value, selected: o.selected })),
    };
  };

  agent.select = (sid, index, text) => {
    const r = selectOf(sid, index);
    if (r.error) return r;
    const el = r.el;
    const opts = Array.from(el.options);
    const want = clip(text, 1000);
    const found = opts.find((o) => clip(o.text, 1000) === want) ||
      opts.find((o) => clip(o.text, 1000).toLowerCase() === want.toLowerCase()) ||
      opts.find((o) => o.value === text);
    if (!found) {
      return { error: 'no_match', reason: `no option "${want}" in ${describe(el)}; options: ${opts.map((o) => JSON.stringify(clip(o.text, 60))).join(', ')}` };
    }
    if (found.disabled) return { error: 'wrong_kind', reason: `option "${want}" is disabled` };
    el.value = found.value;
    found.selected = true;
    el.dispatchEvent(new Event('input', { bubbles: true }));
    el.dispatchEvent(new Event('change', { bubbles: true }));
    return { desc: describe(el), text: clip(found.text, 200), value: found.value };
  };

  // Scrolls the page (or, if the page itself cannot scroll, the container under the centre).
  agent.scroll = (dy) => {
    const before = scrollY;
    scrollBy({ top: dy, behavior: 'instant' });
    if (scrollY !== before) return { scrolled: Math.round(scrollY - before), container: 'page' };
    for (let n = document.elementFromPoint(innerWidth / 2, innerHeight / 2); n; n = n.parentElement) {
      const s = getComputedStyle(n);
      if (/(auto|scroll)/.test(s.overflowY) && n.scrollHeight > n.clientHeight) {
        const b = n.scrollTop;
        n.scrollBy({ top: dy, behavior: 'instant' });
        if (n.scrollTop !== b) return { scrolled: Math.round(n.scrollTop - b), container: describe(n) };
      }
    }
    return { scrolled: 0, container: 'page' };
  };

  agent.scrollToText = (text) => {
    const want = clip(text, 1000).toLowerCase();
    const search = (root) => {
      const walker = document.createTreeWalker(root, NodeFilter.SHOW_ELEMENT | NodeFilter.SHOW_TEXT);
      for (let n = walker.nextNode(); n; n = walker.nextNode()) {
        if (n.nodeType === 1) {
          if (n.shadowRoot) { const f = search(n.shadowRoot); if (f) return f; }
          if (n.localName === 'iframe') {
            try { if (n.contentDocument) { const f = search(n.contentDocument.documentElement); if (f) return f; } } catch (_) { /* cross-origin */ }
          }
          continue;
        }
        const parent = n.parentElement;
        if (!parent || SKIP.has(parent.localName)) continue;
        if (!clip(n.nodeValue, 100000).toLowerCase().includes(want)) continue;
        const style = getComputedStyle(parent);
        if (style.display === 'none' || !visibleBox(parent, style)) continue;
        return parent;
      }
      return null;
    };
    const found = search(document.documentElement);
    if (!found) return { error: 'no_match', reason: `no visible text "${clip(text, 100)}" on the page` };
    found.scrollIntoView({ block: 'center', behavior: 'instant' });
    return { desc: clip(found.innerText, 100) };
  };

  // The point to press or release for a drag end given by index.
  agent.point = (sid, index) => {
    const r = lookup(sid, index);
    if (r.error) return r;
    const box = topRect(r.el);
    return { x: box.left + box.width / 2, y: box.top + box.height / 2, desc: describe(r.el) };
  };

  G.__coveAgent = agent;
  return agent;
})()
