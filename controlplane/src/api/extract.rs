//! Extractors and the success envelope: [`ApiJson`] turns every JSON body rejection into
//! the error envelope (with a message saying what to fix), [`Envelope`] wraps successes as
//! `{"success": true, "data": ...}`, [`ApiPath`] makes bad path parameters a 400 and
//! [`ApiQuery`] does the same for query strings (issue 7 section 8: every rejection carries
//! the envelope).

use axum::{
    extract::{
        rejection::{JsonRejection, PathRejection, QueryRejection},
        FromRequest, FromRequestParts, Request,
    },
    http::{request::Parts, StatusCode},
    response::{IntoResponse, Response},
    Json,
};
use serde::{de::DeserializeOwned, Serialize};

use super::error::ApiError;

/// `{"success": true, "data": T}` with a status (200 by default).
pub struct Envelope<T>(pub StatusCode, pub T);

impl<T> Envelope<T> {
    /// 200 OK.
    pub fn ok(data: T) -> Self {
        Self(StatusCode::OK, data)
    }
    /// 201 Created.
    pub fn created(data: T) -> Self {
        Self(StatusCode::CREATED, data)
    }
}

impl<T: Serialize> IntoResponse for Envelope<T> {
    fn into_response(self) -> Response {
        (self.0, Json(serde_json::json!({ "success": true, "data": self.1 }))).into_response()
    }
}

/// A JSON body whose rejections use the error envelope.
pub struct ApiJson<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        match Json::<T>::from_request(req, state).await {
            Ok(Json(v)) => Ok(Self(v)),
            Err(JsonRejection::MissingJsonContentType(_)) => Err(ApiError::UnsupportedMediaType(
                "send the body as JSON with 'Content-Type: application/json'".into(),
            )),
            Err(JsonRejection::JsonSyntaxError(e)) => Err(ApiError::BadRequest(format!(
                "the body is not valid JSON: {}",
                e.body_text()
            ))),
            Err(JsonRejection::JsonDataError(e)) => Err(ApiError::BadRequest(format!(
                "the JSON does not have the expected shape: {}",
                e.body_text()
            ))),
            Err(JsonRejection::BytesRejection(e)) if e.status() == StatusCode::PAYLOAD_TOO_LARGE => {
                Err(ApiError::PayloadTooLarge("the request body is too large".into()))
            }
            Err(e) => Err(ApiError::BadRequest(e.body_text())),
        }
    }
}

/// Path parameters whose parse failures are a 400 with the envelope.
pub struct ApiPath<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned + Send> FromRequestParts<S> for ApiPath<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        match axum::extract::Path::<T>::from_request_parts(parts, state).await {
            Ok(p) => Ok(Self(p.0)),
            Err(PathRejection::FailedToDeserializePathParams(e)) => Err(ApiError::BadRequest(format!(
                "invalid path parameter: {}; ids are positive integers",
                e.body_text()
            ))),
            Err(e) => Err(ApiError::BadRequest(e.body_text())),
        }
    }
}

/// Query parameters whose parse failures are a 400 with the envelope naming the parameter
/// (axum's own `Query` answers plain text). Same shape as `axum::extract::Query`.
pub struct ApiQuery<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for ApiQuery<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        match axum::extract::Query::<T>::from_request_parts(parts, state).await {
            Ok(q) => Ok(Self(q.0)),
            // serde's message names the field ("page: invalid digit found in string").
            Err(QueryRejection::FailedToDeserializeQueryString(e)) => Err(ApiError::BadRequest(format!(
                "invalid query parameter: {}",
                std::error::Error::source(&e).map_or_else(|| e.body_text(), ToString::to_string)
            ))),
            Err(e) => Err(ApiError::BadRequest(e.body_text())),
        }
    }
}
