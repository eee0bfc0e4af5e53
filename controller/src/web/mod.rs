//! The web tools' controller side. So far: keyed search providers (Tavily, Brave, SearXNG)
//! called with the keys the controller holds. Not wired to a tool yet (issue 17): the
//! keyless search in the sandbox's browser, `web_fetch` and the image tools are not built.

pub mod search;
