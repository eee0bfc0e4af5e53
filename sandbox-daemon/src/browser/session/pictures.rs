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
    /// another whenever the page changes after the last began. The last taken.
    pub(super) async fn pictures_while_read(
        &self,
        page: &Page,
        mut read: watch::Receiver<bool>,
    ) -> Option<Picture> {
        let mut last = None;
        for _ in 0..MAX_PICTURES {
            let began = self.page_clock(page).await;
            let shot = self.screenshot(page).await;
            let failed = shot.is_err();
            last = Some((began, shot));
            let Some(began) = began else { break };
            if failed || *read.borrow() {
                break;
            }
            let args = [json!(began), json!(STILL_WAIT.as_millis() as u64)];
            let changed = cdp::agent::<Option<f64>>(page, "nextChange", &args, self.limit());
            let changed = tokio::select! {
                changed = changed => matches!(changed, Ok(Some(_))),
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

    /// The page's own clock (ms), when it answers.
    async fn page_clock(&self, page: &Page) -> Option<f64> {
        cdp::agent::<f64>(page, "now", &[], self.limit()).await.ok()
    }
}
