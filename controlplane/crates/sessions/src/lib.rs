//! Boot sessions: one timeline per boot attempt of a machine. The [`recorder`] groups,
//! per machine, the steps Bootlane sees of a network boot (DHCP exchanges with the
//! options that decide a boot, proxyDHCP, TFTP transfers and refusals, HTTP boot
//! fetches, the iPXE script or menu and its profile, access-control refusals, the
//! installer's answer file and reports, baselines, the power or wake-on-LAN action that
//! started it) into a [`model::BootSession`]; [`judge`] gives each session its verdict
//! (`in_progress`, `handed_to_installer`, `installed`, `booted_local_disk` or `stalled`
//! with where and the likeliest cause in words). Ended sessions are kept in a journal
//! beside the database, in a compact layout ([`stored`]), with bounded retention
//! ([`config::SessionsConfig`]).

pub mod config;
pub mod judge;
pub mod model;
pub mod recorder;
pub mod steps;
pub mod stored;
