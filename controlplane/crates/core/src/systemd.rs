//! The systemd readiness protocol for the packaged unit's `Type=notify` (ready only when
//! every enabled service is listening). [`notify_ready`] sends `READY=1` with a `STATUS=`
//! line naming each service's state once `bootlane::run` has bound the API and the
//! supervisor has started every auto-start service (a service that failed to start does
//! not hold start-up back: the server runs without it, as outside systemd, and the status
//! line says why); [`notify_stopping`] sends `STOPPING=1` when shutdown begins. Outside
//! systemd (`NOTIFY_SOCKET` unset) both do nothing. Protocol: sd_notify(3). Holds no
//! global state.

use tokio_util::sync::CancellationToken;

use crate::supervisor::{ServiceState, ServiceStatus};

/// The `STATUS=` text for `systemctl status`: each service and its state, with the
/// reason of a failed one, e.g. `dns running, dhcp stopped, tftp failed (address in use)`.
pub fn status_line(services: &[ServiceStatus]) -> String {
    services
        .iter()
        .map(|s| match (s.state, &s.reason) {
            (ServiceState::Running, _) => format!("{} running", s.name),
            (ServiceState::Stopped, _) => format!("{} stopped", s.name),
            (ServiceState::Failed, Some(r)) => format!("{} failed ({r})", s.name),
            (ServiceState::Failed, None) => format!("{} failed", s.name),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Tells systemd the server is ready (`READY=1`, `STATUS=` from [`status_line`]). Call
/// after the API socket is bound and the auto-start services were started. A failure to
/// send is logged, never fatal (systemd then times the start out, which says more).
pub fn notify_ready(services: &[ServiceStatus]) {
    let status = status_line(services);
    if let Err(e) = sd_notify::notify(&[sd_notify::NotifyState::Ready, sd_notify::NotifyState::Status(&status)]) {
        tracing::warn!(error = %e, "cannot send READY=1 to systemd");
    }
}

/// Tells systemd the server is stopping (`STOPPING=1`).
pub fn notify_stopping() {
    if let Err(e) = sd_notify::notify(&[sd_notify::NotifyState::Stopping]) {
        tracing::warn!(error = %e, "cannot send STOPPING=1 to systemd");
    }
}

/// Spawns a task that sends [`notify_stopping`] as soon as `token` is cancelled (the
/// start of shutdown, before the services drain).
pub fn stopping_on_cancel(token: CancellationToken) {
    tokio::spawn(async move {
        token.cancelled().await;
        notify_stopping();
    });
}

#[cfg(test)]
mod tests {
    use time::OffsetDateTime;

    use super::*;

    fn svc(name: &str, state: ServiceState, reason: Option<&str>) -> ServiceStatus {
        ServiceStatus {
            name: name.into(),
            state,
            reason: reason.map(String::from),
            since: OffsetDateTime::UNIX_EPOCH,
            auto_start: true,
            listen: vec![],
        }
    }

    #[test]
    fn status_line_names_every_service_and_why_one_failed() {
        let line = status_line(&[
            svc("dns", ServiceState::Running, None),
            svc("dhcp", ServiceState::Stopped, None),
            svc("tftp", ServiceState::Failed, Some("binding 0.0.0.0:69: address in use")),
        ]);
        assert_eq!(
            line,
            "dns running, dhcp stopped, tftp failed (binding 0.0.0.0:69: address in use)"
        );
    }
}
