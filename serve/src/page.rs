//! The web page, embedded in the binary: plain HTML, CSS and JavaScript modules in `page/`,
//! no build step. It talks to this server only: the Content-Security-Policy lets it load and
//! connect to its own origin and nothing else.

use axum::extract::Path;
use axum::http::StatusCode;
use axum::http::header::{
    CACHE_CONTROL, CONTENT_SECURITY_POLICY, CONTENT_TYPE, REFERRER_POLICY, X_CONTENT_TYPE_OPTIONS,
};
use axum::response::{IntoResponse, Response};

const INDEX: &str = include_str!("page/index.html");
/// The page's script: ES modules, each served as it is; `app.js` starts the page.
const MODULES: &[(&str, &str)] = &[
    ("app.js", include_str!("page/app.js")),
    ("key.js", include_str!("page/key.js")),
    ("api.js", include_str!("page/api.js")),
    ("checkpoints.js", include_str!("page/checkpoints.js")),
    ("composer.js", include_str!("page/composer.js")),
    ("dialogs.js", include_str!("page/dialogs.js")),
    ("dom.js", include_str!("page/dom.js")),
    ("side.js", include_str!("page/side.js")),
    ("replay.js", include_str!("page/replay.js")),
    ("state.js", include_str!("page/state.js")),
    ("text.js", include_str!("page/text.js")),
    ("threads.js", include_str!("page/threads.js")),
    ("transcript.js", include_str!("page/transcript.js")),
];
const STYLE: &str = include_str!("page/app.css");

/// What the page may load: its own origin only. Frames are the workspace previews, which
/// the server sends with a sandbox of their own.
const POLICY: &str = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

fn html(status: StatusCode, body: String) -> Response {
    (
        status,
        [
            (CONTENT_TYPE, "text/html; charset=utf-8"),
            (CACHE_CONTROL, "no-store"),
            (CONTENT_SECURITY_POLICY, POLICY),
            (X_CONTENT_TYPE_OPTIONS, "nosniff"),
            // A form posted from the page must carry its origin (no-referrer would send `null`).
            (REFERRER_POLICY, "same-origin"),
        ],
        body,
    )
        .into_response()
}

/// `GET /`.
pub(super) async fn index() -> Response {
    html(StatusCode::OK, INDEX.to_string())
}

/// `GET /page/{file}`: one of the page's modules.
pub(super) async fn module(Path(file): Path<String>) -> Response {
    match MODULES.iter().find(|(name, _)| *name == file) {
        Some((_, body)) => asset("text/javascript; charset=utf-8", body),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

/// `GET /app.css`.
pub(super) async fn style() -> Response {
    asset("text/css; charset=utf-8", STYLE)
}

fn asset(mime: &'static str, body: &'static str) -> Response {
    (
        [
            (CONTENT_TYPE, mime),
            // A newer cove serves newer files under the same names.
            (CACHE_CONTROL, "no-cache"),
            (X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
        body,
    )
        .into_response()
}

/// A 401 page for a person without a session: why, and the two ways in.
pub(super) fn login_help(why: &str) -> Response {
    let body = format!(
        r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Cove: log in</title><link rel="icon" href="data:,"><link rel="stylesheet" href="/app.css"></head>
<body class="login"><main class="login-box">
<h1>Cove</h1>
<p id="why">{why}</p>
<p>When <code>cove serve</code> starts it prints a line such as</p>
<pre>open in your browser (works once): http://127.0.0.1:7800/login?token=…</pre>
<p>Open that link in this browser. Each link works once; a new one is printed at every start of the server.</p>
<form method="post" action="/login">
<label for="token">Or paste the API token it printed (<code>API token (Authorization: Bearer): …</code>):</label>
<input id="token" name="token" type="password" autocomplete="off" required>
<button type="submit">Log in</button>
</form>
</main></body></html>"#,
        why = escape(why)
    );
    html(StatusCode::UNAUTHORIZED, body)
}

/// Text made safe inside HTML.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::MODULES;

    /// Every kind of event the engine emits, as its schema names them.
    fn event_kinds() -> Vec<String> {
        let schema = schemars::schema_for!(cove_protocol::events::EventKind);
        let schema = serde_json::to_value(&schema).unwrap();
        schema["oneOf"]
            .as_array()
            .unwrap()
            .iter()
            .map(|variant| {
                variant["properties"]["type"]["const"]
                    .as_str()
                    .unwrap_or_else(|| panic!("a variant without its type's name: {variant}"))
                    .to_string()
            })
            .collect()
    }

    #[test]
    fn the_pages_types_are_the_protocols() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/page/protocol.d.ts");
        let generated = crate::page_types::declarations();
        if std::env::var_os("COVE_WRITE_PAGE_TYPES").is_some() {
            std::fs::write(&path, &generated).unwrap();
        }
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            committed == generated,
            "{} is not what the protocol's schemas say: COVE_WRITE_PAGE_TYPES=1 cargo test -p cove-serve writes it again",
            path.display()
        );
    }

    #[test]
    fn the_pages_modules_type_check() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let tsc = root.join("../target/test-deps/node_modules/typescript/bin/tsc");
        assert!(
            tsc.exists(),
            "TypeScript is not installed at {}: run harness/install-test-deps.sh",
            tsc.display()
        );
        let checked = std::process::Command::new("node")
            .arg(&tsc)
            .arg("-p")
            .arg(root.join("src/page"))
            .output()
            .expect("node runs (harness/install-test-deps.sh installs it)");
        assert!(
            checked.status.success(),
            "tsc finds errors in the page's modules:\n{}{}",
            String::from_utf8_lossy(&checked.stdout),
            String::from_utf8_lossy(&checked.stderr)
        );
    }

    #[test]
    fn every_event_kind_the_engine_emits_has_a_rendering_in_the_page() {
        let kinds = event_kinds();
        assert!(kinds.len() >= 20, "{kinds:?}");
        let script: String = MODULES.iter().map(|(_, body)| *body).collect();
        let unshown: Vec<&String> = kinds
            .iter()
            .filter(|kind| !script.contains(&format!("case '{kind}':")))
            .collect();
        assert!(
            unshown.is_empty(),
            "the page's render() has no case for {unshown:?}"
        );
    }
}
