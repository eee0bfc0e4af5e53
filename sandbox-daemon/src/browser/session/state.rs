//! The state of the active tab as the agent reads it: the page settled, its text and
//! elements read, its screenshot taken while it settles (see `pictures`), the other tabs
//! listed.

use super::*;

impl Session {
    /// The state of the active tab, after a fresh snapshot; while a dialog holds the page
    /// (one open now, or opened while the page was read), what it asks instead.
    pub async fn state(
        &mut self,
        query: StateQuery,
        counter: &AtomicU64,
    ) -> Result<BrowserState, BrowserError> {
        if self.open_dialog().is_none() {
            let mut opened = self.signals.opened();
            opened.borrow_and_update();
            tokio::select! {
                read = self.page_state(query, counter) => return read,
                _ = opened.changed() => {}
            }
        }
        let Some(dialog) = self.open_dialog() else {
            // It opened and closed while the page was read (dismissed elsewhere): read again.
            return Box::pin(self.state(query, counter)).await;
        };
        let page = self.page()?;
        let screenshot = if query.screenshot {
            tokio::time::timeout(Duration::from_secs(2), self.screenshot(&page))
                .await
                .ok()
                .and_then(Result::ok)
        } else {
            None
        };
        let tabs = self.tab_infos().await;
        let (url, title) = tabs
            .iter()
            .find(|t| t.tab_id == self.active)
            .map(|t| (t.url.clone(), t.title.clone()))
            .unwrap_or_default();
        Ok(BrowserState {
            url,
            title,
            tabs,
            snapshot_id: BrowserManager::next_snapshot_id(counter),
            elements: dialogs::describe(&dialog),
            element_count: 0,
            truncated: false,
            pixels_above: 0,
            pixels_below: 0,
            viewport: self.settings.viewport,
            screenshot,
            content: None,
            message: None,
            dropdown_options: None,
            notice: None,
            dialog: Some(dialog),
        })
    }

    /// The state of the active tab read from its page.
    async fn page_state(
        &mut self,
        query: StateQuery,
        counter: &AtomicU64,
    ) -> Result<BrowserState, BrowserError> {
        let page = self.page()?;
        let sid = BrowserManager::next_snapshot_id(counter);
        let mut phases = Phases::start();
        let (snapshot, screenshot) = if query.screenshot {
            let (read_tx, read_rx) = tokio::sync::watch::channel(false);
            let text = async {
                self.settle(&page).await;
                let snapshot = self.read_snapshot(&page, sid, &query).await;
                let _ = read_tx.send(true);
                snapshot
            };
            let (snapshot, picture) = tokio::join!(text, self.pictures_while_read(&page, read_rx));
            phases.mark("settle, text and screenshot");
            let snapshot = snapshot?;
            // Changed after the last picture began: the picture follows the text.
            let shot = match picture {
                Some((began, Ok(shot))) if unchanged_since(began, snapshot.changed_at) => shot,
                _ => self.screenshot(&page).await?,
            };
            (snapshot, Some(shot))
        } else {
            self.settle(&page).await;
            phases.mark("settle");
            (self.read_snapshot(&page, sid, &query).await?, None)
        };
        let mut snapshot = snapshot;
        phases.mark("snapshot");
        // The agent runs where the page cannot change it; the caps hold here regardless.
        snapshot.cap(self.settings.elements_cap);
        let active = self.active;
        if let Some(tab) = self.tabs.iter_mut().find(|t| t.id == active) {
            tab.last_snapshot = Some(sid);
        }
        let mut tabs = self.background_tab_infos(Some(active)).await;
        phases.mark("tabs");
        tracing::debug!(phases = %phases, "state taken");
        if let Some(tab) = tabs.iter_mut().find(|t| t.tab_id == active) {
            tab.url = snapshot.url.clone();
            tab.title = snapshot.title.clone();
        }
        Ok(BrowserState {
            url: snapshot.url,
            title: snapshot.title,
            tabs,
            snapshot_id: sid,
            elements: snapshot.elements,
            element_count: snapshot.element_count,
            truncated: snapshot.truncated,
            pixels_above: snapshot.pixels_above,
            pixels_below: snapshot.pixels_below,
            viewport: snapshot.viewport,
            screenshot,
            content: snapshot.content,
            message: None,
            dropdown_options: None,
            notice: None,
            dialog: None,
        })
    }

    /// Waits (a bounded time) for the active page to be still, so no state is taken
    /// mid-change: its content unchanged for a moment, no finite animation playing, and no
    /// answer it asked for on the way. Says when (on the page's clock) it last changed.
    /// [`Self::settle_untraced`] in a span of the state's settle phase.
    async fn settle(&self, page: &Page) -> Option<f64> {
        let span = cove_telemetry::in_trace(
            || tracing::info_span!(target: cove_telemetry::TARGET, "browser settle"),
        );
        tracing::Instrument::instrument(self.settle_untraced(page), span).await
    }

    async fn settle_untraced(&self, page: &Page) -> Option<f64> {
        let deadline = Instant::now() + STILL_WAIT;
        let requests = self.active_tab().ok().and_then(|t| t.requests.as_ref());
        // After an answer the page gets a quiet period of its own to act on it: an app that
        // chains requests starts the next one only once it has read the last.
        let mut fresh = false;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let still = json!({
                "quietMs": STILL_FOR.as_millis() as u64,
                "maxMs": left.as_millis() as u64,
                "fresh": fresh,
            });
            let waited =
                cdp::agent::<Value>(page, "settle", std::slice::from_ref(&still), self.limit())
                    .await;
            let page_said = match waited {
                Ok(said) => said,
                Err(e) => {
                    tracing::debug!(error = %e, "the page could not say whether it is still");
                    return None;
                }
            };
            let changed_at = page_said["changed_at"].as_f64();
            // An answer on its way will change the page: wait for it, then for the page.
            let asked = Instant::now();
            let answered = match requests {
                Some(requests) => requests.wait_idle(deadline).await,
                None => false,
            };
            tracing::debug!(
                page = %page_said,
                requests_ms = asked.elapsed().as_millis() as u64,
                "settled"
            );
            if !answered {
                return changed_at;
            }
            fresh = true;
        }
    }

    /// A snapshot of the page under id `sid` (of the new document, when a navigation swaps
    /// it meanwhile).
    async fn read_snapshot(
        &self,
        page: &Page,
        sid: u64,
        query: &StateQuery,
    ) -> Result<Snapshot, BrowserError> {
        let limit = self.limit();
        let mut attempts = 0;
        loop {
            let listeners = cdp::listener_positions(page, query.full, limit).await;
            let args = json!({
                "snapshotId": sid,
                "maxChars": self.settings.elements_cap,
                "content": query.content,
                "full": query.full,
                "contentChars": CONTENT_CHARS,
                "listeners": listeners,
            });
            match cdp::agent(page, "snapshot", std::slice::from_ref(&args), limit).await {
                Err(BrowserError::ContextLost) if attempts < 5 => {
                    // A navigation is swapping documents; wait for the new one.
                    attempts += 1;
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    self.wait_until_loaded(page).await;
                }
                other => return other,
            }
        }
    }

    /// The viewport as the state's screenshot.
    /// [`Self::screenshot_untraced`] in a span of the state's screenshot phase.
    pub(super) async fn screenshot(&self, page: &Page) -> Result<Screenshot, BrowserError> {
        let span = cove_telemetry::in_trace(
            || tracing::info_span!(target: cove_telemetry::TARGET, "browser screenshot"),
        );
        tracing::Instrument::instrument(self.screenshot_untraced(page), span).await
    }

    async fn screenshot_untraced(&self, page: &Page) -> Result<Screenshot, BrowserError> {
        let vp = self.settings.viewport;
        let quality = i64::from(self.settings.screenshot_quality);
        Ok(Screenshot {
            mime: "image/jpeg".into(),
            base64: cdp::screenshot_base64(page, quality, self.limit()).await?,
            width: vp.width,
            height: vp.height,
        })
    }

    /// Every tab with its URL and title.
    pub async fn tab_infos(&self) -> Vec<TabInfo> {
        self.background_tab_infos(None).await
    }

    /// Every tab; `skip`'s URL and title are left empty for the caller to fill in.
    async fn background_tab_infos(&self, skip: Option<u32>) -> Vec<TabInfo> {
        let limit = self.limit();
        let mut tabs = Vec::with_capacity(self.tabs.len());
        for tab in &self.tabs {
            let (url, title) = if Some(tab.id) == skip {
                (String::new(), String::new())
            } else {
                // A background tab mid-navigation cannot answer; its title can wait.
                let url = tokio::time::timeout(limit, tab.page.url()).await;
                let title = tokio::time::timeout(BACKGROUND_TAB_WAIT, tab.page.get_title()).await;
                (
                    url.ok().and_then(Result::ok).flatten().unwrap_or_default(),
                    title
                        .ok()
                        .and_then(Result::ok)
                        .flatten()
                        .unwrap_or_default(),
                )
            };
            let (mut url, mut title) = (url, title);
            clip_chars(&mut url, MAX_URL_CHARS);
            clip_chars(&mut title, MAX_TITLE_CHARS);
            tabs.push(TabInfo {
                tab_id: tab.id,
                url,
                title,
                active: tab.id == self.active,
            });
        }
        tabs
    }
}
