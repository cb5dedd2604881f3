//! The foundation of Bootlane's control plane: network types and sockets, the store and its two backends (sled, PostgreSQL), events and the audit log, metrics, logging, the service supervisor and the HTTP server every listener runs on. Nothing here knows about boot, protocols or the API.

pub mod audit;
pub mod escape;
pub mod events;
pub mod identity;
pub mod leases;
pub mod logging;
pub mod memory;
pub mod metrics;
pub mod net;
pub mod service_error;
pub mod settings;
pub mod store;
pub mod supervisor;
pub mod swap;
pub mod systemd;
pub mod web_server;
