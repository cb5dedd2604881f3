//! Shared set-up for router tests (house style level b): a temporary store, a fake data
//! plane recording the last projection, DNS sockets off, and every service built by
//! [`crate::app::build`] exactly as in the server. Nothing is bound.

use std::sync::Arc;

use super::AppState;
use crate::{config::Config, dataplane::FakeTable, store::Store};

/// The admin password of test states.
pub(crate) const ADMIN_PASSWORD: &str = "pw-admin";

/// A state for `config` (its data dir is replaced by a fresh temporary one; DNS is not
/// bound; the local domain is `lab.test` unless set), plus the fake data plane.
pub(crate) async fn state(mut config: Config) -> (AppState, Arc<FakeTable>) {
    let store = Store::temporary();
    if config.data_dir == Config::default().data_dir {
        config.data_dir = std::env::temp_dir().join(format!("bootlane-api-{}", rand::random::<u64>()));
    }
    std::fs::create_dir_all(&config.data_dir).unwrap();
    let logs = crate::logging::LogControl::for_tests(&config.data_dir.join("logs"));
    logs.attach(&store, tokio_util::sync::CancellationToken::new())
        .await
        .unwrap();
    config.dns.enabled = false;
    if config.dns.local_domain.is_none() {
        config.dns.local_domain = Some("lab.test".into());
    }
    let fake = Arc::new(FakeTable::default());
    let state = crate::app::build(
        Arc::new(config),
        store,
        fake.clone(),
        Some(ADMIN_PASSWORD.into()),
        logs,
        tokio_util::sync::CancellationToken::new(),
    )
    .await
    .unwrap();
    // HTTP boot answers in router tests as in a running server.
    state
        .supervisor
        .act("http-boot", crate::supervisor::Action::Start)
        .await
        .unwrap();
    (state, fake)
}
