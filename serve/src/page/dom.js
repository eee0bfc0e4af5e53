// @ts-check
// The page's DOM helpers: an element by id, and an element built with attributes and
// children, text always as text.

// Cove's page: the threads of this server, a thread's conversation as its events stream in
// (Server-Sent Events, resumed by the browser with Last-Event-ID), the plan, the
// workspace's files and the agent's browser, and dialogs for what the agent waits for.
// Plain JavaScript; it talks to its own origin only. Text from the agent, the tools and the
// workspace is always put in the page as text (textContent), never as markup.

/** An element of the page by its id (the page's own markup holds each id it asks for).
 * @type {(id: string) => any} */
export const $ = (id) => document.getElementById(id);

/** An element with attributes and children (strings become text). */
export function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'class') node.className = value;
    else if (key === 'text') node.textContent = value;
    else if (key.startsWith('on')) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? '' : value);
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}
