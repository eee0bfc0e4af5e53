//! The keyless search engines coved can read, each in one row: where its results page is and
//! the script that reads it. A new engine is a new row.

/// A search engine whose results page the browser can read without a key.
#[derive(Debug, Clone, Copy)]
pub struct Engine {
    pub name: &'static str,
    /// The results page of a query; `{query}` becomes the percent-encoded query.
    pub url: &'static str,
    /// Script run on the results page. It answers
    /// `{results: [{title, url, snippet}], blocked: string|null, empty: bool}`: `blocked`
    /// names what stands in the way (a captcha) and `empty` is the engine saying it found
    /// nothing, so a page with neither and no results is one coved cannot read.
    pub read: &'static str,
}

/// DuckDuckGo's HTML results, made for browsers without scripts: plain markup, stable for
/// years. Its result links go through a redirect that carries the target in `uddg`.
pub const DUCKDUCKGO: Engine = Engine {
    name: "duckduckgo",
    url: "https://html.duckduckgo.com/html/?q={query}",
    read: r#"(() => {
  const text = (el) => (el ? el.innerText.replace(/\s+/g, ' ').trim() : '');
  const results = [];
  for (const r of document.querySelectorAll('.result')) {
    if (r.classList.contains('result--ad')) continue;
    const a = r.querySelector('a.result__a');
    if (!a) continue;
    let url = a.getAttribute('href') || '';
    try {
      const u = new URL(url, location.href);
      url = u.searchParams.get('uddg') || u.href;
    } catch (e) {}
    results.push({ title: text(a), url, snippet: text(r.querySelector('.result__snippet')) });
  }
  const wall = document.querySelector('.anomaly-modal__title, #challenge-form, .anomaly-modal');
  return {
    results,
    blocked: wall ? (text(wall) || 'a bot check') : null,
    empty: !!document.querySelector('.no-results'),
  };
})()"#,
};

/// Mojeek: an independent index whose results page needs no scripts either.
pub const MOJEEK: Engine = Engine {
    name: "mojeek",
    url: "https://www.mojeek.com/search?q={query}",
    read: r#"(() => {
  const text = (el) => (el ? el.innerText.replace(/\s+/g, ' ').trim() : '');
  const results = [];
  for (const r of document.querySelectorAll('ul.results-standard > li')) {
    const a = r.querySelector('a.title');
    if (!a) continue;
    results.push({ title: text(a), url: a.href, snippet: text(r.querySelector('p.s')) });
  }
  const wall = document.querySelector('form[action*="captcha"], #captcha');
  return {
    results,
    blocked: wall ? 'a captcha' : null,
    empty: /No pages found/i.test(text(document.querySelector('.results, main'))),
  };
})()"#,
};

/// Every engine, the default first.
pub const ENGINES: &[Engine] = &[DUCKDUCKGO, MOJEEK];

/// The engine of that name.
pub fn by_name(name: &str) -> Option<Engine> {
    ENGINES.iter().copied().find(|e| e.name == name)
}

/// The names of every engine, for messages.
pub fn names() -> String {
    ENGINES
        .iter()
        .map(|e| e.name)
        .collect::<Vec<_>>()
        .join(", ")
}
