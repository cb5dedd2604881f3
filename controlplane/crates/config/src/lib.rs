//! Bootlane's configuration file: the TOML document every service reads at start, its defaults, validation and the serve arguments that override it.

pub mod auth;
pub mod config;
pub mod reference;
