//! Logging set-up: a tracing `EnvFilter` from `[log]`/`--log`/`RUST_LOG` (default
//! `info`), formatted to stderr. Also bridges the `log` records of aya/aya-log into tracing.
//! Global state: the tracing subscriber, installed once.

use tracing_subscriber::{fmt, prelude::*, EnvFilter};

use crate::config::Config;

/// Installs the global subscriber. Safe to call once per process.
pub fn init(config: &Config) {
    let filter = EnvFilter::try_new(&config.log).unwrap_or_else(|_| EnvFilter::new("info"));
    let _ = tracing_subscriber::registry()
        .with(filter)
        .with(fmt::layer().with_writer(std::io::stderr))
        .try_init();
}
