//! `bootlane store migrate`: copies a stopped node's store into a shared PostgreSQL
//! database (or back into a sled data directory) and verifies the copy
//! ([`crate::store::migrate`]).

use crate::store::migrate::{migrate, Location};

/// Arguments of `bootlane store`.
#[derive(Debug, clap::Args)]
pub struct StoreArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: StoreCommand,
}

/// `bootlane store ...` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum StoreCommand {
    /// Copy every record and setting from one store into another, empty one, then verify
    /// the copy (counts and checksums per tree). The source is only read. Stop the node
    /// (or nodes) using either store first.
    Migrate {
        /// The source: `sled:<data directory>` or `postgres:<postgres:// URL>`.
        #[arg(long)]
        from: String,
        /// The target, which must hold no data: `sled:<data directory>` or
        /// `postgres:<postgres:// URL>`.
        #[arg(long)]
        to: String,
    },
}

/// Runs `bootlane store ...`. Exit 0 with the report, or 1 with the reason.
pub fn command(args: &StoreArgs) -> std::process::ExitCode {
    match &args.command {
        StoreCommand::Migrate { from, to } => super::run_async(async move {
            let (from, to): (Location, Location) = (from.parse()?, to.parse()?);
            migrate(&from, &to).await
        }),
    }
}
