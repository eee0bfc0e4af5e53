//! The state's screenshot is taken while the page settles; it must still show the page as
//! the state's text describes it, when the page changes after its load.

use base64::Engine;
use cove_harness::{DaemonBuilder, FixtureSite};
use cove_protocol::browser::{NavigateTo, StateQuery};

#[tokio::test]
async fn a_page_that_changes_after_loading_is_pictured_as_it_ends_up() {
    cove_harness::viewer::chromium_path();
    let daemon = DaemonBuilder::new(env!("CARGO_BIN_EXE_coved"))
        .spawn()
        .await
        .expect("coved starts");
    let site = FixtureSite::start().await.unwrap();
    for round in 0..5 {
        daemon
            .client
            .browser(
                &NavigateTo {
                    url: "about:blank".into(),
                },
                StateQuery::lean(),
            )
            .await
            .unwrap();
        let state = daemon
            .client
            .browser(
                &NavigateTo {
                    url: site.url("late.html"),
                },
                StateQuery::default(),
            )
            .await
            .unwrap();
        assert!(state.elements.contains("Ready"), "{}", state.elements);
        let jpeg = base64::engine::general_purpose::STANDARD
            .decode(&state.screenshot.expect("a screenshot").base64)
            .unwrap();
        let picture = image::load_from_memory(&jpeg).unwrap().to_rgb8();
        let p = picture.get_pixel(640, 600);
        assert!(
            p[1] > 120 && p[0] < 60,
            "round {round}: the picture shows the page before its change: {p:?}"
        );
    }
}
