//! HTTP handler of the vision family.

use axum::Json;
use axum::extract::State;
use cove_protocol::vision::{SeeImageRequest, SeeImageResponse};

use super::{VisionError, load, prepare};
use crate::AppState;
use crate::error::ApiError;
use crate::extract::ApiJson;

/// `POST /v1/vision/see_image`
pub async fn see_image(
    State(app): State<AppState>,
    ApiJson(request): ApiJson<SeeImageRequest>,
) -> Result<Json<SeeImageResponse>, ApiError> {
    let http = match app.http.get() {
        Some(http) => http,
        None => {
            let built = reqwest::Client::builder()
                .user_agent(concat!("coved/", env!("CARGO_PKG_VERSION")))
                .connect_timeout(std::time::Duration::from_secs(10))
                .build()
                .map_err(|e| ApiError::internal(format!("cannot build the HTTP client: {e}")))?;
            app.http.get_or_init(|| built)
        }
    };
    let bytes = load(&app.workspace, http, &request).await?;
    // A decode may take a few hundred megabytes: only so many at once. The turn goes with
    // the work, so a decode its caller gave up waiting for still holds it until it ends.
    let turn = tokio::time::timeout(
        crate::blocking::BLOCKING_DEADLINE,
        app.decodes.clone().acquire_owned(),
    )
    .await
    .map_err(|_| {
        ApiError::new(
            cove_protocol::ErrorCode::Timeout,
            "other images are being prepared; try again in a moment",
        )
    })?
    .map_err(|_| ApiError::internal("the image queue is closed"))?;
    let prepared = crate::blocking::blocking(move || {
        let prepared = prepare(&bytes);
        drop(turn);
        prepared
    })
    .await??;
    Ok(Json(prepared))
}

impl From<VisionError> for ApiError {
    fn from(e: VisionError) -> Self {
        use cove_protocol::ErrorCode;
        match e {
            VisionError::File(file) => ApiError::from(file),
            VisionError::InvalidRequest(m) => ApiError::new(ErrorCode::InvalidRequest, m),
            e @ VisionError::TooLarge { .. } => {
                ApiError::new(ErrorCode::PayloadTooLarge, e.to_string())
            }
            e @ VisionError::TooManyPixels { .. } => {
                ApiError::new(ErrorCode::PayloadTooLarge, e.to_string())
            }
            VisionError::NotAnImage(m) => ApiError::new(ErrorCode::NotAnImage, m),
            VisionError::FetchFailed(m) => ApiError::new(ErrorCode::FetchFailed, m),
            VisionError::Internal(m) => ApiError::internal(m),
        }
    }
}
