//! The router, built from the protocol's endpoint table.
//!
//! Every row of [`cove_protocol::api::ENDPOINTS`] is routed through [`handler`], an exhaustive
//! match, and every row but `/health` sits behind the token middleware, which also guards the
//! fallback: an unknown path answers 401 to a caller without the token, not 404. The
//! takeover page and its socket sit outside the table: they check the takeover token. In
//! front of it all, [`preview::by_host`] sends requests for the preview origins
//! (`p<port>.<base>`, `files.<base>`) to the previews, which take the preview token.

use std::any::Any;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::middleware;
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodFilter, MethodRouter, any_service, on};
use cove_protocol::ErrorCode;
use cove_protocol::api::{ENDPOINTS, Endpoint, Method, Op};
use tower_http::catch_panic::CatchPanicLayer;

use crate::error::ApiError;
use crate::{
    AppState, auth, browser, checkpoints, files, forks, idle, info, mcp, metrics, preview, shell,
    takeover, token, traced, vision, watches, web,
};

fn filter(method: Method) -> MethodFilter {
    match method {
        Method::Get => MethodFilter::GET,
        Method::Post => MethodFilter::POST,
        Method::Put => MethodFilter::PUT,
        Method::Delete => MethodFilter::DELETE,
    }
}

fn method_name(method: Method) -> &'static str {
    match method {
        Method::Get => "GET",
        Method::Post => "POST",
        Method::Put => "PUT",
        Method::Delete => "DELETE",
    }
}

/// The handler serving one endpoint.
fn handler(endpoint: &Endpoint, state: &AppState) -> MethodRouter<AppState> {
    let m = filter(endpoint.method);
    match endpoint.op {
        // The MCP server takes POST, GET and DELETE; its own Origin check sits in front.
        Op::Mcp => any_service(mcp::http::service(state)).layer(middleware::from_fn_with_state(
            state.clone(),
            mcp::http::check_origin,
        )),
        Op::Health => on(m, info::health),
        Op::Info => on(m, info::info),
        Op::Idle => on(m, idle::idle),
        Op::Metrics => on(m, metrics::http::metrics),
        Op::RotateToken => on(m, token::rotate),
        Op::OpenApi => on(m, info::openapi),
        Op::ShellExec => on(m, shell::http::exec),
        Op::ShellSessions => on(m, shell::http::sessions),
        Op::ShellOutput => on(m, shell::http::output),
        Op::ShellRecording => on(m, shell::http::recording),
        Op::ShellInput => on(m, shell::http::input),
        Op::ShellSignal => on(m, shell::http::signal),
        Op::ShellDeleteSession => on(m, shell::http::delete),
        Op::FilesList => on(m, files::http::list),
        Op::FilesRead => on(m, files::http::read),
        Op::FilesCreate => on(m, files::http::create),
        Op::FilesRewrite => on(m, files::http::rewrite),
        Op::FilesStrReplace => on(m, files::http::str_replace),
        Op::FilesDelete => on(m, files::http::delete),
        Op::FilesDownload => on(m, files::http::download),
        Op::FilesUpload => on(m, files::http::upload),
        Op::BrowserNavigateTo => on(m, browser::http::navigate_to),
        Op::BrowserGoBack => on(m, browser::http::go_back),
        Op::BrowserWait => on(m, browser::http::wait),
        Op::BrowserClickElement => on(m, browser::http::click_element),
        Op::BrowserClickCoordinates => on(m, browser::http::click_coordinates),
        Op::BrowserInputText => on(m, browser::http::input_text),
        Op::BrowserSendKeys => on(m, browser::http::send_keys),
        Op::BrowserSwitchTab => on(m, browser::http::switch_tab),
        Op::BrowserCloseTab => on(m, browser::http::close_tab),
        Op::BrowserScrollDown => on(m, browser::http::scroll_down),
        Op::BrowserScrollUp => on(m, browser::http::scroll_up),
        Op::BrowserScrollToText => on(m, browser::http::scroll_to_text),
        Op::BrowserGetDropdownOptions => on(m, browser::http::get_dropdown_options),
        Op::BrowserSelectDropdownOption => on(m, browser::http::select_dropdown_option),
        Op::BrowserDragDrop => on(m, browser::http::drag_drop),
        Op::BrowserHoverElement => on(m, browser::http::hover_element),
        Op::BrowserHandleDialog => on(m, browser::http::handle_dialog),
        Op::BrowserState => on(m, browser::http::state),
        Op::BrowserScreenshot => on(m, browser::http::screenshot),
        Op::BrowserTakeoverStart => on(m, takeover::http::start),
        Op::BrowserTakeoverStatus => on(m, takeover::http::status),
        Op::BrowserTakeoverEnd => on(m, takeover::http::end),
        Op::VisionSeeImage => on(m, vision::http::see_image),
        Op::PreviewExpose => on(m, preview::http::expose),
        Op::WebFetch => on(m, web::http::fetch),
        Op::WebSearch => on(m, web::http::search),
        Op::CheckpointsCreate => on(m, checkpoints::http::create),
        Op::CheckpointsList => on(m, checkpoints::http::list),
        Op::CheckpointsDiff => on(m, checkpoints::http::diff),
        Op::CheckpointsRestore => on(m, checkpoints::http::restore),
        Op::CheckpointsArchive => on(m, checkpoints::http::archive),
        Op::CheckpointsImport => on(m, checkpoints::http::import),
        Op::WatchesCreate => on(m, watches::http::create),
        Op::WatchesList => on(m, watches::http::list),
        Op::WatchesDelete => on(m, watches::http::delete),
        Op::Events => on(m, watches::http::events),
        Op::ForksCreate => on(m, forks::http::create),
        Op::ForksList => on(m, forks::http::list),
        Op::ForksChanges => on(m, forks::http::changes),
        Op::ForksApply => on(m, forks::http::apply),
        Op::ForksDelete => on(m, forks::http::delete),
    }
}

async fn unknown_route() -> ApiError {
    ApiError::new(
        ErrorCode::UnknownRoute,
        "no such route; see /v1/openapi.json",
    )
}

async fn method_not_allowed() -> ApiError {
    ApiError::new(
        ErrorCode::MethodNotAllowed,
        "this route does not take that method; see /v1/openapi.json",
    )
}

fn panic_response(_panic: Box<dyn Any + Send + 'static>) -> Response {
    tracing::error!("a request handler panicked");
    ApiError::internal("the daemon hit an internal error").into_response()
}

/// The whole API, ready to serve.
pub fn router(state: AppState) -> Router {
    // The takeover page and its socket take the takeover's own token, not the API's.
    let mut public = Router::new()
        .route("/takeover", axum::routing::get(takeover::http::page))
        .route("/takeover/ws", axum::routing::get(takeover::http::socket));
    let mut protected = Router::new();
    for endpoint in ENDPOINTS {
        // Each route counts its requests and their latency for `/metrics`; those behind the
        // token join the caller's trace (an anonymous caller makes no spans).
        let method = method_name(endpoint.method);
        let counted = handler(endpoint, &state).layer(middleware::from_fn_with_state(
            (state.clone(), method, endpoint.path),
            metrics::record,
        ));
        if endpoint.auth {
            let traced = counted.layer(middleware::from_fn_with_state(
                (method, endpoint.path),
                traced::join,
            ));
            protected = protected.route(endpoint.path, traced);
        } else {
            public = public.route(endpoint.path, counted);
        }
    }
    let protected = protected
        .fallback(unknown_route)
        .method_not_allowed_fallback(method_not_allowed)
        // A request for a fork goes to the fork's daemon, once its token is checked here.
        .layer(middleware::from_fn_with_state(
            state.clone(),
            forks::dispatch,
        ))
        .layer(middleware::from_fn_with_state(
            state.clone(),
            auth::require_token,
        ));
    // Previews on the daemon's origin: the API token's holder is served, browsers are sent
    // on to the preview origins.
    let previews = Router::new()
        .route("/preview", axum::routing::any(preview::on_daemon_origin))
        .route("/preview/", axum::routing::any(preview::on_daemon_origin))
        .route(
            "/preview/{*path}",
            axum::routing::any(preview::on_daemon_origin),
        )
        .route(
            "/proxy/{*rest}",
            axum::routing::any(preview::on_daemon_origin),
        );
    public
        .merge(previews)
        .merge(protected)
        // Bodies are capped by the extractors themselves (see `body`), which also drain what
        // they refuse; axum's own limit would cut the connection instead.
        .layer(DefaultBodyLimit::disable())
        // Outermost but for panics: the preview origins never reach the routes above.
        .layer(middleware::from_fn_with_state(
            state.clone(),
            preview::by_host,
        ))
        // Every request counts as use, the previews' and the takeover page's included.
        .layer(middleware::from_fn_with_state(state.clone(), idle::track))
        .layer(CatchPanicLayer::custom(panic_response))
        .with_state(state)
}
