//! The finishing pass over the merged OpenAPI document (an API contract a generator can
//! trust): the `#[utoipa::path]` annotations describe each handler's payload; this module
//! makes the document say what the server actually sends, in one place, so no annotation
//! has to repeat it:
//! - every 2xx `application/json` answer is wrapped in the success envelope
//!   `{"success": true, "data": <payload>}` ([`super::extract::Envelope`]);
//! - every operation lists the error answers its layers can produce, each with the
//!   [`ERROR_ENVELOPE`] schema `{"success": false, "error": "..."}` ([`super::error::ApiError`]);
//! - `text/event-stream` (SSE) and `text/plain` answers are left unwrapped;
//! - the session cookie and the bearer token are declared as security schemes and every
//!   operation of the protected router ([`protect`]) requires one of them.

use utoipa::openapi::{
    path::{Operation, PathItem},
    schema::{ObjectBuilder, Schema, Type},
    security::{ApiKey, ApiKeyValue, Http, HttpAuthScheme, SecurityRequirement, SecurityScheme},
    Components, ContentBuilder, Header, OpenApi, Ref, RefOr, Response,
};

use super::auth::COOKIE;

/// Name of the error-envelope schema in `components/schemas`.
pub const ERROR_ENVELOPE: &str = "ErrorEnvelope";
/// Security scheme: the `bootlane_session` cookie set by `POST /auth/login`.
pub const COOKIE_SCHEME: &str = "session_cookie";
/// Security scheme: the same session token as `Authorization: Bearer <token>`.
pub const BEARER_SCHEME: &str = "bearer";
/// Media type of server-sent event streams (WHATWG HTML "Server-sent events").
pub const SSE: &str = "text/event-stream";

/// Every operation of a path item, mutably.
pub fn operations_mut(item: &mut PathItem) -> impl Iterator<Item = &mut Operation> {
    [
        &mut item.get,
        &mut item.put,
        &mut item.post,
        &mut item.delete,
        &mut item.options,
        &mut item.head,
        &mut item.patch,
        &mut item.trace,
    ]
    .into_iter()
    .filter_map(Option::as_mut)
}

/// Marks every operation of `doc` as requiring a session (cookie or bearer). Run on the
/// protected router's document before it is merged, so the requirement follows the
/// session layer and cannot drift from it.
pub fn protect(doc: &mut OpenApi) {
    for item in doc.paths.paths.values_mut() {
        for op in operations_mut(item) {
            op.security = Some(vec![
                SecurityRequirement::new(COOKIE_SCHEME, Vec::<String>::new()),
                SecurityRequirement::new(BEARER_SCHEME, Vec::<String>::new()),
            ]);
        }
    }
}

fn success_envelope(data: Option<RefOr<Schema>>) -> Schema {
    let data = data.unwrap_or_else(|| ObjectBuilder::new().description(Some("Any JSON value")).build().into());
    ObjectBuilder::new()
        .property(
            "success",
            ObjectBuilder::new()
                .schema_type(Type::Boolean)
                .enum_values(Some([true])),
        )
        .required("success")
        .property("data", data)
        .required("data")
        .build()
        .into()
}

fn error_envelope() -> Schema {
    ObjectBuilder::new()
        .description(Some("Every failure: what is wrong and how to fix it"))
        .property(
            "success",
            ObjectBuilder::new()
                .schema_type(Type::Boolean)
                .enum_values(Some([false])),
        )
        .required("success")
        .property(
            "error",
            ObjectBuilder::new()
                .schema_type(Type::String)
                .description(Some("What is wrong and how to fix it")),
        )
        .required("error")
        .build()
        .into()
}

/// The error statuses `op` can answer, with a description for each. `protected` ops add
/// 401, and 403 when they declare the operator or admin role ([`super::roles`]);
/// `has_input` (path/query parameters or a body) adds 400; a body adds 413 and 415.
/// Otherwise 403, 409, 429, 502, 503 and 507 only where the annotation declares them
/// (they come from the handler).
fn error_statuses(op: &Operation) -> Vec<(&'static str, &'static str)> {
    let declared = |s: &str| op.responses.responses.contains_key(s);
    let has_body = op.request_body.is_some();
    let has_input = has_body || op.parameters.as_ref().is_some_and(|p| !p.is_empty());
    let protected = op.security.as_ref().is_some_and(|s| !s.is_empty());
    let mut out = Vec::new();
    if has_input || declared("400") {
        out.push(("400", "Bad path, query or body parameter; `error` names it"));
    }
    if protected || declared("401") {
        out.push(("401", "No valid session (cookie or bearer token), or wrong credentials"));
    }
    let role = op
        .extensions
        .as_ref()
        .and_then(|e| e.get(super::roles::EXTENSION))
        .and_then(|v| v.as_str());
    if protected && matches!(role, Some("operator" | "admin")) {
        out.push((
            "403",
            "The signed-in user's role is below the one this route declares (`x-bootlane-role`); `error` names it",
        ));
    } else if declared("403") {
        out.push((
            "403",
            "Refused: a wrong, expired or revoked token (the same answer for every cause)",
        ));
    }
    out.push(("404", "No such resource or endpoint"));
    out.push(("405", "The path exists but not with this method"));
    out.push(("408", "The request took longer than [api] request_timeout_secs"));
    if declared("409") {
        out.push(("409", "Conflicts with existing data"));
    }
    if has_body {
        out.push(("413", "The body is larger than [api] max_body_bytes"));
        out.push(("415", "The body is not sent as application/json"));
    }
    if declared("429") {
        out.push(("429", "Too many failed attempts; see Retry-After"));
    }
    if declared("502") {
        out.push((
            "502",
            "A device Bootlane drives (a BMC) failed, refused the credentials or did not answer; `error` says which",
        ));
    }
    if declared("503") {
        out.push((
            "503",
            "A service the request needs (the [auth.ldap] directory) is unavailable; `error` says which",
        ));
    }
    if declared("507") {
        out.push(("507", "Not enough free space on the boot root's volume"));
    }
    out.push(("500", "Internal error; the server log has the details"));
    out
}

fn finalize_operation(op: &mut Operation) {
    for (status, resp) in &mut op.responses.responses {
        let RefOr::T(resp) = resp else { continue };
        if !status.starts_with('2') {
            continue;
        }
        if resp.content.is_empty() {
            // Handlers answer `Envelope<...>` even where the annotation names no body.
            resp.content.insert(
                "application/json".into(),
                ContentBuilder::new().schema(Some(success_envelope(None))).build(),
            );
            continue;
        }
        for (media, content) in &mut resp.content {
            if media == "application/json" {
                content.schema = Some(success_envelope(content.schema.take()).into());
            } else if media == SSE && content.schema.is_none() {
                content.schema = Some(
                    ObjectBuilder::new()
                        .schema_type(Type::String)
                        .description(Some("Server-sent events: `id:`, `event:` and `data:` lines"))
                        .build()
                        .into(),
                );
            }
        }
    }
    for (status, default_description) in error_statuses(op) {
        let entry = op
            .responses
            .responses
            .entry(status.to_string())
            .or_insert_with(|| RefOr::T(Response::new(default_description)));
        let RefOr::T(resp) = entry else { continue };
        if resp.description.is_empty() {
            resp.description = default_description.into();
        }
        resp.content.clear();
        resp.content.insert(
            "application/json".into(),
            ContentBuilder::new()
                .schema(Some(Ref::from_schema_name(ERROR_ENVELOPE)))
                .build(),
        );
        if status == "429" {
            resp.headers.insert(
                "Retry-After".into(),
                Header::new(ObjectBuilder::new().schema_type(Type::Integer)),
            );
        }
    }
}

/// Makes the merged document describe the wire format (see the module docs). Run once, on
/// the document [`super::router`] serves, after [`protect`] ran on the protected part.
pub fn finalize(doc: &mut OpenApi) {
    super::events_api::describe_kinds(doc);
    for item in doc.paths.paths.values_mut() {
        for op in operations_mut(item) {
            finalize_operation(op);
        }
    }
    let components = doc.components.get_or_insert_with(Components::new);
    components
        .schemas
        .insert(ERROR_ENVELOPE.into(), RefOr::T(error_envelope()));
    components.add_security_scheme(
        COOKIE_SCHEME,
        SecurityScheme::ApiKey(ApiKey::Cookie(ApiKeyValue::with_description(
            COOKIE,
            "Session token set by POST /api/v1/auth/login",
        ))),
    );
    components.add_security_scheme(
        BEARER_SCHEME,
        SecurityScheme::Http(
            Http::builder()
                .scheme(HttpAuthScheme::Bearer)
                .description(Some("The session token (the bootlane_session cookie's value)"))
                .build(),
        ),
    );
}
