//! The `bootlane` binary: parses the command line, builds the validated [`Config`],
//! sets up logging and hands over to [`bootlane::run`]. Holds no logic of its own.

use std::process::ExitCode;

use bootlane::{
    cli::{Cli, Command},
    config::Config,
};
use clap::Parser;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let args = match cli.command {
        Command::Serve(args) => args,
        Command::Config(cmd) => return bootlane::cli::config(&cmd),
        Command::User(args) => return bootlane::cli::user(&args),
        Command::Status(args) => return bootlane::cli::status(&args),
        Command::Audit(args) => return bootlane::cli::audit(&args),
        Command::Backup(args) => return bootlane::cli::backup::backup_command(&args),
        Command::Doctor(args) => return bootlane::cli::doctor::command(&args),
        Command::Restore(args) => return bootlane::cli::backup::restore_command(&args),
        Command::Store(args) => return bootlane::cli::store::command(&args),
        Command::Update(args) => return bootlane::cli::update::command(&args),
        Command::Generate(args) => return bootlane::cli::packaging::generate(&args),
    };
    let config = match Config::load(&args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("bootlane: {e:#}");
            return ExitCode::from(2);
        }
    };
    let (logs, _log_guard) = match bootlane::logging::init(&config.logging, &config.data_dir) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("bootlane: {e:#}");
            return ExitCode::from(2);
        }
    };
    let rt = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("bootlane: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = rt.block_on(async move {
        let token = tokio_util::sync::CancellationToken::new();
        tokio::spawn(bootlane::shutdown_signal(token.clone()));
        bootlane::run(config, token, logs).await
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("fatal: {e:#}");
            eprintln!("bootlane: {e:#}");
            ExitCode::FAILURE
        }
    }
}
