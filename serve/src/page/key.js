// @ts-check
// Runs first, while the page parses (a classic script, before the modules load): the login
// link's key leaves the address at once, so no navigation or reload that comes before the
// page has started can lose it. api.js adopts it (see keyTaken there).
(function offerKey() {
  const match = /(?:^#|&)key=([^&]+)/.exec(location.hash);
  if (!match) return;
  const rest = location.hash.replace(/(^#|&)key=[^&]+/, '$1').replace(/^#&/, '#');
  history.replaceState(null, '', location.pathname + location.search + (rest === '#' ? '' : rest));
  sessionStorage.setItem('cove.offered-key', decodeURIComponent(match[1]));
})();
