// @ts-check
// Text from the agent made into page content: inline Markdown, blocks, sizes.

import { el } from './dom.js';

// ---------------------------------------------------------------- text

/** Inline Markdown: `code`, **bold**, [links](https://…); everything else is text. */
export function inline(parent, text) {
  const pattern = /(`[^`]+`)|(\*\*[^*]+\*\*)|(\[[^\]]+\]\((https?:\/\/[^)\s]+)\))/g;
  let last = 0;
  let match;
  while ((match = pattern.exec(text)) !== null) {
    if (match.index > last) parent.append(text.slice(last, match.index));
    if (match[1]) parent.append(el('code', { text: match[1].slice(1, -1) }));
    else if (match[2]) parent.append(el('strong', { text: match[2].slice(2, -2) }));
    else {
      const label = match[3].slice(1, match[3].indexOf(']'));
      parent.append(el('a', { href: match[4], target: '_blank', rel: 'noopener noreferrer', text: label }));
    }
    last = pattern.lastIndex;
  }
  if (last < text.length) parent.append(text.slice(last));
}

/** A safe subset of Markdown: paragraphs, headings, lists, fenced code. */
export function markdown(container, text) {
  container.textContent = '';
  const lines = text.split('\n');
  let paragraph = [];
  let list = null;
  const flush = () => {
    if (paragraph.length) {
      const p = el('p');
      paragraph.forEach((line, i) => {
        if (i) p.append(el('br'));
        inline(p, line);
      });
      container.append(p);
      paragraph = [];
    }
    list = null;
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (line.startsWith('```')) {
      flush();
      const code = [];
      i++;
      while (i < lines.length && !lines[i].startsWith('```')) code.push(lines[i++]);
      container.append(el('pre', {}, el('code', { text: code.join('\n') })));
      continue;
    }
    const heading = /^(#{1,4})\s+(.*)$/.exec(line);
    if (heading) {
      flush();
      const h = el(heading[1].length <= 2 ? 'h3' : 'h4');
      inline(h, heading[2]);
      container.append(h);
      continue;
    }
    const item = /^\s*(?:[-*]|(\d+)[.)])\s+(.*)$/.exec(line);
    if (item) {
      if (paragraph.length) flush();
      const kind = item[1] ? 'ol' : 'ul';
      if (!list || list.tagName.toLowerCase() !== kind) {
        list = el(kind);
        container.append(list);
      }
      const li = el('li');
      inline(li, item[2]);
      list.append(li);
      continue;
    }
    if (!line.trim()) {
      flush();
      continue;
    }
    list = null;
    paragraph.push(line);
  }
  flush();
}

export function bytes(size) {
  if (size < 1024) return size + ' B';
  if (size < 1024 * 1024) return (size / 1024).toFixed(1) + ' KB';
  return (size / (1024 * 1024)).toFixed(1) + ' MB';
}
