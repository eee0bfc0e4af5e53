//! While a person has the browser, every request their tab makes is checked before it is
//! sent: an address they type, a link they follow, a redirect, a form, and what a page's
//! scripts fetch (other sites than the page's own are checked; the browser keeps no
//! back/forward cache, so Back asks again too). WebSocket connections are not seen by the
//! browser's request interception: Chromium's Local Network Access checks hold those a page
//! of the web opens to the sandbox's loopback and private addresses (not through a proxy,
//! where the page seems to come from the proxy's address). Each request must be one
//! [`reach::person_may_load`] allows; anything else fails with the browser's "access denied"
//! page. The active tab is covered from the moment it becomes active; one that was already
//! showing the sandbox itself by then (a popup a click opened) is emptied.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use chromiumoxide::Page;
use chromiumoxide::cdp::browser_protocol::network::ResourceType;
use chromiumoxide::cdp::browser_protocol::target::TargetId;
use futures_util::StreamExt;
use tokio::task::JoinHandle;

use crate::browser::reach;
use crate::browser::takeover_tab;

/// Deadline of the guard's CDP calls.
const LIMIT: Duration = Duration::from_secs(5);

/// The tabs covered in one takeover.
pub struct Guard {
    /// The tabs the agent had open when the takeover started.
    agents: HashSet<TargetId>,
    covered: HashMap<TargetId, (Page, JoinHandle<()>)>,
}

impl Guard {
    /// A guard for a takeover that starts with the agent's tabs `agents`.
    pub fn new(agents: Vec<TargetId>) -> Guard {
        Guard {
            agents: agents.into_iter().collect(),
            covered: HashMap::new(),
        }
    }

    /// Covers `page` from now on, if it is not yet.
    pub async fn cover(&mut self, page: &Page) {
        if self.covered.contains_key(page.target_id()) {
            return;
        }
        let shown = takeover_tab::page_url(page, LIMIT)
            .await
            .unwrap_or_default();
        let agents_tab = self.agents.contains(page.target_id());
        // The site the agent left this tab on stays open to the person.
        let agents_site = if agents_tab { site_of(&shown) } else { None };
        let mut held = match takeover_tab::hold_navigations(page, LIMIT).await {
            Ok(held) => held,
            Err(e) => {
                tracing::warn!(error = %e, "cannot check the person's navigations in this tab");
                return;
            }
        };
        let tab = page.clone();
        let mut shown_site = site_of(&shown);
        // One request at a time: a later one waits for the check of the one before.
        let task = tokio::spawn(async move {
            // Sites checked in this takeover: a page's many requests to one site cost one check.
            let mut checked: HashMap<(String, String, u16), bool> = HashMap::new();
            while let Some(event) = held.next().await {
                let url = event.request.url.clone();
                let site = site_of(&url);
                let document = event.resource_type == ResourceType::Document;
                let allowed = if site.is_some() && site == agents_site {
                    true
                } else if !document && site.is_some() && site == shown_site {
                    // The page's own site, which was checked when the page was.
                    true
                } else if let Some(known) = site.as_ref().and_then(|s| checked.get(s)) {
                    *known
                } else {
                    let verdict = reach::person_may_load(&url).await;
                    if let Err(e) = &verdict {
                        tracing::info!(reason = %e, document, "refused a request during a takeover");
                    }
                    if let Some(site) = site.clone() {
                        checked.insert(site, verdict.is_ok());
                    }
                    verdict.is_ok()
                };
                if allowed && document {
                    shown_site = site;
                }
                // Answered on the side: a page's requests do not wait on each other's answers.
                let (tab, request) = (tab.clone(), event.request_id.clone());
                tokio::spawn(async move {
                    if allowed {
                        takeover_tab::let_through(&tab, request, LIMIT).await;
                    } else {
                        takeover_tab::refuse_navigation(&tab, request, LIMIT).await;
                    }
                });
            }
        });
        self.covered
            .insert(page.target_id().clone(), (page.clone(), task));
        if !agents_tab && shown.starts_with("http") && reach::person_may_load(&shown).await.is_err()
        {
            takeover_tab::blank(page, LIMIT).await;
        }
    }

    /// Stops covering every tab: the agent has the browser again.
    pub async fn release(self) {
        for (page, task) in self.covered.into_values() {
            task.abort();
            takeover_tab::release_navigations(&page, LIMIT).await;
        }
    }
}

/// The scheme, host and port of an http(s) URL.
fn site_of(url: &str) -> Option<(String, String, u16)> {
    let url = url::Url::parse(url).ok()?;
    if !matches!(url.scheme(), "http" | "https") {
        return None;
    }
    Some((
        url.scheme().to_string(),
        url.host_str()?.to_ascii_lowercase(),
        url.port_or_known_default()?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sites_are_scheme_host_and_port() {
        assert_eq!(
            site_of("http://127.0.0.1:3000/login?x"),
            site_of("http://127.0.0.1:3000/")
        );
        assert_ne!(
            site_of("http://127.0.0.1:3000/"),
            site_of("http://127.0.0.1:7700/")
        );
        assert_ne!(
            site_of("http://localhost:3000/"),
            site_of("https://localhost:3000/")
        );
        assert_eq!(site_of("about:blank"), None);
        assert_eq!(site_of("data:text/html,x"), None);
    }
}
