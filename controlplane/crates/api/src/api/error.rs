//! The API's single error type and the error envelope (spec "Response envelope",
//! "Errors"): every failure is `{"success": false, "error": "<what is wrong and how to
//! fix it>"}` with the HTTP status of its variant. Internal errors answer a generic
//! message and log the cause.

use axum::{
    http::{header, HeaderValue, StatusCode},
    response::{IntoResponse, Response},
    Json,
};
use serde_json::json;

use bootlane_core::{service_error::ServiceError, store::StoreError};

/// An API failure. The variant decides the status; the message is shown to the client.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// 400: the request is malformed or a value is invalid.
    #[error("{0}")]
    BadRequest(String),
    /// 401: no valid session.
    #[error("{0}")]
    Unauthorized(String),
    /// 403: authenticated by something other than a session (a task token) and refused.
    #[error("{0}")]
    Forbidden(String),
    /// 404: no such resource or path.
    #[error("{0}")]
    NotFound(String),
    /// 405: the path exists but not with this method.
    #[error("{0}")]
    MethodNotAllowed(String),
    /// 409: conflicts with existing data (duplicate).
    #[error("{0}")]
    Conflict(String),
    /// 413: the body is larger than `[api] max_body_bytes`.
    #[error("{0}")]
    PayloadTooLarge(String),
    /// 415: the body is not JSON.
    #[error("{0}")]
    UnsupportedMediaType(String),
    /// 429: too many attempts; retry after the given number of seconds.
    #[error("{0}")]
    TooManyRequests(String, u64),
    /// 502: a device Bootlane drives (a BMC) failed, refused the credentials or did not
    /// answer; the message names it and the cause.
    #[error("{0}")]
    BadGateway(String),
    /// 503: a service the request needs (the `[auth.ldap]` directory) cannot be reached
    /// or answered unexpectedly; the message says which.
    #[error("{0}")]
    ServiceUnavailable(String),
    /// 507: not enough free space on the boot root's volume (uploads).
    #[error("{0}")]
    InsufficientStorage(String),
    /// 500: something failed inside the server; details are only in the log.
    #[error("internal error")]
    Internal(#[source] anyhow::Error),
}

/// Result alias for handlers.
pub type Result<T, E = ApiError> = std::result::Result<T, E>;

impl ApiError {
    /// The HTTP status of this error.
    pub fn status_code(&self) -> StatusCode {
        match self {
            Self::BadRequest(_) => StatusCode::BAD_REQUEST,
            Self::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            Self::Forbidden(_) => StatusCode::FORBIDDEN,
            Self::NotFound(_) => StatusCode::NOT_FOUND,
            Self::MethodNotAllowed(_) => StatusCode::METHOD_NOT_ALLOWED,
            Self::Conflict(_) => StatusCode::CONFLICT,
            Self::PayloadTooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            Self::UnsupportedMediaType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Self::TooManyRequests(..) => StatusCode::TOO_MANY_REQUESTS,
            Self::InsufficientStorage(_) => StatusCode::INSUFFICIENT_STORAGE,
            Self::BadGateway(_) => StatusCode::BAD_GATEWAY,
            Self::ServiceUnavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            Self::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status_code();
        let msg = match &self {
            Self::Internal(e) => {
                tracing::error!("internal error: {e:#}");
                "internal server error; the server log has the details".to_string()
            }
            other => other.to_string(),
        };
        let mut resp = (status, Json(json!({ "success": false, "error": msg }))).into_response();
        if let Self::TooManyRequests(_, secs) = self {
            if let Ok(v) = HeaderValue::from_str(&secs.to_string()) {
                resp.headers_mut().insert(header::RETRY_AFTER, v);
            }
        }
        resp
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        Self::Internal(e.into())
    }
}

impl From<ServiceError> for ApiError {
    fn from(e: ServiceError) -> Self {
        match e {
            ServiceError::Invalid(m) => Self::BadRequest(m),
            ServiceError::Conflict(m) => Self::Conflict(m),
            ServiceError::NotFound(m) => Self::NotFound(m),
            ServiceError::Store(s) => Self::Internal(s.into()),
            ServiceError::TooLarge(m) => Self::PayloadTooLarge(m),
            ServiceError::NoSpace(m) => Self::InsufficientStorage(m),
            ServiceError::Upstream(m) => Self::BadGateway(m),
            ServiceError::Forbidden(m) => Self::Forbidden(m),
            e @ ServiceError::Io { .. } => Self::Internal(e.into()),
        }
    }
}
