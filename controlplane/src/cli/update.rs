//! `bootlane update list|install`: the versions the server downloaded and verified under
//! `<data_dir>/updates/`, and installing one over the binary ([`crate::updates::install`]).

use std::{path::PathBuf, process::ExitCode};

use anyhow::Context;
use clap::{Args, Subcommand};

use crate::{
    config::Config,
    updates::install::{install, list},
};

/// Arguments of `bootlane update ...`.
#[derive(Debug, Args)]
pub struct UpdateArgs {
    /// Configuration file to take `data_dir` and `[updates] public_key` from. Default:
    /// the defaults (`/var/lib/bootlane`, no key).
    #[arg(long, env = "BOOTLANE_CONFIG", global = true)]
    pub config: Option<PathBuf>,
    /// Data directory holding `updates/`. Overrides `data_dir` of `--config`.
    #[arg(long, env = "BOOTLANE_DATA_DIR", global = true)]
    pub data_dir: Option<PathBuf>,
    /// What to do.
    #[command(subcommand)]
    pub command: UpdateCommand,
}

/// `bootlane update ...` subcommands.
#[derive(Debug, Subcommand)]
pub enum UpdateCommand {
    /// List the downloaded, verified versions (`POST /api/v1/version/download` stores them).
    List,
    /// Verify a downloaded version again (size, SHA-256, minisign signature with
    /// `[updates] public_key`) and install it atomically over the binary; then restart the
    /// service (`systemctl restart bootlane`).
    Install {
        /// The version to install, as listed by `bootlane update list`.
        version: String,
        /// The binary to replace. Default: this `bootlane` executable (symlinks followed).
        #[arg(long)]
        target: Option<PathBuf>,
    },
}

/// The configuration of `args` (file, then `--data-dir`).
fn load(args: &UpdateArgs) -> anyhow::Result<Config> {
    let mut cfg = match &args.config {
        Some(p) => Config::from_file(p)?,
        None => Config::default(),
    };
    if let Some(d) = &args.data_dir {
        cfg.data_dir.clone_from(d);
    }
    cfg.updates.validate()?;
    Ok(cfg)
}

/// Runs `bootlane update ...`: prints the result; exit 1 on any error.
pub fn command(args: &UpdateArgs) -> ExitCode {
    let run = || -> anyhow::Result<String> {
        let cfg = load(args)?;
        let dir = cfg.data_dir.join("updates");
        match &args.command {
            UpdateCommand::List => Ok(list(&dir)),
            UpdateCommand::Install { version, target } => {
                let target = match target {
                    Some(t) => t.clone(),
                    None => std::env::current_exe().context("finding this executable")?,
                };
                install(&dir, &cfg.updates.public_key, version, &target)
            }
        }
    };
    super::finish(run())
}
