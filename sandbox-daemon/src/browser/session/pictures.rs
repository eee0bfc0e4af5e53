//! The state's screenshot, taken while the page settles and its text is read: a picture
//! shows the page as it was when it began, so one that began after the page's last change
//! is the page the text describes. Each time the page changes after a picture began, the
//! next is begun at once rather than after the text, so a page that settles while it is
//! read (scripts loaded after the load event, a render after an answer) costs at most the
//! rest of one picture past its text.

use tokio::sync::watch;

use super::*;

/// Most pictures taken while one state is read; past them the page is pictured once its
/// text is read (a page that keeps changing would otherwise be pictured over and over).
const MAX_PICTURES: usize = 4;

/// A picture and when it began, on the page's clock (None when the page could not say).
pub(super) type Picture = (Option<f64>, Result<Screenshot, BrowserError>);

impl Session {
    /// Pictures of the page until `read` says its text has been read: one at once, then
    /// another whenever the page changes after the last began, at once even while that one
    /// is still being captured (it would show the page from before the change). The last
    /// taken.
    pub(super) async fn pictures_while_read(
        &self,
        page: &Page,
        mut read: watch::Receiver<bool>,
    ) -> Option<Picture> {
        let mut last = None;
        for _ in 0..MAX_PICTURES {
            let Some(began) = self.page_clock(page).await else {
                last = Some((None, self.screenshot(page).await));
                break;
            };
            // While the capture is on its way, only a change of content is waited for:
            // looking for animations would take the page from the picture's frame.
            let content_changed = self.next_change(page, began, false);
            let shot = self.screenshot(page);
            tokio::pin!(content_changed, shot);
            // Whether the wait for a change is still on after the capture came back.
            let (shot, waiting) = tokio::select! {
                biased;
                said = &mut content_changed => {
                    if matches!(said, Ok(Some(_))) {
                        continue;
                    }
                    (shot.await, false)
                }
                shot = &mut shot => (shot, true),
            };
            let failed = shot.is_err();
            last = Some((Some(began), shot));
            if failed || *read.borrow() {
                break;
            }
            let changed = waiting
                && tokio::select! {
                    said = self.next_change(page, began, true) => matches!(said, Ok(Some(_))),
                    _ = read.wait_for(|read| *read) => false,
                };
            // Changed after this one began, before the text was read: the next shows the
            // page since.
            if !changed || *read.borrow() {
                break;
            }
        }
        last
    }

    /// When the page changed after `since` (its clock), once it does; None when it has not
    /// within [`STILL_WAIT`] or its text was read meanwhile. `look`: finite animations count.
    async fn next_change(
        &self,
        page: &Page,
        since: f64,
        look: bool,
    ) -> Result<Option<f64>, BrowserError> {
        let args = [
            json!(since),
            json!(STILL_WAIT.as_millis() as u64),
            json!(look),
        ];
        cdp::agent(page, "nextChange", &args, self.limit()).await
    }

    /// The page's own clock (ms), when it answers.
    async fn page_clock(&self, page: &Page) -> Option<f64> {
        cdp::agent::<f64>(page, "now", &[], self.limit()).await.ok()
    }
}
