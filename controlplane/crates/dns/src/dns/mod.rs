//! The built-in DNS server (spec "Built-in DNS server"): record model and validation
//! ([`records`]), name rules ([`names`]), the in-memory zone and its XDP projection
//! ([`zone`]), request handling ([`handler`]), transports ([`server`]), upstream
//! forwarding ([`upstream`]), who may recurse ([`acl`]), response
//! rate limiting ([`rrl`]) and the service that ties them to
//! the store ([`service`]).

pub mod acl;
pub mod config;
pub mod handler;
pub mod names;
pub mod records;
pub mod rrl;
pub mod server;
pub mod service;
pub mod upstream;
pub mod zone;

#[cfg(test)]
mod tests;
