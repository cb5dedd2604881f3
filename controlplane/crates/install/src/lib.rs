//! What a machine installs: answer templates and their presets, install tasks with their tokens and reports, post-install scripts and baselines, the community catalog of shared items and the netboot catalog of distributions.

pub mod answers;
pub mod community;
pub mod install;
pub mod netboot;
pub mod scripts;
