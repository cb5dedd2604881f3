//! Bootlane's REST API (/api/v1) and the wiring under it: the router with its OpenAPI document, sign-in and sessions, every resource's routes, the embedded web UI, the state that builds every service from the configuration, and the followers of other nodes' writes on a shared store ([`bootlane_cluster`]).

pub mod api;
pub mod app;
