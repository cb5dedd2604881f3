//! Extractors and the success envelope: [`ApiJson`] turns every JSON body rejection into
//! the error envelope (with a message saying what to fix), [`Envelope`] wraps successes as
//! `{"success": true, "data": ...}`, [`ApiPath`] makes bad path parameters a 400 and
//! [`ApiQuery`] does the same for query strings (every rejection carries the envelope).

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
        let value = match Json::<serde_json::Value>::from_request(req, state).await {
            Ok(Json(v)) => v,
            Err(JsonRejection::MissingJsonContentType(_)) => {
                return Err(ApiError::UnsupportedMediaType(
                    "send the body as JSON with 'Content-Type: application/json'".into(),
                ))
            }
            Err(JsonRejection::JsonSyntaxError(e)) => {
                return Err(ApiError::BadRequest(format!(
                    "the body is not valid JSON: {}",
                    e.body_text()
                )))
            }
            Err(JsonRejection::BytesRejection(e)) if e.status() == StatusCode::PAYLOAD_TOO_LARGE => {
                return Err(ApiError::PayloadTooLarge("the request body is too large".into()))
            }
            Err(e) => return Err(ApiError::BadRequest(e.body_text())),
        };
        // Every request body of this API is an object; serde would also fill a struct
        // from an array of its fields in order, which no client means.
        if !value.is_object() {
            return Err(ApiError::BadRequest(format!(
                "the body must be a JSON object, not {}",
                json_kind(&value)
            )));
        }
        serde_path_to_error::deserialize(value).map(Self).map_err(|e| {
            let path = e.path().to_string();
            ApiError::BadRequest(if path == "." {
                format!("the JSON does not have the expected shape: {}", e.inner())
            } else {
                format!("the JSON does not have the expected shape: {path}: {}", e.inner())
            })
        })
    }
}

/// `"an array"`, `"a string"`, ... for messages about a JSON value's type.
pub fn json_kind(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

/// `deserialize_with` for optional object-valued fields (settings groups in one body):
/// `null` or absent is `None`, an object is parsed, anything else (an array, which serde
/// would otherwise read as the struct's fields in order) is an error naming the type.
pub fn object_only<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: DeserializeOwned,
{
    use serde::{de::Error, Deserialize};
    match Option::<serde_json::Value>::deserialize(d)? {
        None => Ok(None),
        Some(v @ serde_json::Value::Object(_)) => serde_json::from_value(v).map(Some).map_err(D::Error::custom),
        Some(v) => Err(D::Error::custom(format!("expected an object, not {}", json_kind(&v)))),
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
