//! Bootlane's configuration file: the TOML document every service reads at start, its defaults, validation and the serve arguments that override it.

pub mod auth;
pub mod auth_ldap;
pub mod auth_oidc;
pub mod config;
pub mod reference;
