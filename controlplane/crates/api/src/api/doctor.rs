//! The boot doctor routes ([`bootlane_doctor::doctor`]): `POST /doctor` runs every check
//! on the served interfaces (up to about 10 s) and answers the report; `GET /doctor`
//! answers the last report since the server started (`null` before the first run).

use std::sync::Arc;

use axum::extract::{FromRef, State};
use utoipa_axum::{router::OpenApiRouter, routes};

use super::{error::ApiError, error::Result, extract::Envelope, AppState};
use bootlane_doctor::doctor::{report::Report, Doctor};

impl FromRef<AppState> for Arc<Doctor> {
    fn from_ref(s: &AppState) -> Self {
        s.doctor.clone()
    }
}

/// Run the boot doctor: rival DHCP servers, proxyDHCP, relays, boot files, TFTP, MTU,
/// the HTTP boot URL, DNS and Secure Boot files; findings most severe first.
#[utoipa::path(post, path = "/api/v1/doctor", extensions(("x-bootlane-role" = json!("operator"))), tag = "doctor",
    responses((status = 200, body = Report), (status = 401), (status = 409, description = "A run is already going")))]
pub async fn run(State(d): State<Arc<Doctor>>) -> Result<Envelope<Report>> {
    let report = d
        .run()
        .await
        .map_err(|_| ApiError::Conflict("a doctor run is already going; wait for its report".into()))?;
    Ok(Envelope::ok(report))
}

/// The last doctor report since the server started (`null` before the first run).
#[utoipa::path(get, path = "/api/v1/doctor", extensions(("x-bootlane-role" = json!("viewer"))), tag = "doctor",
    responses((status = 200, body = Option<Report>), (status = 401)))]
pub async fn last(State(d): State<Arc<Doctor>>) -> Envelope<Option<Report>> {
    Envelope::ok(d.last())
}

/// The doctor routes.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(run, last))
}
