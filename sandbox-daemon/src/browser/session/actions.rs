//! What the browser does for the agent or a person: one method per action, which
//! [`Session::perform`] dispatches to; each answers what it did in a line.

use cove_protocol::browser::{
    ClickCoordinates, ClickElement, CloseTab, GetDropdownOptions, HandleDialog, HoverElement,
    InputText, ScrollToText, SelectDropdownOption, SendKeys, SwitchTab, Wait,
};

use super::*;

impl Session {
    /// Carries out one action on the active tab.
    pub async fn perform(&mut self, action: Action) -> Result<Outcome, BrowserError> {
        if let Some(dialog) = self.open_dialog()
            && !matches!(
                action,
                Action::HandleDialog(_) | Action::SwitchTab(_) | Action::CloseTab(_)
            )
        {
            return Err(BrowserError::NotClickable(format!(
                "the page shows a {} dialog ({:?}): answer it first with handle_dialog",
                dialog.kind, dialog.message
            )));
        }
        match action {
            Action::HandleDialog(a) => self.handle_dialog(a).await,
            Action::NavigateTo(a) => self.navigate(&a.url).await,
            Action::GoBack => self.step_history(-1).await,
            Action::GoForward => self.step_history(1).await,
            Action::Reload => self.reload().await,
            Action::Wait(a) => self.wait(a).await,
            Action::ClickElement(a) => self.click_element(a).await,
            Action::ClickCoordinates(a) => self.click_coordinates(a).await,
            Action::InputText(a) => self.input_text(a).await,
            Action::SendKeys(a) => self.send_keys(a).await,
            Action::SwitchTab(a) => self.switch_tab(a).await,
            Action::CloseTab(a) => self.close_tab(a).await,
            Action::ScrollDown(a) => self.scroll(a.amount, a.index, a.snapshot_id, 1.0).await,
            Action::ScrollUp(a) => self.scroll(a.amount, a.index, a.snapshot_id, -1.0).await,
            Action::ScrollToText(a) => self.scroll_to_text(a).await,
            Action::GetDropdownOptions(a) => self.dropdown_options(a).await,
            Action::SelectDropdownOption(a) => self.select_option(a).await,
            Action::DragDrop(a) => self.drag_drop(a).await,
            Action::HoverElement(a) => self.hover(a).await,
        }
    }

    /// Accepts or dismisses the open dialog (a prompt with `text`).
    async fn handle_dialog(&mut self, a: HandleDialog) -> Result<Outcome, BrowserError> {
        let limit = self.limit();
        let page = self.page()?;
        let dialog = self
            .open_dialog()
            .ok_or_else(|| BrowserError::NoMatch("no dialog is open".into()))?;
        let watch = self.active_tab()?.dialogs.as_ref();
        let number = watch.and_then(DialogWatch::open_number);
        dialogs::answer(&page, a.accept, a.text.clone(), limit).await?;
        if let (Some(watch), Some(number)) = (watch, number) {
            watch.answered(number);
        }
        let how = match (a.accept, dialog.kind.as_str()) {
            (true, "prompt") => format!(
                "Answered the prompt {:?} with {:?}",
                dialog.message,
                a.text.or(dialog.default_text).unwrap_or_default()
            ),
            (true, _) => {
                format!("Accepted the {} dialog {:?}", dialog.kind, dialog.message)
            }
            (false, _) => {
                format!("Dismissed the {} dialog {:?}", dialog.kind, dialog.message)
            }
        };
        Ok(Outcome::say(how))
    }

    /// Waits a moment for the page's own timers.
    async fn wait(&mut self, a: Wait) -> Result<Outcome, BrowserError> {
        if !(0.0..=MAX_WAIT_SECS).contains(&a.seconds) || a.seconds.is_nan() {
            return Err(BrowserError::InvalidRequest(format!(
                "seconds must be between 0 and {MAX_WAIT_SECS}"
            )));
        }
        tokio::time::sleep(Duration::from_secs_f64(a.seconds)).await;
        Ok(Outcome::say(format!("Waited {} s", a.seconds)))
    }

    /// Clicks element `index` of a snapshot where a person would, then waits for the page to settle.
    async fn click_element(&mut self, a: ClickElement) -> Result<Outcome, BrowserError> {
        let limit = self.limit();
        let page = self.page()?;
        let mut phases = Phases::start();
        let at = self.reachable(&page, a.snapshot_id, a.index).await?;
        phases.mark("locate");
        let (_, settled) = self
            .with_settle(&page, cdp::click(&page, at.x, at.y, limit))
            .await?;
        phases.mark("click_and_settle");
        tracing::debug!(phases = %phases, "clicked");
        Ok(Outcome::say(format!(
            "Clicked [{}] {}{}",
            a.index,
            at.desc,
            settled.note()
        )))
    }

    /// Clicks a point of the viewport.
    async fn click_coordinates(&mut self, a: ClickCoordinates) -> Result<Outcome, BrowserError> {
        let limit = self.limit();
        let vp = self.settings.viewport;
        if !(0.0..f64::from(vp.width)).contains(&a.x) || !(0.0..f64::from(vp.height)).contains(&a.y)
        {
            return Err(BrowserError::InvalidRequest(format!(
                "({}, {}) is outside the {}x{} viewport",
                a.x, a.y, vp.width, vp.height
            )));
        }
        let page = self.page()?;
        let (_, settled) = self
            .with_settle(&page, cdp::click(&page, a.x, a.y, limit))
            .await?;
        Ok(Outcome::say(format!(
            "Clicked at ({}, {}){}",
            a.x,
            a.y,
            settled.note()
        )))
    }

    /// Types into element `index`: set whole where the input holds a value of its own form (a date, a colour), key by key for editors that listen to keys, inserted otherwise; then reports what landed.
    async fn input_text(&mut self, a: InputText) -> Result<Outcome, BrowserError> {
        let limit = self.limit();
        let page = self.page()?;
        let sid = self.snapshot_for(a.snapshot_id)?;
        let prepared: Described =
            cdp::agent(&page, "prepareInput", &[json!(sid), json!(a.index)], limit).await?;
        let set = prepared.mode.as_deref() == Some("set");
        let done: Described = if set {
            cdp::agent(
                &page,
                "setValue",
                &[json!(sid), json!(a.index), json!(a.text)],
                limit,
            )
            .await?
        } else {
            if a.text.is_empty() {
                let backspace = keys::key("Backspace")
                    .ok_or_else(|| BrowserError::Internal("no Backspace key".into()))?;
                cdp::key_event(&page, DispatchKeyEventType::KeyDown, &backspace, 0, limit).await?;
                cdp::key_event(&page, DispatchKeyEventType::KeyUp, &backspace, 0, limit).await?;
            } else if prepared.mode.as_deref() == Some("keys") {
                typing::type_keys(&page, &a.text, limit).await?;
            } else {
                cdp::insert_text(&page, &a.text, limit).await?;
            }
            cdp::agent(&page, "finishInput", &[json!(sid), json!(a.index)], limit).await?
        };
        Ok(Outcome::say(if set {
            // A date or a colour is stored in its own form, checked by the page.
            format!("Typed {:?} into [{}] {}", a.text, a.index, done.desc)
        } else {
            typing::typed_report(&a.text, a.index, done.value.as_deref(), &done.desc)
        }))
    }

    /// Presses keys (`Control+a`, `Enter`) where the focus is.
    async fn send_keys(&mut self, a: SendKeys) -> Result<Outcome, BrowserError> {
        let limit = self.limit();
        let page = self.page()?;
        let input = keys::parse(&a.keys)
            .ok_or_else(|| BrowserError::InvalidRequest("keys is empty".into()))?;
        let (_, settled) = self
            .with_settle(&page, typing::press(&page, &input, limit))
            .await?;
        Ok(Outcome::say(format!(
            "Sent keys {:?}{}",
            a.keys,
            settled.note()
        )))
    }

    /// Makes a tab the active one, brought to the front.
    async fn switch_tab(&mut self, a: SwitchTab) -> Result<Outcome, BrowserError> {
        let limit = self.limit();
        let tab = self
            .tabs
            .iter()
            .find(|t| t.id == a.tab_id)
            .ok_or(BrowserError::TabNotFound(a.tab_id))?;
        let _ = tokio::time::timeout(limit, tab.page.bring_to_front()).await;
        self.active = a.tab_id;
        Ok(Outcome::say(format!("Switched to tab {}", a.tab_id)))
    }

    /// Closes a tab; the last one gives way to a blank tab first (headless Chromium quits with its last tab).
    async fn close_tab(&mut self, a: CloseTab) -> Result<Outcome, BrowserError> {
        let limit = self.limit();
        let position = self
            .tabs
            .iter()
            .position(|t| t.id == a.tab_id)
            .ok_or(BrowserError::TabNotFound(a.tab_id))?;
        if self.tabs.len() == 1 {
            // Headless Chromium quits with its last tab: open the next one first.
            self.open_blank_tab().await?;
        }
        let tab = self.tabs.remove(position);
        self.closing.insert(tab.page.target_id().clone());
        let _ = tokio::time::timeout(limit, tab.page.close()).await;
        if self.active == a.tab_id {
            self.active = self.tabs.last().map(|t| t.id).unwrap_or(0);
        }
        // The tab now active is shown, or it never draws: screenshots of a tab left
        // in the background wait for a frame that never comes.
        if let Some(front) = self.tabs.iter().find(|t| t.id == self.active) {
            let _ = tokio::time::timeout(limit, front.page.bring_to_front()).await;
        }
        Ok(Outcome::say(format!("Closed tab {}", a.tab_id)))
    }

    /// Scrolls the first element holding `text` into view.
    async fn scroll_to_text(&mut self, a: ScrollToText) -> Result<Outcome, BrowserError> {
        let limit = self.limit();
        if a.text.trim().is_empty() {
            return Err(BrowserError::InvalidRequest("text is empty".into()));
        }
        let page = self.page()?;
        let found: Described = cdp::agent(&page, "scrollToText", &[json!(a.text)], limit).await?;
        Ok(Outcome::say(format!("Scrolled to {:?}", found.desc)))
    }

    /// The options of a `select` (or a listbox).
    async fn dropdown_options(&mut self, a: GetDropdownOptions) -> Result<Outcome, BrowserError> {
        let limit = self.limit();
        let page = self.page()?;
        let sid = self.snapshot_for(a.snapshot_id)?;
        let found: Options =
            cdp::agent(&page, "options", &[json!(sid), json!(a.index)], limit).await?;
        Ok(Outcome {
            message: Some(format!(
                "[{}] {} has {} options",
                a.index,
                found.desc,
                found.options.len()
            )),
            options: Some(found.options),
        })
    }

    /// Selects (or unselects) an option of a `select` by its text.
    async fn select_option(&mut self, a: SelectDropdownOption) -> Result<Outcome, BrowserError> {
        let limit = self.limit();
        let page = self.page()?;
        let sid = self.snapshot_for(a.snapshot_id)?;
        let args = [json!(sid), json!(a.index), json!(a.text), json!(a.deselect)];
        let (chosen, _): (Described, _) = self
            .with_settle(&page, cdp::agent(&page, "select", &args, limit))
            .await?;
        Ok(Outcome::say(format!(
            "{} {:?} in [{}] {}",
            if a.deselect { "Unselected" } else { "Selected" },
            chosen.text.unwrap_or_default(),
            a.index,
            chosen.desc
        )))
    }

    /// Moves the pointer over element `index`.
    async fn hover(&mut self, a: HoverElement) -> Result<Outcome, BrowserError> {
        let limit = self.limit();
        let page = self.page()?;
        let at = self.reachable(&page, a.snapshot_id, a.index).await?;
        self.with_settle(&page, cdp::mouse_move(&page, at.x, at.y, false, limit))
            .await?;
        Ok(Outcome::say(format!(
            "Hovered over [{}] {}",
            a.index, at.desc
        )))
    }

    async fn navigate(&mut self, raw: &str) -> Result<Outcome, BrowserError> {
        let url = crate::browser::reach::normalise_url(raw)?;
        if url.starts_with("data:") {
            // Pages may not open data: URLs themselves; only the protocol can.
            let page = self.page()?;
            cdp::run(&page, NavigateParams::new(url.clone()), self.limit()).await?;
            return Ok(Outcome::say(format!("Navigated to {}", clip_url(&url))));
        }
        self.navigate_like_a_link(&url).await
    }

    /// Navigates from inside the page, as a link would, and follows it through the
    /// browser's events. (chromiumoxide holds `Page.navigate` until the load event and
    /// queues navigations behind each other, so one hung page would stall every later one.)
    async fn navigate_like_a_link(&mut self, url: &str) -> Result<Outcome, BrowserError> {
        let page = self.page()?;
        let limit = self.limit();
        let mut phases = Phases::start();
        let mut watch = NavigationWatch::new(&page, limit).await?;
        let assign = format!("location.assign({}); true", Value::from(url));
        if let Err(e) =
            cdp::evaluate::<bool>(&page, assign.clone(), World::Page, Duration::from_secs(3)).await
        {
            // The tab may be stuck in an earlier navigation: cancel it and try once more.
            if !matches!(e, BrowserError::Timeout(_) | BrowserError::ContextLost) {
                return Err(e);
            }
            watch.stop().await;
            cdp::evaluate::<bool>(&page, assign, World::Page, limit).await?;
        }
        phases.mark("assign");
        let settled = watch.settle(limit).await;
        phases.mark("load");
        tracing::debug!(phases = %phases, "navigated");
        match settled {
            Settled::Loaded { url: landed } if landed.starts_with("chrome-error://") => {
                let text: String = cdp::evaluate(
                    &page,
                    "document.body ? document.body.innerText : ''".into(),
                    World::Isolated,
                    Duration::from_secs(3),
                )
                .await
                .unwrap_or_default();
                let code = text
                    .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .find(|w| w.starts_with("ERR_"))
                    .unwrap_or("the page could not be loaded");
                Err(BrowserError::NavigationFailed(format!(
                    "cannot load {url}: net::{code}"
                )))
            }
            Settled::Loaded { url: landed } => {
                Ok(Outcome::say(format!("Navigated to {}", clip_url(&landed))))
            }
            Settled::StillLoading { url: landed } => Ok(Outcome::say(format!(
                "Navigated to {} (still loading after {} s)",
                clip_url(&landed),
                limit.as_secs()
            ))),
            Settled::Idle => Ok(Outcome::say(format!("Navigated to {}", clip_url(url)))),
            Settled::Stopped => Err(BrowserError::Timeout(format!(
                "{url} did not answer within {} s; the tab stopped loading it",
                limit.as_secs()
            ))),
        }
    }

    /// Goes back (`-1`) or forward (`1`) in the tab's history.
    async fn step_history(&mut self, step: isize) -> Result<Outcome, BrowserError> {
        let page = self.page()?;
        let limit = self.limit();
        let (way, which) = if step < 0 {
            ("back", "previous")
        } else {
            ("forward", "next")
        };
        let history = cdp::run(&page, GetNavigationHistoryParams::default(), limit).await?;
        let current = usize::try_from(history.current_index).unwrap_or(0);
        let Some(entry) = current
            .checked_add_signed(step)
            .and_then(|i| history.entries.get(i))
        else {
            return Err(BrowserError::InvalidRequest(format!(
                "there is no {which} page in this tab"
            )));
        };
        let url = entry.url.clone();
        let mut watch = NavigationWatch::new(&page, limit).await?;
        cdp::run(&page, NavigateToHistoryEntryParams::new(entry.id), limit).await?;
        watch.settle(limit).await;
        Ok(Outcome::say(format!("Went {way} to {url}")))
    }

    async fn reload(&mut self) -> Result<Outcome, BrowserError> {
        let page = self.page()?;
        let limit = self.limit();
        let mut watch = NavigationWatch::new(&page, limit).await?;
        cdp::run(&page, ReloadParams::default(), limit).await?;
        watch.settle(limit).await;
        Ok(Outcome::say("Reloaded the page"))
    }

    async fn scroll(
        &mut self,
        amount: Option<u32>,
        index: Option<u32>,
        sid: Option<u64>,
        direction: f64,
    ) -> Result<Outcome, BrowserError> {
        let page = self.page()?;
        let target = match index {
            Some(index) => json!([self.snapshot_for(sid)?, index]),
            None => Value::Null,
        };
        // Without an amount: a page's viewport, or most of a box's height.
        let amount = amount.map(f64::from).map_or(Value::Null, |a| json!(a));
        let done: Scrolled = cdp::agent(
            &page,
            "scroll",
            &[json!(direction), amount, target],
            self.limit(),
        )
        .await?;
        let way = if direction > 0.0 { "down" } else { "up" };
        Ok(Outcome::say(if done.scrolled == 0 {
            format!("Could not scroll {way}: already at the end")
        } else {
            format!(
                "Scrolled {way} {} px ({})",
                done.scrolled.abs(),
                done.container
            )
        }))
    }

    async fn drag_end(
        &self,
        page: &Page,
        sid: Option<u64>,
        index: Option<u32>,
        x: Option<f64>,
        y: Option<f64>,
        which: &str,
    ) -> Result<(f64, f64, String), BrowserError> {
        match (index, x, y) {
            (Some(index), None, None) => {
                let sid = self.snapshot_for(sid)?;
                let p: Point =
                    cdp::agent(page, "point", &[json!(sid), json!(index)], self.limit()).await?;
                Ok((p.x, p.y, format!("[{index}] {}", p.desc)))
            }
            (None, Some(x), Some(y)) => Ok((x, y, format!("({x}, {y})"))),
            _ => Err(BrowserError::InvalidRequest(format!(
                "give the {which} as {which}_index, or as {which}_x and {which}_y"
            ))),
        }
    }

    async fn drag_drop(&mut self, a: DragDrop) -> Result<Outcome, BrowserError> {
        let page = self.page()?;
        let limit = self.limit();
        if let Some(index) = a.source_index {
            // Bring the source into view first; the target is measured after that scroll.
            let sid = self.snapshot_for(a.snapshot_id)?;
            self.locate(&page, sid, index).await?;
        }
        let (sx, sy, from) = self
            .drag_end(
                &page,
                a.snapshot_id,
                a.source_index,
                a.source_x,
                a.source_y,
                "source",
            )
            .await?;
        let (tx, ty, to) = self
            .drag_end(
                &page,
                a.snapshot_id,
                a.target_index,
                a.target_x,
                a.target_y,
                "target",
            )
            .await?;
        // HTML5 drag and drop is not driven by mouse events alone in headless Chromium:
        // intercept the drag when one starts and deliver its events by hand.
        cdp::run(&page, SetInterceptDragsParams::new(true), limit).await?;
        let mut intercepted = page
            .event_listener::<EventDragIntercepted>()
            .await
            .map_err(BrowserError::from_cdp)?;
        let result = async {
            cdp::mouse_move(&page, sx, sy, false, limit).await?;
            cdp::mouse_down(&page, sx, sy, limit).await?;
            let steps = 12;
            let mut drag = None;
            for step in 1..=steps {
                let f = f64::from(step) / f64::from(steps);
                let (x, y) = (sx + (tx - sx) * f, sy + (ty - sy) * f);
                cdp::mouse_move(&page, x, y, true, limit).await?;
                if drag.is_none()
                    && let Ok(Some(event)) =
                        tokio::time::timeout(Duration::from_millis(20), intercepted.next()).await
                {
                    drag = Some(event.data.clone());
                }
            }
            if let Some(data) = drag {
                for kind in [
                    DispatchDragEventType::DragEnter,
                    DispatchDragEventType::DragOver,
                    DispatchDragEventType::Drop,
                ] {
                    let event = DispatchDragEventParams::new(kind, tx, ty, data.clone());
                    cdp::run(&page, event, limit).await?;
                }
            }
            cdp::mouse_up(&page, tx, ty, limit).await
        }
        .await;
        let _ = cdp::run(&page, SetInterceptDragsParams::new(false), limit).await;
        result?;
        Ok(Outcome::say(format!("Dragged {from} to {to}")))
    }
}
