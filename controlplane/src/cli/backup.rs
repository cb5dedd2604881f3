//! `bootlane backup` and `bootlane restore`: a consistent copy of the store written to a
//! file, from the data directory while the server is stopped or through the running
//! server's `GET /api/v1/system/backup`; and a checked backup written into a stopped data
//! directory. The file format is [`crate::backup`]'s.

use crate::{
    backup::{backup, decode, restore, write_file, Manifest, STORE_PARTS},
    store::Store,
};

/// Arguments of `bootlane backup`.
#[derive(Debug, clap::Args)]
pub struct BackupArgs {
    /// File to write (mode 0600; written whole or not at all).
    #[arg(long, short)]
    pub output: std::path::PathBuf,
    /// Data directory to back up when the server is stopped. Default: `data_dir` from
    /// `--config`, else `/var/lib/bootlane`.
    #[arg(long, env = "BOOTLANE_DATA_DIR")]
    pub data_dir: Option<std::path::PathBuf>,
    /// Configuration file to take `data_dir` and `[api] listen` from.
    #[arg(long, env = "BOOTLANE_CONFIG")]
    pub config: Option<std::path::PathBuf>,
    /// Reaching the running server (used when it holds the database): an admin, or an
    /// admin's API token.
    #[command(flatten)]
    pub login: super::ApiLogin,
}

/// Arguments of `bootlane restore`.
#[derive(Debug, clap::Args)]
pub struct RestoreArgs {
    /// Backup file written by `bootlane backup` or `GET /api/v1/system/backup`.
    pub file: std::path::PathBuf,
    /// Data directory to restore into (the server must be stopped). Default: `data_dir`
    /// from `--config`, else `/var/lib/bootlane`.
    #[arg(long, env = "BOOTLANE_DATA_DIR")]
    pub data_dir: Option<std::path::PathBuf>,
    /// Configuration file to take `data_dir` from.
    #[arg(long, env = "BOOTLANE_CONFIG")]
    pub config: Option<std::path::PathBuf>,
    /// When the data directory already holds a database, move it aside to
    /// `db.before-restore-<unix time>` first instead of refusing.
    #[arg(long)]
    pub force: bool,
}

fn summary(m: &Manifest) -> String {
    format!(
        "{} records in {} trees (store format {}, Bootlane {}, taken {})",
        m.records,
        m.trees.len(),
        m.store_format,
        m.bootlane_version,
        m.created
    )
}

async fn backup_inner(args: &BackupArgs) -> anyhow::Result<String> {
    let data_dir = super::data_dir_of(args.data_dir.as_deref(), args.config.as_deref())?;
    let bytes = match Store::open(&data_dir) {
        Ok(store) if data_dir.join("db").exists() => backup(&store).await?,
        Err(e) if e.is_locked() => from_server(args).await?,
        Ok(_) => anyhow::bail!("no database in {} (wrong --data-dir?)", data_dir.display()),
        Err(e) => return Err(anyhow::Error::new(e).context(format!("opening the database in {}", data_dir.display()))),
    };
    // Check what is written as a restore would.
    let (m, _) = decode(&bytes).map_err(anyhow::Error::msg)?;
    write_file(&args.output, &bytes)?;
    Ok(format!("wrote {}: {}", args.output.display(), summary(&m)))
}

/// The running server's backup: log in, `GET /api/v1/system/backup`, log out.
async fn from_server(args: &BackupArgs) -> anyhow::Result<Vec<u8>> {
    let (api, s) = args
        .login
        .open(args.config.as_deref(), std::time::Duration::from_secs(120))
        .await?;
    let r = s.raw("GET", "/api/v1/system/backup", None).await;
    s.logout().await;
    let (code, body) = r?;
    if !code.is_success() {
        anyhow::bail!(
            "{api}/api/v1/system/backup answered {code}: {}",
            String::from_utf8_lossy(&body)
        );
    }
    Ok(body.to_vec())
}

async fn restore_inner(args: &RestoreArgs) -> anyhow::Result<String> {
    let data_dir = super::data_dir_of(args.data_dir.as_deref(), args.config.as_deref())?;
    let bytes = std::fs::read(&args.file).map_err(|e| anyhow::anyhow!("cannot read {}: {e}", args.file.display()))?;
    // Everything is checked before the data directory is touched.
    decode(&bytes).map_err(anyhow::Error::msg)?;
    let mut moved = String::new();
    if STORE_PARTS.iter().any(|p| data_dir.join(p).exists()) {
        if !args.force {
            anyhow::bail!(
                "{} already holds a database; stop the server and run again with --force to move it aside, \
                 or give an empty --data-dir",
                data_dir.display()
            );
        }
        // Opening it proves the server is not running (it would hold the lock).
        match Store::open(&data_dir) {
            Err(e) if e.is_locked() => {
                anyhow::bail!("the server is running (it holds {}); stop it first", data_dir.display())
            }
            _ => {}
        }
        let now = time::OffsetDateTime::now_utc().unix_timestamp();
        let mut put = Vec::new();
        for part in STORE_PARTS.iter().filter(|p| data_dir.join(p).exists()) {
            let aside = data_dir.join(format!("{part}.before-restore-{now}"));
            std::fs::rename(data_dir.join(part), &aside)
                .map_err(|e| anyhow::anyhow!("cannot move {part}/ aside: {e}"))?;
            put.push(aside.display().to_string());
        }
        moved = format!("; the previous store is in {}", put.join(" and "));
    }
    let m = restore(&data_dir, &bytes).await?;
    Ok(format!("restored into {}: {}{moved}", data_dir.display(), summary(&m)))
}

/// Runs `bootlane backup`: from the data directory when the server is stopped, else
/// through the running server's API (log in as `--user`). Exit 0, or 1 with the reason.
pub fn backup_command(args: &BackupArgs) -> std::process::ExitCode {
    super::run_async(backup_inner(args))
}

/// Runs `bootlane restore`: checks the file, then writes it into the (stopped) data
/// directory. Exit 0, or 1 with the reason; a refused file changes nothing.
pub fn restore_command(args: &RestoreArgs) -> std::process::ExitCode {
    super::run_async(restore_inner(args))
}
