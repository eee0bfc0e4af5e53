//! HTTP handlers of the browser family.

use axum::Json;
use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::response::IntoResponse;
use cove_protocol::browser::{
    BrowserState, ClickCoordinates, ClickElement, CloseTab, DragDrop, GetDropdownOptions, GoBack,
    HandleDialog, HoverElement, InputText, NavigateTo, ScrollDown, ScrollToText, ScrollUp,
    SelectDropdownOption, SendKeys, StateQuery, SwitchTab, Wait,
};

use super::Action;
use crate::AppState;
use crate::error::ApiError;
use crate::extract::{ApiJson, ApiQuery};

macro_rules! action_handler {
    ($(#[$doc:meta])* $name:ident, $body:ty, $to_action:expr) => {
        $(#[$doc])*
        pub async fn $name(
            State(app): State<AppState>,
            ApiQuery(query): ApiQuery<StateQuery>,
            ApiJson(body): ApiJson<$body>,
        ) -> Result<Json<BrowserState>, ApiError> {
            let to_action: fn($body) -> Action = $to_action;
            app.takeover.check_agent_may_act().await?;
            Ok(Json(app.browser.act(Some(to_action(body)), query).await?))
        }
    };
}

action_handler!(
    /// `POST /v1/browser/navigate_to`
    navigate_to, NavigateTo, Action::NavigateTo);
action_handler!(
    /// `POST /v1/browser/go_back`
    go_back, GoBack, |_| Action::GoBack);
action_handler!(
    /// `POST /v1/browser/wait`
    wait, Wait, Action::Wait);
action_handler!(
    /// `POST /v1/browser/click_element`
    click_element, ClickElement, Action::ClickElement);
action_handler!(
    /// `POST /v1/browser/click_coordinates`
    click_coordinates, ClickCoordinates, Action::ClickCoordinates);
action_handler!(
    /// `POST /v1/browser/input_text`
    input_text, InputText, Action::InputText);
action_handler!(
    /// `POST /v1/browser/send_keys`
    send_keys, SendKeys, Action::SendKeys);
action_handler!(
    /// `POST /v1/browser/switch_tab`
    switch_tab, SwitchTab, Action::SwitchTab);
action_handler!(
    /// `POST /v1/browser/close_tab`
    close_tab, CloseTab, Action::CloseTab);
action_handler!(
    /// `POST /v1/browser/scroll_down`
    scroll_down, ScrollDown, Action::ScrollDown);
action_handler!(
    /// `POST /v1/browser/scroll_up`
    scroll_up, ScrollUp, Action::ScrollUp);
action_handler!(
    /// `POST /v1/browser/scroll_to_text`
    scroll_to_text, ScrollToText, Action::ScrollToText);
action_handler!(
    /// `POST /v1/browser/get_dropdown_options`
    get_dropdown_options, GetDropdownOptions, Action::GetDropdownOptions);
action_handler!(
    /// `POST /v1/browser/select_dropdown_option`
    select_dropdown_option, SelectDropdownOption, Action::SelectDropdownOption);
action_handler!(
    /// `POST /v1/browser/drag_drop`
    drag_drop, DragDrop, Action::DragDrop);
action_handler!(
    /// `POST /v1/browser/hover_element`
    hover_element, HoverElement, Action::HoverElement);
action_handler!(
    /// `POST /v1/browser/handle_dialog`
    handle_dialog, HandleDialog, Action::HandleDialog);

/// `GET /v1/browser/state`
pub async fn state(
    State(app): State<AppState>,
    ApiQuery(query): ApiQuery<StateQuery>,
) -> Result<Json<BrowserState>, ApiError> {
    Ok(Json(app.browser.act(None, query).await?))
}

/// `GET /v1/browser/screenshot`
pub async fn screenshot(State(app): State<AppState>) -> Result<impl IntoResponse, ApiError> {
    let jpeg = app.browser.screenshot().await?;
    Ok(([(CONTENT_TYPE, "image/jpeg")], jpeg))
}
