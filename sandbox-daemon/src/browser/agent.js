// coved's page agent. Evaluated as an expression in an isolated world (the page's scripts
// cannot see or change it, nor the builtins it uses), it installs itself once per document
// and evaluates to the agent object.
//
// A snapshot walks the DOM, same-origin iframes and open shadow roots, lists the visible
// interactive elements with short lines of visible text, viewport first, and keeps the
// element objects under the snapshot's id so actions reach the very element the model saw,
// or learn that it is gone.
(() => {
  const VERSION = 12;
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

  const agent = {
    version: VERSION, snapshots: new Map(), order: [], lastChange: performance.now(), lastAnimation: 0,
    // Called on each change while a `nextChange` waits for one.
    changeWaiters: new Set(),
  };

  // When the page's content last changed (nodes or text, in any frame the agent sees):
  // a state is read once it has been still for a moment.
  try {
    new MutationObserver(() => {
      agent.lastChange = performance.now();
      for (const waiter of agent.changeWaiters) waiter();
    }).observe(document, { childList: true, characterData: true, subtree: true });
  } catch (_) { /* no document yet: nothing to wait for */ }

  // Whether the page started a navigation of this document since the last input was armed:
  // the Navigation API's `navigate` event fires, in every world, as the document begins one
  // (a link, a form, `location`, history), so after an input the daemon waits for a
  // navigation only when one began, instead of a fixed grace for events that may come.
  agent.navigateSeen = false;
  const HAS_NAVIGATION_API = !!(G.navigation && G.navigation.addEventListener);
  if (HAS_NAVIGATION_API) G.navigation.addEventListener('navigate', () => { agent.navigateSeen = true; });

  // The page's clock, to compare with when it last changed.
  // On a clock shared by every document of the tab (a new one restarts performance.now()),
  // so a time read before a navigation compares with one read after it.
  agent.now = () => performance.timeOrigin + performance.now();
  // When the page last changed (content or a finite animation), on agent.now's clock.
  const changedAt = () => performance.timeOrigin + Math.max(agent.lastChange, agent.lastAnimation);

  agent.armInput = () => {
    agent.navigateSeen = false;
    return HAS_NAVIGATION_API;
  };

  // Resolves after the page has run the input's handlers and drawn the next frame (or after
  // 100 ms where frames are not drawn), saying whether a navigation began.
  agent.afterInput = () => new Promise((resolve) => {
    const done = () => resolve({ navigating: agent.navigateSeen });
    requestAnimationFrame(() => setTimeout(done, 0));
    setTimeout(done, 100);
  });

  // Finite animations still playing (an opening menu, a sliding panel); endless ones (a
  // spinner) never end, so they are not waited for.
  function animating() {
    if (!document.getAnimations) return false;
    return document.getAnimations().some((a) => {
      if (a.playState !== 'running') return false;
      const timing = a.effect && a.effect.getComputedTiming ? a.effect.getComputedTiming() : null;
      return !!timing && Number.isFinite(timing.endTime);
    });
  }

  // The end of the document's load event (0 before it ends): a page's load handlers often
  // start its last steps on short timers, so a page is still only `quietMs` after it too.
  const loadEnded = () => {
    const nav = performance.getEntriesByType ? performance.getEntriesByType('navigation')[0] : null;
    return nav && nav.loadEventEnd > 0 ? nav.loadEventEnd : 0;
  };

  // Resolves once the page has been still for `quietMs` (no content change, no finite
  // animation, loaded), or after `maxMs` whatever it is doing. `fresh`: still for `quietMs`
  // from now, whatever came before (an answer just came: the page acts on it, perhaps by
  // asking for the next one, without changing anything yet).
  agent.settle = (opts) => new Promise((resolve) => {
    const started = performance.now();
    const floor = opts.fresh ? started : 0;
    const check = () => {
      const now = performance.now();
      const quietLeft = opts.quietMs - (now - Math.max(agent.lastChange, floor, loadEnded()));
      const moving = animating();
      if (moving) agent.lastAnimation = now;
      const still = quietLeft <= 0 && document.readyState === 'complete' && !moving;
      if (still || now - started >= opts.maxMs) {
        // When it last changed: a picture taken since shows this page.
        resolve({ waited_ms: Math.round(now - started), settled: still, changed_at: changedAt() });
        return;
      }
      // Right when the quiet period would end, or soon for loading and animations.
      setTimeout(check, quietLeft > 0 ? Math.ceil(quietLeft) : 10);
    };
    check();
  });

  // Resolves with when the page changed (on agent.now's clock) once it changes after
  // `since`, or with null after `maxMs`: a picture taken before then still shows the page.
  // A change of content wakes it at once; finite animations are looked for every 10 ms
  // unless `look` is false (looking makes the page work out its styles, which a picture
  // being drawn needs the page for). A snapshot ends every wait: the picture it was for is
  // no longer wanted.
  agent.nextChange = (since, maxMs, look) => new Promise((resolve) => {
    const started = performance.now();
    let timer = 0;
    const finish = (value) => {
      agent.changeWaiters.delete(check);
      clearTimeout(timer);
      resolve(value);
    };
    const check = (ended) => {
      const now = performance.now();
      if (look && animating()) agent.lastAnimation = now;
      const changed = changedAt();
      if (changed > since) finish(changed);
      else if (ended === true || now - started >= maxMs) finish(null);
      else {
        clearTimeout(timer);
        timer = setTimeout(check, look ? 10 : maxMs - (now - started));
      }
    };
    agent.changeWaiters.add(check);
    check();
  });

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

  // A control by its tag or role. Anything else only hints at one (a listener, an onclick, a
  // tabindex, a pointer cursor): frameworks put listeners on containers (React's root,
  // jQuery's delegation, <body>), so a hint makes a control only of a small element.
  const CONTROLS = 'a[href],button,input:not([type=hidden]),select,textarea,summary,[contenteditable=""],[contenteditable="true"],' +
    Array.from(ROLES).map((r) => `[role="${r}"]`).join(',');
  const HINT_TEXT = 100;
  // Controls whose content is part of the control: nothing inside them is listed.
  const ATOMIC_TAGS = new Set(['a', 'button', 'select', 'textarea', 'input', 'option']);
  const ATOMIC_ROLES = new Set(['button', 'link', 'checkbox', 'radio', 'switch', 'option', 'menuitemcheckbox',
    'menuitemradio', 'textbox', 'searchbox', 'combobox', 'slider', 'spinbutton']);
  const NAME_CHARS = 80;
  // Form fields stand on lines of their own, never inside a sentence.
  const FIELDS = new Set(['input', 'select', 'textarea']);
  const LINE_CHARS = 240;

  function isAtomic(el) {
    return ATOMIC_TAGS.has(el.localName) || ATOMIC_ROLES.has(el.getAttribute('role'));
  }

  function isControlByKind(el) {
    const tag = el.localName;
    if (tag === 'a') return el.hasAttribute('href');
    if (tag === 'button' || tag === 'select' || tag === 'textarea' || tag === 'summary') return true;
    if (tag === 'input') return el.type !== 'hidden';
    if (el.isContentEditable) return !(el.parentElement && el.parentElement.isContentEditable);
    const role = el.getAttribute('role');
    return !!role && ROLES.has(role);
  }

  function hintsControl(el, style, parentPointer) {
    const tag = el.localName;
    if (tag === 'body' || tag === 'html') return false;
    if (el.hasAttribute('onclick') || typeof el.onclick === 'function') return true;
    if (el.getAttribute('draggable') === 'true') return true;
    const tabindex = el.getAttribute('tabindex');
    if (tabindex !== null && Number(tabindex) >= 0) return true;
    if (style.cursor === 'pointer' && !parentPointer) return true;
    return hasClickListener(el);
  }

  // Small enough to be one control: no control inside, little text, and not a list of
  // items (a menu whose items are what a click picks).
  const LISTS = new Set(['ul', 'ol', 'menu', 'dl', 'table', 'tbody', 'thead']);
  function isSmall(el) {
    if (LISTS.has(el.localName) && el.childElementCount > 1) return false;
    if (el.querySelector(CONTROLS)) return false;
    return (el.textContent || '').replace(/\s+/g, ' ').trim().length <= HINT_TEXT;
  }

  function isInteractive(el, style, parentPointer) {
    if (el.localName === 'a' && !el.hasAttribute('href')) {
      return hintsControl(el, style, parentPointer) && isSmall(el);
    }
    if (isControlByKind(el)) {
      // A menu item or tab around links and buttons: those are what a click needs.
      return isAtomic(el) || !el.querySelector(CONTROLS);
    }
    return hintsControl(el, style, parentPointer) && isSmall(el);
  }

  function visibleBox(el, style) {
    if (style.visibility === 'hidden' || style.visibility === 'collapse') return null;
    if (el.checkVisibility && !el.checkVisibility({ checkOpacity: true, checkVisibilityCSS: true })) return null;
    const r = el.getBoundingClientRect();
    if (r.width <= 1 || r.height <= 1) return null;
    return r;
  }

  // Is `el` what a click at (x, y) would reach? Checked through shadow roots and frames.
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

  // Where a click reaches the element: its centre, else another point of the part its frame
  // shows (a banner or badge may cover the centre of an element that is mostly free).
  function clickPoint(el) {
    const box = el.getBoundingClientRect();
    const win = el.ownerDocument.defaultView;
    const x1 = Math.max(box.left, 0), y1 = Math.max(box.top, 0);
    const x2 = Math.min(box.right, win.innerWidth), y2 = Math.min(box.bottom, win.innerHeight);
    if (!(x2 > x1 && y2 > y1)) return { ok: false, by: null, x: (box.left + box.right) / 2, y: (box.top + box.bottom) / 2 };
    let first = null;
    for (const [fx, fy] of [[0.5, 0.5], [0.25, 0.5], [0.75, 0.5], [0.5, 0.25], [0.5, 0.75], [0.15, 0.15], [0.85, 0.85]]) {
      const x = x1 + (x2 - x1) * fx, y = y1 + (y2 - y1) * fy;
      const hit = reaches(el, x, y);
      if (hit.ok) return { ok: true, by: hit.by, x, y };
      if (!first) first = { ok: false, by: hit.by, x, y };
    }
    return first;
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
      if (u.origin === location.origin) {
        // A link to a place on this page says only where.
        if (u.pathname === location.pathname && u.search === location.search &&
          (u.hash || href.trim().startsWith('#'))) return u.hash || '#';
        return u.pathname + u.search + u.hash;
      }
      return u.href;
    } catch (_) {
      return href;
    }
  }

  // Elements whose text is code or markup, never words on the page (a script that is not
  // rendered still answers innerText with its source).
  const CODE = 'script,style,template,noscript';

  function textOf(node) {
    if (node.nodeType === 1 && node.matches(CODE)) return '';
    return node.innerText !== undefined ? node.innerText : node.textContent;
  }

  // A label's words, without those of the control inside it (a select's options, a value).
  function labelText(label, control) {
    let out = '';
    const walker = label.ownerDocument.createTreeWalker(label, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      const p = n.parentElement;
      if (control.contains(n) || (p && (p.closest('select,textarea') || p.closest(CODE)))) continue;
      out += n.nodeValue + ' ';
    }
    return clip(out, 200);
  }

  // The text node right after a checkbox or radio with no label, which names it.
  function unlabelledNear(el) {
    const type = (el.type || '').toLowerCase();
    if (el.localName !== 'input' || (type !== 'checkbox' && type !== 'radio')) return null;
    if ((el.labels && el.labels.length) || el.getAttribute('aria-label') || el.getAttribute('aria-labelledby')) return null;
    for (let n = el.nextSibling; n; n = n.nextSibling) {
      if (n.nodeType === 3) {
        if (clip(n.nodeValue, 10)) return n;
        continue;
      }
      if (n.nodeType === 1 && n.matches(CODE)) continue;
      return null;
    }
    return null;
  }

  // The words right after a checkbox or radio that has no label.
  function nearbyText(el) {
    for (let n = el.nextSibling; n; n = n.nextSibling) {
      if (n.nodeType === 3) {
        const t = clip(n.nodeValue, NAME_CHARS);
        if (t) return t;
        continue;
      }
      if (n.nodeType !== 1 || n.matches(CONTROLS) || n.localName === 'br') return '';
      if (n.matches(CODE)) continue;
      return clip(textOf(n), NAME_CHARS);
    }
    return '';
  }

  // The element's accessible name, roughly as a screen reader would say it.
  function nameOf(el) {
    const doc = el.ownerDocument;
    const by = el.getAttribute('aria-labelledby');
    if (by) {
      const t = clip(by.split(/\s+/).map((id) => {
        const n = doc.getElementById(id);
        return n ? textOf(n) : '';
      }).join(' '), 200);
      if (t) return t;
    }
    const aria = clip(el.getAttribute('aria-label'), 200);
    if (aria) return aria;
    const tag = el.localName;
    if (tag === 'label' && el.control) return labelText(el, el.control);
    if (tag === 'input' || tag === 'select' || tag === 'textarea') {
      const type = (el.type || '').toLowerCase();
      if (type === 'submit' || type === 'button' || type === 'reset') {
        return el.value || (type === 'submit' ? 'Submit' : type === 'reset' ? 'Reset' : '');
      }
      if (type === 'image') return el.alt || el.value || '';
      const labels = el.labels ? Array.from(el.labels).map((l) => labelText(l, el)).filter(Boolean) : [];
      if (labels.length) return labels.join(' ');
      if (type === 'checkbox' || type === 'radio') return nearbyText(el) || clip(el.title, 200);
      return clip(el.title, 200);
    }
    if (tag === 'img') return clip(el.alt || el.title, 200);
    const text = clip(textOf(el), 1000);
    if (text) return text;
    const img = el.querySelector('img[alt]');
    if (img && img.alt.trim()) return clip(img.alt, 200);
    const svgTitle = el.querySelector('svg title');
    if (svgTitle && svgTitle.textContent.trim()) return clip(svgTitle.textContent, 200);
    return clip(el.getAttribute('title'), 200);
  }

  // The control a label clicks for, when the page hides it and styles the label in its
  // place (a checkbox, radio or file input): clicking the label works the input. (A label
  // of a hidden select or text field does nothing when clicked: the page's own widget
  // stands in for those.)
  const STAND_IN_TYPES = new Set(['checkbox', 'radio', 'file']);
  function standIn(el) {
    if (el.localName !== 'label' || !el.control) return null;
    const c = el.control;
    if (c.localName !== 'input' || !STAND_IN_TYPES.has(c.type)) return null;
    const style = getComputedStyle(c);
    const r = c.getBoundingClientRect();
    const hidden = style.display === 'none' || style.visibility === 'hidden' || Number(style.opacity) === 0 || r.width <= 1 || r.height <= 1;
    return hidden ? c : null;
  }

  function optionsOf(select) {
    const all = Array.from(select.options);
    const shown = all.slice(0, 8).map((o) => clip(o.text, 30).replace(/[|"]/g, ' '));
    return shown.join('|') + (all.length > 8 ? `|…${all.length - 8} more` : '');
  }

  // A long text's value is shown whole up to a share of the page's budget (more when the
  // whole page is asked for), exactly (JSON-quoted, lines and all), so it can be read and
  // edited anywhere; a cut says where it fell.
  const TEXTAREA_CHARS = 2000;
  let textLimits = { shown: TEXTAREA_CHARS, full: TEXTAREA_CHARS };
  function textValue(value) {
    const n = textLimits.shown;
    if (value.length <= n) return `value=${JSON.stringify(value)}`;
    const more = textLimits.full > n ? `; full=true shows ${textLimits.full}` : ' (the page\'s budget)';
    return `value=${JSON.stringify(value.slice(0, n))} cut="at ${n} of ${value.length} characters${more}"`;
  }

  // The element as one line: `<tag attrs>name`, with its state.
  function describe(el, inline) {
    const tag = el.localName;
    const control = standIn(el) || el;
    const ctag = control.localName;
    const attrs = [];
    const add = (k, v, n) => {
      if (v === null || v === undefined || v === '') return;
      attrs.push(`${k}="${clip(v, n || 60).replace(/"/g, "'")}"`);
    };
    const flag = (k, on) => { if (on) attrs.push(k); };
    const name = clip(nameOf(el), NAME_CHARS);
    const type = (control.type || '').toLowerCase();
    if (ctag === 'input') {
      add('type', type === 'text' ? '' : type);
      add('name', control.name);
      if (control.placeholder && control.placeholder !== name) add('placeholder', control.placeholder);
      if (type === 'checkbox' || type === 'radio') {
        add('value', control.value === 'on' ? '' : control.value);
        flag('checked', control.checked);
      } else if (type === 'password') {
        if (control.value) attrs.push('value="••••"');
      } else if (type !== 'file' && type !== 'submit' && type !== 'button' && type !== 'reset') {
        add('value', control.value);
        if (SETTABLE.has(type)) { add('min', control.min); add('max', control.max); }
      }
      flag('multiple', control.multiple);
      flag('required', control.required);
      flag('readonly', control.readOnly);
    } else if (ctag === 'textarea') {
      add('name', control.name);
      if (control.placeholder && control.placeholder !== name) add('placeholder', control.placeholder);
      if (control.value) attrs.push(textValue(control.value));
      flag('required', control.required);
      flag('readonly', control.readOnly);
    } else if (ctag === 'select') {
      add('name', control.name);
      flag('multiple', control.multiple);
      add('value', Array.from(control.selectedOptions || []).map((o) => clip(o.text, 40)).join(', '), 120);
      add('options', optionsOf(control), 200);
      flag('required', control.required);
    } else if (tag === 'a') {
      const href = shortHref(el);
      // The words say where a link goes; the address is kept when they say little.
      // A place on this page (`#…`) is reached by clicking; its address says nothing more,
      // and a bare `#` (a link a script handles: a day in a calendar) says nothing at all.
      if (href !== '#' && (name.length < 4 || (!inline && href.length <= 40 && !href.startsWith('#')))) {
        add('href', href, 100);
      }
      if (el.target && el.target !== '_self') add('target', el.target);
    }
    const role = el.getAttribute('role');
    if (role && role !== 'presentation' && role !== 'none') add('role', role);
    for (const state of ['expanded', 'checked', 'selected', 'pressed']) {
      add(`aria-${state}`, el.getAttribute(`aria-${state}`));
    }
    flag('disabled', control.disabled || el.getAttribute('aria-disabled') === 'true');
    flag('contenteditable', el.isContentEditable && tag !== 'input' && tag !== 'textarea');
    return `<${tag}${attrs.length ? ' ' + attrs.join(' ') : ''}>${name}`;
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

  // Whether a box sits in an inner scroll container's hidden part.
  function clippedBy(clip, off) {
    return clip && (off.top + off.height <= clip.top || off.top >= clip.bottom);
  }


  // What a part of the page holds, counted without reading it: its controls, its blocks of
  // text and its headings. One pass of cheap tests: matching CONTROLS' two dozen selectors
  // against every element of a long page costs several times more.
  const TEXT_TAGS = new Set(['p', 'li', 'dd', 'dt', 'pre', 'blockquote', 'tr', 'figcaption']);
  const HEADING_TAGS = new Set(['h1', 'h2', 'h3', 'h4', 'h5', 'h6']);

  function tally(root) {
    let controls = 0, texts = 0;
    const heads = [];
    const stack = [root];
    while (stack.length) {
      const el = stack.pop();
      const tag = el.localName;
      if (isControlByKind(el)) controls += 1;
      const heading = HEADING_TAGS.has(tag) || el.getAttribute('role') === 'heading';
      if (heading || TEXT_TAGS.has(tag)) texts += 1;
      if (heading && heads.length < 40) heads.push(el);
      for (let c = el.lastElementChild; c; c = c.previousElementSibling) stack.push(c);
    }
    return {
      controls,
      texts,
      headings: heads.map((h) => clip(textOf(h).replace(/¶/g, ''), 40)).filter(Boolean),
    };
  }

  function headingLevel(el) {
    const m = /^h([1-6])$/.exec(el.localName);
    if (m) return Number(m[1]);
    if (el.getAttribute('role') === 'heading') return Number(el.getAttribute('aria-level')) || 2;
    return 0;
  }

  // A page as lines a model reads: the controls, each with its index, between the page's own
  // words in reading order (headings marked, inline text joined as shown, table cells by row).
  agent.snapshot = (opts) => {
    hearListeners(opts.listeners);
    textLimits = {
      shown: opts.full ? Math.floor(opts.maxChars / 2) : Math.min(TEXTAREA_CHARS, Math.floor(opts.maxChars / 4)),
      full: Math.floor(opts.maxChars / 2),
    };
    const vw = innerWidth, vh = innerHeight;
    const overlay = blockingOverlay(vw, vh);
    const items = [];
    const spoken = new Set();
    // The viewport and a margin around it are read in full; what lies further is summed up
    // (unless the whole page is asked for), and a part of the page wholly out there is
    // counted without being read.
    const margin = vh * 0.25;
    const far = (off) => !opts.full && (off.top > vh + margin || off.top + off.height < -margin);

    const walk = (node, ctx) => {
      for (let child = node.firstChild; child; child = child.nextSibling) {
        if (child.nodeType === 3) {
          if (ctx.quiet || !ctx.visible) continue;
          const raw = child.nodeValue;
          if (ctx.pre) {
            // Preformatted text keeps its spaces; only a line's end breaks it.
            const lines = raw.split('\n');
            lines.forEach((l, i) => {
              if (i > 0) items.push({ brk: true, block: ctx.block });
              const t = (i < lines.length - 1 ? l.replace(/\s+$/, '') : l).replace(/\t/g, '  ');
              if (t) items.push({ text: t.length > LINE_CHARS ? t.slice(0, LINE_CHARS - 1) + '…' : t, lead: false, trail: false, pre: true, ...ctx.where });
            });
            continue;
          }
          const t = raw.replace(/\s+/g, ' ').trim();
          if (!t) {
            // Whitespace between inline elements is a space in the text.
            const last = items[items.length - 1];
            if (last && (last.text !== undefined || last.el) && last.block === ctx.block) last.trail = true;
            continue;
          }
          // Words already said as a control's name.
          if (spoken.has(child)) continue;
          items.push({ text: t, lead: /^\s/.test(raw), trail: /\s$/.test(raw), ...ctx.where });
          continue;
        }
        if (child.nodeType !== 1) continue;
        const el = child;
        const tag = el.localName;
        if (SKIP.has(tag)) continue;
        if (tag === 'br') {
          items.push({ brk: true, block: ctx.block });
          continue;
        }
        const style = getComputedStyle(el);
        if (style.display === 'none') continue;
        const box = style.display === 'contents' ? null : visibleBox(el, style);
        const pointer = style.cursor === 'pointer';
        let listed = false;
        let named = false;
        let off = null;
        if (box) {
          off = topRect(el);
          if (far(off) && style.position !== 'fixed' && style.position !== 'sticky') {
            // Behind a modal, or placed above the page's top (a hidden submit button, a
            // skip link), it is out of reach: not even counted.
            const aboveThePage = off.top + off.height <= -scrollY;
            if (!aboveThePage && (!overlay || overlay.contains(el) || el.contains(overlay))) {
              items.push({ skipped: tally(el), top: off.top, bottom: off.top + off.height });
            }
            continue;
          }
          const interactive = !ctx.inControl && !clippedBy(ctx.clip, off) &&
            (isInteractive(el, style, ctx.pointer) || standIn(el) !== null);
          if (interactive) {
            const inView = off.top + off.height > 0 && off.top < vh && off.left + off.width > 0 && off.left < vw;
            let covered = overlay !== null && !overlay.contains(el);
            if (inView) covered = !clickPoint(el).ok;
            if (!covered) {
              // An inline control inside a run of text is read in its sentence.
              const inRun = INLINE.has(style.display) && style.display !== 'contents' &&
                !FIELDS.has(tag) && !standIn(el);
              items.push({ ...ctx.where, el, top: off.top, bottom: off.top + off.height, inline: inRun, block: ctx.block });
              listed = true;
              named = clip(nameOf(el), NAME_CHARS + 1).length <= NAME_CHARS;
              const near = unlabelledNear(el);
              if (near) spoken.add(near);
            }
          }
        }
        const visible = !!box || (style.display === 'contents' && ctx.visible);
        const heading = headingLevel(el);
        const display = style.display;
        const inline = INLINE.has(display);
        // Inside a table cell everything joins the row's line; cells are parted by ` | `.
        const inCell = ctx.where.cell !== null && display !== 'table' && display !== 'table-row';
        let block = inline || inCell ? ctx.block : el;
        let cell = ctx.where.cell;
        if (display === 'table-cell') {
          block = ctx.block;
          cell = el;
        }
        // A label's words are its control's name: said once, on the control's line.
        const labelsListed = tag === 'label' && el.control && !standIn(el) && !ctx.inControl &&
          clip(labelText(el, el.control), 201).length <= 200;
        // A scroll container hides what lies outside its box.
        let clipBox = ctx.clip;
        if (box && /(auto|scroll|hidden)/.test(style.overflowY) && el.scrollHeight > el.clientHeight + 4 && tag !== 'body' && tag !== 'html') {
          const top = off.top + el.clientTop;
          const bottom = top + el.clientHeight;
          clipBox = ctx.clip ? { top: Math.max(top, ctx.clip.top), bottom: Math.min(bottom, ctx.clip.bottom) } : { top, bottom };
          if (/(auto|scroll)/.test(style.overflowY) && !listed && !ctx.inControl) {
            items.push({ el, top: off.top, bottom: off.top + off.height, scroller: true });
          }
        }
        const textTop = off ? off.top : ctx.where.top;
        const textBottom = off ? off.top + off.height : ctx.where.bottom;
        const hidden = clippedBy(clipBox, { top: textTop, height: textBottom - textTop });
        const childCtx = {
          inControl: ctx.inControl || (listed && isAtomic(el)) || tag === 'select' || tag === 'svg' || (listed && standIn(el) !== null),
          quiet: ctx.quiet || (listed && named) || labelsListed || tag === 'select' || tag === 'svg' || tag === 'textarea',
          pointer,
          visible: visible && !hidden && !(overlay && !overlay.contains(el) && !el.contains(overlay)),
          pre: style.whiteSpaceCollapse ? style.whiteSpaceCollapse !== 'collapse' : /^pre|break-spaces/.test(style.whiteSpace),
          clip: clipBox,
          block,
          where: {
            block,
            cell,
            heading: heading || ctx.where.heading,
            bullet: display === 'list-item' ? true : (block === ctx.block ? ctx.where.bullet : false),
            top: textTop,
            bottom: textBottom,
          },
        };
        if (el.shadowRoot) walk(el.shadowRoot, childCtx);
        if (tag === 'iframe' || tag === 'frame') {
          let doc = null;
          try { doc = el.contentDocument; } catch (_) { doc = null; }
          if (doc && doc.documentElement && box) walk(doc.documentElement, { ...childCtx, inControl: false, quiet: false });
          continue;
        }
        if (inCell && !inline && display !== 'table-cell') {
          // A block inside a cell starts a space after what came before it in the cell.
          const last = items[items.length - 1];
          if (last && (last.text !== undefined || last.el)) last.trail = true;
        }
        walk(el, childCtx);
        // Text after a block is a new line, even in the same parent block (a row's cells
        // stay on its line).
        if (!inline && !inCell && display !== 'table-cell') items.push({ brk: true, block: ctx.block });
        if (inCell && !inline) {
          // Blocks inside a cell join its line, a space apart.
          const last = items[items.length - 1];
          if (last && last.text !== undefined) last.trail = true;
        }
      }
    };
    const root = { inControl: false, quiet: false, pointer: false, visible: true, pre: false, clip: null, block: null,
      where: { block: null, cell: null, heading: 0, bullet: false, top: 0, bottom: 0 } };
    // A document being replaced may have no root for a moment.
    if (document.documentElement) walk(document.documentElement, root);

    // Lines, in reading order; each knows where it is. A line is text and inline controls,
    // or one control standing alone.
    const lines = [];
    let line = null;
    const flush = () => {
      if (!line) return;
      const prefix = (line.heading ? '#'.repeat(line.heading) + ' ' : '') + (line.bullet && !line.heading ? '- ' : '');
      // Long text wraps at a space between parts' words; controls are never cut. Each piece
      // keeps where it is, so a long run of inline controls is placed line by line.
      const fresh = () => ({ parts: [], length: 0, top: Infinity, bottom: -Infinity });
      const place = (c, at) => { c.top = Math.min(c.top, at.top); c.bottom = Math.max(c.bottom, at.bottom); };
      let current = fresh();
      const done = [];
      line.parts.forEach((part, i) => {
        const at = line.pos[i];
        if (typeof part !== 'string') {
          if (current.length + 40 > LINE_CHARS && current.parts.length) { done.push(current); current = fresh(); }
          current.parts.push(part);
          current.length += 40;
          place(current, at);
          return;
        }
        let text = part;
        while (current.length + text.length > LINE_CHARS) {
          let cut = text.lastIndexOf(' ', LINE_CHARS - current.length);
          if (cut <= 0) {
            if (current.length === 0) cut = LINE_CHARS; else { done.push(current); current = fresh(); continue; }
          }
          current.parts.push(text.slice(0, cut));
          place(current, at);
          done.push(current);
          current = fresh();
          text = text.slice(cut).replace(/^ /, '');
        }
        if (!current.parts.length && !line.pre) text = text.replace(/^ +/, '');
        if (text) { current.parts.push(text); current.length += text.length; place(current, at); }
      });
      if (current.parts.length) done.push(current);
      for (const d of done) {
        const alone = d.parts.length === 1 && typeof d.parts[0] !== 'string';
        if (alone) {
          lines.push({ el: d.parts[0].el, top: d.parts[0].top, bottom: d.parts[0].bottom });
        } else {
          const text = d.parts.map((p) => (typeof p === 'string' ? p : clip(nameOf(p.el), 40))).join('');
          lines.push({ parts: d.parts, prefix, top: d.top, bottom: d.bottom, heading: line.heading, text });
        }
      }
      line = null;
    };
    const append = (piece, it, lead) => {
      const at = { top: it.top, bottom: it.bottom };
      if (line && line.block === it.block) {
        const sep = line.cell !== it.cell ? ' | ' : (line.trail || lead ? ' ' : '');
        if (sep) { line.parts.push(sep); line.pos.push(at); }
        line.parts.push(piece);
        line.pos.push(at);
        line.cell = it.cell;
        return;
      }
      flush();
      line = { parts: [piece], pos: [at], block: it.block, cell: it.cell, trail: false, heading: it.heading, bullet: it.bullet, pre: !!it.pre };
    };
    for (const it of items) {
      if (it.skipped) {
        flush();
        lines.push({ skipped: it.skipped, top: it.top, bottom: it.bottom });
        continue;
      }
      if (it.el && !it.inline) {
        flush();
        lines.push({ el: it.el, top: it.top, bottom: it.bottom, scroller: it.scroller });
        continue;
      }
      if (it.el) {
        append({ el: it.el, top: it.top, bottom: it.bottom }, it, false);
        line.trail = !!it.trail;
        continue;
      }
      if (it.brk) {
        flush();
        continue;
      }
      append(it.text, it, it.lead);
      line.trail = it.trail;
    }
    flush();

    const near = (l) => l.bottom > -margin && l.top < vh + margin;
    const inView = [], below = [], above = [];
    for (const l of lines) {
      (near(l) ? inView : l.bottom <= 0 ? above : below).push(l);
    }
    // Indices: what is shown first, so the numbers a model sees count from 1.
    const elements = [];
    const indexOf = new Map();
    for (const group of [inView, below, above]) {
      for (const l of group) {
        if (l.skipped) continue;
        if (l.el) { indexOf.set(l, elements.length + 1); elements.push(l.el); }
        for (const p of l.parts || []) {
          if (typeof p !== 'string') { indexOf.set(p, elements.length + 1); elements.push(p.el); }
        }
      }
    }
    const render = (l) => {
      if (!l.el) {
        return (l.prefix + l.parts.map((p) => {
          if (typeof p === 'string') return p;
          return `[${indexOf.get(p)}]${describe(p.el, true)}</${p.el.localName}>`;
        }).join('')).replace(/\s+$/, '');
      }
      const i = indexOf.get(l);
      if (!l.scroller) return `[${i}]${describe(l.el)}`;
      const el = l.el;
      const more = Math.max(0, Math.round(el.scrollHeight - el.scrollTop - el.clientHeight));
      const tag = el.localName;
      const label = clip(el.getAttribute('aria-label') || el.getAttribute('title'), 40);
      return `[${i}]<${tag} scrollable ${Math.round(el.scrollTop)}px above ${more}px below>${label}`;
    };
    const summary = (list, where, how) => {
      const controls = list.reduce((n, l) => n + (l.skipped ? l.skipped.controls : l.el ? 1 : l.parts.filter((p) => typeof p !== 'string').length), 0);
      const texts = list.reduce((n, l) => n + (l.skipped ? l.skipped.texts : !l.el && l.parts.some((p) => typeof p === 'string' && p.trim()) ? 1 : 0), 0);
      if (!list.length) return null;
      const heads = list.flatMap((l) => (l.skipped ? l.skipped.headings : l.heading ? [clip(l.text.replace(/^#+ /, '').replace(/¶/g, ''), 40)] : []));
      const picked = where === 'above' ? heads.slice(-6) : heads.slice(0, 6);
      const more = heads.length > picked.length ? ' · …' : '';
      return `[${where}: ${controls} elements, ${texts} lines of text${picked.length ? '; headings: ' + picked.join(' · ') + more : ''}; ${how}]`;
    };

    const count = (l) => (l.skipped ? 0 : l.el ? 1 : l.parts.filter((p) => typeof p !== 'string').length);
    const out = [];
    let length = 0, truncated = false, hidden = 0;
    const emit = (text, el) => {
      if (!truncated && length + text.length + 1 > opts.maxChars) truncated = true;
      if (truncated) { hidden += el; return; }
      out.push(text);
      length += text.length + 1;
    };
    if (opts.full) {
      for (const l of inView) emit(render(l), count(l));
      if (below.length) { emit('[below the viewport]', 0); for (const l of below) emit(render(l), count(l)); }
      if (above.length) { emit('[above the viewport]', 0); for (const l of above) emit(render(l), count(l)); }
      if (truncated) out.push(`... ${hidden} more elements not shown (scroll to see them)`);
    } else {
      const up = summary(above, 'above', 'scroll up to see them');
      if (up) emit(up, 0);
      for (const l of inView) emit(render(l), count(l));
      if (truncated) out.push(`... ${hidden} more elements in view not shown`);
      const down = summary(below, 'below', 'scroll down to see them, or read the whole page (full=true)');
      if (down) out.push(down);
    }

    agent.snapshots.set(opts.snapshotId, elements);
    agent.order.push(opts.snapshotId);
    while (agent.order.length > KEEP_SNAPSHOTS) agent.snapshots.delete(agent.order.shift());

    const se = document.scrollingElement || document.documentElement;
    const read = {
      url: location.href,
      title: document.title,
      elements: out.join('\n'),
      element_count: elements.length,
      truncated: truncated || below.length > 0 || above.length > 0,
      pixels_above: Math.max(0, Math.round(scrollY)),
      pixels_below: Math.max(0, Math.round(se.scrollHeight - scrollY - innerHeight)),
      viewport: { width: vw, height: vh },
      content: opts.content ? clip(document.body ? document.body.innerText : '', opts.contentChars) : null,
      // When the page last changed, as its text was read: a picture taken since shows it.
      changed_at: changedAt(),
    };
    for (const waiter of agent.changeWaiters) waiter(true);
    return read;
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

  // Scrolls the element to the middle unless it is wholly in view and a click reaches it:
  // scrolling a page whose menus stick or reflow moves things under the pointer.
  function bringIntoView(el) {
    const b = topRect(el);
    const whole = b.top >= 0 && b.left >= 0 && b.top + b.height <= innerHeight && b.left + b.width <= innerWidth;
    if (whole && clickPoint(el).ok) return;
    el.scrollIntoView({ block: 'center', inline: 'center', behavior: 'instant' });
  }

  // Scrolls the element into view; answers where to click and whether a click would reach it.
  agent.locate = (sid, index) => {
    const r = lookup(sid, index);
    if (r.error) return r;
    const el = r.el;
    bringIntoView(el);
    const box = topRect(el);
    const local = el.getBoundingClientRect();
    const hit = clickPoint(el);
    return {
      x: box.left + (hit.x - local.left),
      y: box.top + (hit.y - local.top),
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
    bringIntoView(el);
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
      // Editors keep their own document and update it from key events: type key by key.
      return { mode: 'keys', desc: describe(el) };
    }
    return { error: 'wrong_kind', reason: `${describe(el)} does not take text; click it instead` };
  };

  // Sets a value the keyboard cannot type (dates, ranges, colours) as the page would see it.
  // The forms a date input stores: yyyy-mm-dd, hh:mm, yyyy-mm-ddThh:mm, yyyy-mm, yyyy-Www.
  const FORMATS = { date: 'yyyy-mm-dd', time: 'hh:mm', 'datetime-local': 'yyyy-mm-ddThh:mm', month: 'yyyy-mm', week: 'yyyy-Www' };
  const pad = (n) => String(n).padStart(2, '0');

  // A date as people write it (2019-06-09, 06/09/2019 as month/day/year, 9.6.2019 as
  // day.month.year, "June 9, 2019") in the form `type` stores.
  function storedValue(type, text) {
    const t = text.trim();
    const date = (s) => {
      let m = /^(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})$/.exec(s);
      if (m) return `${m[1]}-${pad(m[2])}-${pad(m[3])}`;
      m = /^(\d{1,2})\/(\d{1,2})\/(\d{4})$/.exec(s);
      if (m) return `${m[3]}-${pad(m[1])}-${pad(m[2])}`;
      m = /^(\d{1,2})[.-](\d{1,2})[.-](\d{4})$/.exec(s);
      if (m) return `${m[3]}-${pad(m[2])}-${pad(m[1])}`;
      const parsed = Date.parse(s + ' 12:00');
      if (!Number.isNaN(parsed)) {
        const d = new Date(parsed);
        return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`;
      }
      return s;
    };
    const time = (s) => {
      const m = /^(\d{1,2}):(\d{2})(?::(\d{2}))?\s*([ap]\.?m\.?)?$/i.exec(s);
      if (!m) return s;
      let h = Number(m[1]);
      if (m[4] && /^p/i.test(m[4]) && h < 12) h += 12;
      if (m[4] && /^a/i.test(m[4]) && h === 12) h = 0;
      return `${pad(h)}:${m[2]}${m[3] ? ':' + m[3] : ''}`;
    };
    if (type === 'date') return date(t);
    if (type === 'time') return time(t);
    if (type === 'datetime-local') {
      const m = /^(.*?)[T ](\d{1,2}:\d{2}(?::\d{2})?\s*(?:[ap]\.?m\.?)?)$/i.exec(t);
      return m ? `${date(m[1])}T${time(m[2])}` : t;
    }
    if (type === 'month') {
      const m = /^(\d{1,2})\/(\d{4})$/.exec(t);
      return m ? `${m[2]}-${pad(m[1])}` : t;
    }
    return t;
  }

  // Sets a value the keyboard cannot type (dates, ranges, colours) as the page would see it;
  // a value the input refuses is an error, never an empty field reported as filled.
  agent.setValue = (sid, index, text) => {
    const r = lookup(sid, index);
    if (r.error) return r;
    const el = r.el;
    const type = (el.type || '').toLowerCase();
    const value = storedValue(type, text);
    const setter = Object.getOwnPropertyDescriptor(Object.getPrototypeOf(el), 'value');
    if (setter && setter.set) setter.set.call(el, value); else el.value = value;
    if (value !== '' && el.value === '') {
      const form = FORMATS[type];
      return { error: 'invalid_value', reason: `${describe(el)} does not take "${clip(text, 60)}"${form ? `: give it as ${form}` : ''}` };
    }
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

  agent.select = (sid, index, text, deselect) => {
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
    if (deselect && !el.multiple) {
      return { error: 'wrong_kind', reason: `${describe(el)} holds one option: select another instead` };
    }
    // A multiple select keeps what was chosen before, as a person's Ctrl-click does.
    if (el.multiple) found.selected = !deselect;
    else { el.value = found.value; found.selected = true; }
    el.dispatchEvent(new Event('input', { bubbles: true }));
    el.dispatchEvent(new Event('change', { bubbles: true }));
    return { desc: describe(el), text: clip(found.text, 200), value: found.value };
  };

  function canScroll(n) {
    const s = getComputedStyle(n);
    return /(auto|scroll)/.test(s.overflowY) && n.scrollHeight > n.clientHeight;
  }

  // Scrolls by `amount` pixels (default: a viewport for the page, most of a box's height)
  // in `direction`: the element `target` names ([snapshot, index]) or the scrollable box
  // around it, else the page, or, if the page cannot scroll, the box under the centre.
  agent.scroll = (direction, amount, target) => {
    const by = (n, fallback) => direction * (amount === null || amount === undefined ? fallback : amount);
    if (target) {
      const r = lookup(target[0], target[1]);
      if (r.error) return r;
      let n = r.el;
      while (n && !canScroll(n)) n = n.parentElement;
      if (!n || n === document.documentElement || n === document.body) {
        return { error: 'wrong_kind', reason: `${describe(r.el)} is not in a scrollable box; scroll the page instead` };
      }
      const b = n.scrollTop;
      n.scrollBy({ top: by(n, Math.round(n.clientHeight * 0.8)), behavior: 'instant' });
      return { scrolled: Math.round(n.scrollTop - b), container: describe(n) };
    }
    const before = scrollY;
    scrollBy({ top: by(null, innerHeight), behavior: 'instant' });
    if (scrollY !== before) return { scrolled: Math.round(scrollY - before), container: 'page' };
    for (let n = document.elementFromPoint(innerWidth / 2, innerHeight / 2); n; n = n.parentElement) {
      if (canScroll(n)) {
        const b = n.scrollTop;
        n.scrollBy({ top: by(n, Math.round(n.clientHeight * 0.8)), behavior: 'instant' });
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
    // Words split over inline elements (`if <em>x</em> is false`): the deepest element whose
    // rendered text holds them all.
    const deepest = () => {
      const holds = (el) => clip(textOf(el), 1e9).toLowerCase().includes(want);
      let at = document.body;
      if (!at || !holds(at)) return null;
      for (;;) {
        let next = null;
        for (let c = at.firstElementChild; c; c = c.nextElementSibling) {
          if (!SKIP.has(c.localName) && holds(c)) { next = c; break; }
        }
        if (!next) return at;
        at = next;
      }
    };
    const found = search(document.documentElement) || deepest();
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
