//! The `bootlane` command line ([`Cli`]) and its subcommands besides `serve`: `config
//! check` and `config show`; `user list|add|passwd|delete` on the data directory while the
//! server is stopped (so a lost admin password is recoverable), else through its API;
//! `status` (asks a running server's public `GET /api/v1/status`); `audit verify` (checks
//! the audit log's hash chain from the files of the data directory: it changes nothing,
//! so it runs with the server running or stopped, and needs only read access); and, in
//! the submodules, `backup`/`restore`, `store migrate`, `update` and the hidden
//! `generate`. Each subcommand is a function returning what it prints and its exit
//! status, so it is tested without spawning the binary; `main.rs` only dispatches. The
//! modules below the command line never import it. Holds no global state.

use std::{
    io::BufRead,
    path::{Path, PathBuf},
    process::ExitCode,
};

use anyhow::{bail, Context};
use clap::{Args, Parser, Subcommand};

use bootlane_core::settings::{Group, Layer};

use crate::{
    config::Config,
    dhcp::settings::{ArchMapSettings, DhcpLayers, Subnets4, Subnets6},
    dns::service::DnsSettings,
    logging::{LoggingConfig, LoggingSettings},
    settings::{netboot_layer, GeneralSettings, NetbootSettings},
    store::Store,
    tftp::control::TftpSettings,
};

pub mod backup;
pub mod doctor;
pub mod packaging;
pub mod store;
pub mod update;

/// `bootlane` command line.
#[derive(Debug, Parser)]
#[command(
    name = "bootlane",
    version,
    about = "All-in-one network boot (PXE) server with a built-in DNS server"
)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the server (DNS, REST API and the other services) until SIGINT/SIGTERM.
    Serve(crate::config::ServeArgs),
    /// Check the configuration file, or show the effective configuration.
    #[command(subcommand)]
    Config(ConfigCommand),
    /// Manage the users: in the data directory while the server is stopped, else through
    /// its API.
    User(UserArgs),
    /// Ask the running server's `GET /api/v1/status` and print it (exit 1 if unreachable).
    Status(StatusArgs),
    /// Check the audit log: `audit verify` checks its hash chain in the data directory.
    Audit(AuditArgs),
    /// Write a consistent backup of the store (from the data directory when the server is
    /// stopped, else through its API as an admin) to a file.
    Backup(backup::BackupArgs),
    /// Run the boot doctor of the running server: rival DHCP servers, proxyDHCP, relays,
    /// boot files, TFTP, MTU, the HTTP boot URL, DNS, Secure Boot files, as an operator or an
    /// admin (exit 1 on an error).
    Doctor(doctor::DoctorArgs),
    /// Restore a backup into a data directory while the server is stopped.
    Restore(backup::RestoreArgs),
    /// Move a store between backends: `store migrate --from sled:DIR --to postgres:URL`.
    Store(store::StoreArgs),
    /// List verified update downloads, or install one over the binary.
    Update(update::UpdateArgs),
    /// Write the man pages or the shell completions (used by `cargo xtask package`; hidden).
    #[command(hide = true)]
    Generate(packaging::GenerateArgs),
}

/// `bootlane config ...` subcommands.
#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Load and validate a configuration file; print every problem with its key. Exit 1 on
    /// any problem, 0 (printing "ok") otherwise.
    Check {
        /// Path of the TOML configuration file to check. Without it the defaults are checked.
        #[arg(long, env = "BOOTLANE_CONFIG")]
        config: Option<PathBuf>,
    },
    /// Print the effective configuration file (the file plus every default) as TOML,
    /// secrets hidden. Settings changed later through the API live in the store and are
    /// not shown (the API's settings endpoints show them).
    Show {
        /// Path of the TOML configuration file. Without it the defaults are shown.
        #[arg(long, env = "BOOTLANE_CONFIG")]
        config: Option<PathBuf>,
        /// While the server runs (it holds the store): its API, asked for the settings in
        /// force. Default: `[api] listen` of `--config`, else `http://127.0.0.1:8080`.
        #[arg(long, env = "BOOTLANE_API")]
        api: Option<String>,
        /// User to log in as for that (its password is asked, or read with `--password-stdin`).
        #[arg(long = "as", default_value = "admin")]
        as_user: String,
        /// Read that password as the first line of standard input. Without it (or a
        /// token) and without a terminal, the running server's settings are not asked for.
        #[arg(long)]
        password_stdin: bool,
        /// An API token to use instead of a password (an admin's: the settings are
        /// admin-only).
        #[arg(long, env = "BOOTLANE_TOKEN", hide_env_values = true)]
        token: Option<String>,
    },
}

/// Prints a one-shot subcommand's outcome: its text on standard output (ending in a
/// newline; nothing for an empty text), exit 0; or the error with its causes on standard
/// error, exit 1.
pub(crate) fn finish(res: anyhow::Result<String>) -> ExitCode {
    match res {
        Ok(mut text) => {
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            print!("{text}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("bootlane: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Runs `f` to completion on a current-thread runtime and [`finish`]es with what it
/// returns. The shape of every one-shot subcommand that talks to a server or a store.
pub(crate) fn run_async<F: std::future::Future<Output = anyhow::Result<String>>>(f: F) -> ExitCode {
    match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => finish(rt.block_on(f)),
        Err(e) => finish(Err(anyhow::Error::new(e).context("cannot start the async runtime"))),
    }
}

/// The problems of the configuration file at `path` (the defaults when `None`), each a
/// one-line message naming the key; empty when the file loads and validates. An
/// unreadable file or invalid TOML (including an unknown key) is a single problem, since
/// nothing after it can be checked.
pub fn config_problems(path: Option<&Path>) -> Vec<String> {
    let mut cfg = match path {
        Some(p) => match Config::from_file(p) {
            Ok(c) => c,
            Err(e) => return vec![format!("{e:#}")],
        },
        None => Config::default(),
    };
    // Same precedence as `Config::load`: the old top-level `log` key wins.
    if let Some(l) = &cfg.log {
        cfg.logging.level.clone_from(l);
    }
    cfg.problems().iter().map(|e| format!("{e:#}")).collect()
}

/// The effective configuration of `path` (the defaults when `None`) as TOML, every key
/// present, secrets (`[metrics] bearer_token`) replaced by `"<hidden>"`.
///
/// # Errors
/// The file's first problem ([`config_problems`] lists them all), or a value TOML cannot
/// represent.
pub fn config_show(path: Option<&Path>) -> anyhow::Result<String> {
    if let Some(p) = config_problems(path).into_iter().next() {
        bail!("{p} (bootlane config check lists every problem)");
    }
    let mut cfg = match path {
        Some(p) => Config::from_file(p)?,
        None => Config::default(),
    };
    if cfg.metrics.bearer_token.is_some() {
        cfg.metrics.bearer_token = Some("<hidden>".into());
    }
    let body = toml::to_string_pretty(&cfg).context("rendering the configuration as TOML")?;
    Ok(format!(
        "# Effective configuration of {}: the file plus defaults, secrets hidden.\n{body}\n{}",
        path.map_or_else(|| "the defaults".to_string(), |p| p.display().to_string()),
        stored_overrides(&cfg)
    ))
}

/// What [`stored_overrides`] says when the running server holds the store.
const RUNNING_NOTE: &str = "# not read from the store: the running server holds it";

/// The running server's settings in force (`GET /api/v1/settings`, `GET /access/mode`) as
/// TOML comments, secrets hidden, asked as `as_user`; or a comment saying why not (no
/// password given and no terminal to ask on, login refused, server unreachable).
pub fn running_settings(
    config: Option<&Path>,
    api: Option<&str>,
    as_user: &str,
    token: Option<&str>,
    password_stdin: bool,
) -> String {
    use std::io::IsTerminal;
    if token.is_none() && !password_stdin && !std::io::stdin().is_terminal() {
        return "# (give --password-stdin, or run on a terminal, to ask the running server for them)\n".into();
    }
    let run = async {
        let api = api_url(api, config)?;
        let s = ApiSession::open(
            &api,
            token,
            as_user,
            || read_password_once(as_user, password_stdin),
            std::time::Duration::from_secs(10),
        )
        .await?;
        let settings = s.data("GET", "/api/v1/settings", None).await;
        let mode = s.data("GET", "/api/v1/access/mode", None).await;
        s.logout().await;
        let mut out = format!("# The running server's settings in force ({api}, GET /api/v1/settings):\n");
        if let serde_json::Value::Object(groups) = settings? {
            for (group, mut v) in groups {
                hide_secrets(&mut v);
                out.push_str(&format!("# settings.{group} = {v}\n"));
            }
        }
        if let Ok(m) = mode {
            out.push_str(&format!("# access.mode = {}\n", m["mode"]));
        }
        anyhow::Ok(out)
    };
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build();
    match rt.map_err(anyhow::Error::from).and_then(|rt| rt.block_on(run)) {
        Ok(out) => out,
        Err(e) => format!("# the running server's settings could not be read: {e:#}\n"),
    }
}

/// The store's trees holding settings changed through the API (they override the file).
pub const SETTINGS_TREES: &[&str] = &[
    "settings",
    "dhcp_settings",
    "tftp_settings",
    "boot_settings",
    "access",
    "services",
];

/// The settings stored through the API in `cfg.data_dir`, as TOML comments
/// (`# <tree>.<key> = <JSON>`), secrets hidden, each group that goes through the settings
/// layer followed by its effective values and where each came from
/// (`# <tree>.<key>.<name> = <JSON> (default|file|api)`); or a comment saying why they
/// cannot be read (no database yet, or the running server holds it).
pub fn stored_overrides(cfg: &Config) -> String {
    let data_dir = cfg.data_dir.as_path();
    let head = "# Settings changed through the API (stored; they override the file above):\n";
    if !data_dir.join("db").exists() {
        return format!("{head}# none: no database in {} yet\n", data_dir.display());
    }
    let store = match Store::open(data_dir) {
        Ok(s) => s,
        Err(e) if e.is_locked() => return format!("{head}{RUNNING_NOTE}\n"),
        Err(e) => return format!("{head}# not read: {e}\n"),
    };
    let mut out = head.to_string();
    let mut any = false;
    for tree in SETTINGS_TREES {
        let Ok(kv) = store.kv(tree) else { continue };
        for (key, mut v) in kv.iter::<serde_json::Value>().unwrap_or_default() {
            hide_secrets(&mut v);
            out.push_str(&format!("# {tree}.{key} = {v}\n"));
            any = true;
            if (*tree, key.as_str()) == (DnsSettings::TREE, DnsSettings::KEY) {
                match crate::app::dns_config(cfg).settings_layer(&store) {
                    Ok(layer) => out.push_str(&layer_sources(&format!("{tree}.{key}"), &layer)),
                    Err(e) => out.push_str(&format!("# {tree}.{key}: the values in effect cannot be read: {e}\n")),
                }
            }
            if (*tree, key.as_str()) == (GeneralSettings::TREE, GeneralSettings::KEY) {
                let of = |c: &Config| GeneralSettings {
                    server_name: c.server.name.clone(),
                    api_listen: c.api.listen.to_string(),
                    session_ttl_secs: c.api.session_ttl_secs,
                };
                match Layer::open(&store, of(&Config::default()), of(cfg)) {
                    Ok(layer) => out.push_str(&layer_sources(&format!("{tree}.{key}"), &layer)),
                    Err(e) => out.push_str(&format!("# {tree}.{key}: the values in effect cannot be read: {e}\n")),
                }
            }
            if (*tree, key.as_str()) == (NetbootSettings::TREE, NetbootSettings::KEY) {
                match netboot_layer(&store, &cfg.boot_root(), &cfg.data_dir, &cfg.boot.allowed_roots) {
                    Ok(layer) => out.push_str(&layer_sources(&format!("{tree}.{key}"), &layer)),
                    Err(e) => out.push_str(&format!("# {tree}.{key}: the values in effect cannot be read: {e}\n")),
                }
            }
            if (*tree, key.as_str()) == (LoggingSettings::TREE, LoggingSettings::KEY) {
                match Layer::open(&store, LoggingConfig::default().settings(), cfg.logging.settings()) {
                    Ok(layer) => out.push_str(&layer_sources(&format!("{tree}.{key}"), &layer)),
                    Err(e) => out.push_str(&format!("# {tree}.{key}: the values in effect cannot be read: {e}\n")),
                }
            }
            if *tree == Subnets4::TREE && [Subnets4::KEY, Subnets6::KEY, ArchMapSettings::KEY].contains(&key.as_str()) {
                let prefix = format!("{tree}.{key}");
                match DhcpLayers::open(&store, &cfg.dhcp) {
                    Ok(l) if key == Subnets4::KEY => out.push_str(&layer_sources(&prefix, &l.subnets)),
                    Ok(l) if key == Subnets6::KEY => out.push_str(&layer_sources(&prefix, &l.subnets6)),
                    Ok(l) => out.push_str(&layer_sources(&prefix, &l.arch_map)),
                    Err(e) => out.push_str(&format!("# {prefix}: the values in effect cannot be read: {e}\n")),
                }
            }
            if (*tree, key.as_str()) == (TftpSettings::TREE, TftpSettings::KEY) {
                match crate::tftp::control::settings_layer(&store, &cfg.tftp, cfg.tftp_enabled()) {
                    Ok(layer) => out.push_str(&layer_sources(&format!("{tree}.{key}"), &layer)),
                    Err(e) => out.push_str(&format!("# {tree}.{key}: the values in effect cannot be read: {e}\n")),
                }
            }
        }
    }
    if !any {
        out.push_str("# none\n");
    }
    out
}

/// A settings group's effective values, one TOML comment a key saying where the value came
/// from: `# <prefix>.<key> = <JSON> (default|file|api)`, secrets hidden.
fn layer_sources<G: Group>(prefix: &str, layer: &Layer<G>) -> String {
    let mut values = serde_json::to_value(layer.get()).unwrap_or_default();
    hide_secrets(&mut values);
    layer
        .sources()
        .into_iter()
        .map(|(k, source)| format!("# {prefix}.{k} = {} ({source})\n", values[&k]))
        .collect()
}

/// Replaces the values of keys that name a secret (password, token, secret, key hash).
fn hide_secrets(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, x) in m.iter_mut() {
                let k = k.to_ascii_lowercase();
                if ["password", "token", "secret", "hash"].iter().any(|s| k.contains(s)) && !x.is_null() {
                    *x = serde_json::Value::String("<hidden>".into());
                } else {
                    hide_secrets(x);
                }
            }
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(hide_secrets),
        _ => {}
    }
}

/// Runs `bootlane config ...`: `check` prints the problems to stderr (exit 1) or `ok`
/// (exit 0); `show` prints the effective TOML (exit 1 on a problem).
pub fn config(cmd: &ConfigCommand) -> ExitCode {
    match cmd {
        ConfigCommand::Show {
            config,
            api,
            as_user,
            password_stdin,
            token,
        } => match config_show(config.as_deref()) {
            // The file's settings are printed before the running server's are asked for
            // (which may prompt for a password).
            Ok(text) => {
                print!("{text}");
                if text.contains(RUNNING_NOTE) {
                    print!(
                        "{}",
                        running_settings(
                            config.as_deref(),
                            api.as_deref(),
                            as_user,
                            token.as_deref(),
                            *password_stdin,
                        )
                    );
                }
                ExitCode::SUCCESS
            }
            Err(e) => finish(Err(e)),
        },
        ConfigCommand::Check { config } => {
            let problems = config_problems(config.as_deref());
            let name = config
                .as_deref()
                .map_or_else(|| "the default configuration".to_string(), |p| p.display().to_string());
            if problems.is_empty() {
                println!("{name}: ok");
                ExitCode::SUCCESS
            } else {
                for p in &problems {
                    eprintln!("{name}: {p}");
                }
                eprintln!("{name}: {} problem(s)", problems.len());
                ExitCode::FAILURE
            }
        }
    }
}

/// Arguments of `bootlane user ...`.
#[derive(Debug, Args)]
pub struct UserArgs {
    /// Data directory holding the database. Default: `data_dir` from `--config`, else
    /// `/var/lib/bootlane`. While the server runs (it holds the database lock) the
    /// command goes through its API instead.
    #[arg(long, env = "BOOTLANE_DATA_DIR", global = true)]
    pub data_dir: Option<PathBuf>,
    /// Configuration file to take `data_dir` (and `[api] listen`) from when `--data-dir`
    /// (or `--api`) is not given.
    #[arg(long, env = "BOOTLANE_CONFIG", global = true)]
    pub config: Option<PathBuf>,
    /// API of the running server, used when it holds the database. Default: from
    /// `--config`'s `[api] listen`, else `http://127.0.0.1:8080`.
    #[arg(long, env = "BOOTLANE_API", global = true)]
    pub api: Option<String>,
    /// User to log in as when the server runs (its password is asked after the new one;
    /// with `--password-stdin` the new password is the first line and this one the second).
    #[arg(long = "as", default_value = "admin", global = true)]
    pub as_user: String,
    /// An API token (an admin's) to use instead of `--as` and a password when the server
    /// runs: sent as `Authorization: Bearer`.
    #[arg(long, env = "BOOTLANE_TOKEN", hide_env_values = true, global = true)]
    pub token: Option<String>,
    /// What to do.
    #[command(subcommand)]
    pub command: UserCommand,
}

/// `bootlane user ...` subcommands.
#[derive(Debug, Subcommand)]
pub enum UserCommand {
    /// List the users, their roles and when each was created.
    List,
    /// Add a user. The password is read from the terminal (asked twice, not echoed) or,
    /// when standard input is not a terminal, as its first line; never from the command line.
    Add {
        /// Login name: 1 to 64 letters, digits, '.', '_', '-' or '@'.
        username: String,
        /// Read the password as the first line of standard input even on a terminal.
        #[arg(long)]
        password_stdin: bool,
        /// The user's role: `viewer`, `operator` or `admin`.
        #[arg(long, default_value = "viewer", value_parser = parse_role)]
        role: Role,
    },
    /// Set a user's role (`viewer`, `operator` or `admin`); open sessions follow at once.
    /// The last admin cannot be made anything else.
    Role {
        /// Login name of an existing user.
        username: String,
        /// The new role.
        #[arg(value_parser = parse_role)]
        role: Role,
    },
    /// Set a user's password (ends that user's sessions). Read like `add`'s.
    Passwd {
        /// Login name of an existing user.
        username: String,
        /// Read the password as the first line of standard input even on a terminal.
        #[arg(long)]
        password_stdin: bool,
    },
    /// Delete a user and end their sessions. The last user, and the last admin, cannot be
    /// deleted.
    Delete {
        /// Login name of an existing user.
        username: String,
    },
    /// Turn off a user's second factor (TOTP), e.g. after a lost device: they sign in with
    /// the password alone until they enrol again (break-glass; works with the server
    /// stopped).
    TotpReset {
        /// Login name of an existing local user.
        username: String,
    },
}

use crate::api::roles::Role;
pub use crate::api::users::{add_user, delete_user, list_users, set_password, set_role};

fn parse_role(s: &str) -> Result<Role, String> {
    Role::parse(s)
}

/// Reads a password: from the terminal without echo, asked twice, unless `from_stdin`
/// or standard input is not a terminal, then its first line (without the line end).
fn read_password(username: &str, from_stdin: bool) -> anyhow::Result<String> {
    use std::io::IsTerminal;
    if !from_stdin && std::io::stdin().is_terminal() {
        let a = rpassword::prompt_password(format!("New password for {username}: "))?;
        let b = rpassword::prompt_password("Repeat it: ")?;
        if a != b {
            bail!("the two passwords differ");
        }
        return Ok(a);
    }
    stdin_line()
}

/// The next line of standard input without its line end (a password piped in).
fn stdin_line() -> anyhow::Result<String> {
    let mut line = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut line)
        .context("reading the password from standard input")?;
    Ok(line.trim_end_matches(['\r', '\n']).to_string())
}

/// The data directory: `data_dir`, else `data_dir` of the `config` file, else the default.
///
/// # Errors
/// An unreadable or invalid `config` file.
pub(crate) fn data_dir_of(data_dir: Option<&Path>, config: Option<&Path>) -> anyhow::Result<PathBuf> {
    Ok(match (data_dir, config) {
        (Some(d), _) => d.to_path_buf(),
        (None, Some(c)) => Config::from_file(c)?.data_dir,
        (None, None) => Config::default().data_dir,
    })
}

/// Reads an existing user's password once: from the terminal without echo, unless
/// `from_stdin` or standard input is not a terminal, then its first line.
///
/// # Errors
/// Terminal or standard-input errors.
pub(crate) fn read_password_once(username: &str, from_stdin: bool) -> anyhow::Result<String> {
    use std::io::IsTerminal;
    if !from_stdin && std::io::stdin().is_terminal() {
        return Ok(rpassword::prompt_password(format!("Password of {username}: "))?);
    }
    stdin_line()
}

/// Opens the store of `data_dir`; `None` when a running server holds it (the lock).
fn open_store(data_dir: &Path) -> anyhow::Result<Option<Store>> {
    if !data_dir.join("db").exists() {
        bail!(
            "no database in {} (wrong --data-dir? the server creates it on first start)",
            data_dir.display()
        );
    }
    match Store::open(data_dir) {
        Ok(s) => Ok(Some(s)),
        Err(e) if e.is_locked() => Ok(None),
        Err(e) => Err(anyhow::Error::new(e).context(format!("opening the database in {}", data_dir.display()))),
    }
}

/// How a command reaches the running server's API and as whom (`--api`, `--as`,
/// `--password-stdin`, `--token`), flattened into the commands that call it.
#[derive(Debug, clap::Args)]
pub struct ApiLogin {
    /// API of the running server. Default: from `--config`'s `[api] listen`, else
    /// `http://127.0.0.1:8080`.
    #[arg(long, env = "BOOTLANE_API")]
    pub api: Option<String>,
    /// User to log in as (the command's help names the role it needs).
    #[arg(long = "as", default_value = "admin")]
    pub as_user: String,
    /// Read that user's password as the first line of standard input even on a terminal.
    #[arg(long)]
    pub password_stdin: bool,
    /// An API token to use instead of `--as` and a password: sent as
    /// `Authorization: Bearer`.
    #[arg(long, env = "BOOTLANE_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
}

impl ApiLogin {
    /// The API URL (from `--api`, else `config`'s `[api] listen`) and a session on it:
    /// the token's, else `--as` logged in with the password asked (or read from stdin).
    ///
    /// # Errors
    /// As [`api_url`] and [`ApiSession::open`].
    pub(crate) async fn open(
        &self,
        config: Option<&Path>,
        timeout: std::time::Duration,
    ) -> anyhow::Result<(String, ApiSession)> {
        let api = api_url(self.api.as_deref(), config)?;
        let s = ApiSession::open(
            &api,
            self.token.as_deref(),
            &self.as_user,
            || read_password_once(&self.as_user, self.password_stdin),
            timeout,
        )
        .await?;
        Ok((api, s))
    }
}

/// A logged-in session with the running server's API (the admin commands that must not
/// stop it: `user` and `backup` while it holds the database).
pub(crate) struct ApiSession {
    api: String,
    /// The header that authenticates each call: the session cookie, or an API token.
    credential: (&'static str, String),
    timeout: std::time::Duration,
}

impl ApiSession {
    /// Logs in to `api` as `user`.
    ///
    /// # Errors
    /// The server unreachable, or the login refused (with the server's reason).
    pub(crate) async fn login(
        api: &str,
        user: &str,
        password: &str,
        timeout: std::time::Duration,
    ) -> anyhow::Result<Self> {
        let body = serde_json::json!({"username": user, "password": password}).to_string();
        let json = [("content-type", "application/json".to_string())];
        let (code, headers, answer) =
            http_request(api, "POST", "/api/v1/auth/login", &json, body.into_bytes(), timeout).await?;
        if !code.is_success() {
            bail!(
                "the server runs and holds the database; logging in to {api} as {user} failed ({code}): {}",
                error_text(&answer)
            );
        }
        let cookie = headers
            .get(hyper::header::SET_COOKIE)
            .and_then(|v| v.to_str().ok())
            .and_then(|c| c.split(';').next())
            .context("the login answer set no session cookie")?
            .to_string();
        Ok(Self {
            api: api.to_string(),
            credential: ("cookie", cookie),
            timeout,
        })
    }

    /// Uses the API token `token` (`--token` / `BOOTLANE_TOKEN`, sent as
    /// `Authorization: Bearer`) with `api`, checked once with `GET /api/v1/auth/session`.
    ///
    /// # Errors
    /// The server unreachable, or the token refused (unknown, revoked or expired).
    pub(crate) async fn with_token(api: &str, token: &str, timeout: std::time::Duration) -> anyhow::Result<Self> {
        let s = Self {
            api: api.to_string(),
            credential: ("authorization", format!("Bearer {}", token.trim())),
            timeout,
        };
        let v = s.data("GET", "/api/v1/auth/session", None).await?;
        if v["authenticated"] != true {
            bail!("{api} refused the API token (unknown, revoked or expired)");
        }
        Ok(s)
    }

    /// With `token`, [`ApiSession::with_token`]; else logs in as `user` with the password
    /// `password()` gives (asked only then).
    ///
    /// # Errors
    /// As those two, or reading the password.
    pub(crate) async fn open(
        api: &str,
        token: Option<&str>,
        user: &str,
        password: impl FnOnce() -> anyhow::Result<String>,
        timeout: std::time::Duration,
    ) -> anyhow::Result<Self> {
        match token {
            Some(t) => Self::with_token(api, t, timeout).await,
            None => Self::login(api, user, &password()?, timeout).await,
        }
    }

    /// `method path` with an optional JSON body; the status and the raw answer.
    ///
    /// # Errors
    /// The server unreachable.
    pub(crate) async fn raw(
        &self,
        method: &str,
        path: &str,
        body: Option<&serde_json::Value>,
    ) -> anyhow::Result<(hyper::StatusCode, hyper::body::Bytes)> {
        let mut headers = vec![self.credential.clone()];
        let bytes = match body {
            Some(b) => {
                headers.push(("content-type", "application/json".to_string()));
                b.to_string().into_bytes()
            }
            None => Vec::new(),
        };
        let (code, _, answer) = http_request(&self.api, method, path, &headers, bytes, self.timeout).await?;
        Ok((code, answer))
    }

    /// `method path` answering the envelope's `data`.
    ///
    /// # Errors
    /// The server unreachable, or an error answer (its `error` text).
    pub(crate) async fn data(
        &self,
        method: &str,
        path: &str,
        body: Option<&serde_json::Value>,
    ) -> anyhow::Result<serde_json::Value> {
        let (code, answer) = self.raw(method, path, body).await?;
        if !code.is_success() {
            bail!("{}", error_text(&answer));
        }
        let mut v: serde_json::Value = serde_json::from_slice(&answer).context("the server did not answer JSON")?;
        Ok(v.get_mut("data").map(serde_json::Value::take).unwrap_or_default())
    }

    /// Ends the session (errors ignored: it expires anyway); nothing for an API token.
    pub(crate) async fn logout(self) {
        if self.credential.0 == "cookie" {
            let _ = self.raw("POST", "/api/v1/auth/logout", None).await;
        }
    }
}

/// The `error` text of an API error envelope, else the body as text.
fn error_text(body: &[u8]) -> String {
    serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .and_then(|v| v.get("error").and_then(|e| e.as_str()).map(str::to_string))
        .unwrap_or_else(|| String::from_utf8_lossy(body).into_owned())
}

/// `bootlane user ...` through the running server's API (it holds the database).
async fn user_via_api(args: &UserArgs, password: &str) -> anyhow::Result<()> {
    let api = api_url(args.api.as_deref(), args.config.as_deref())?;
    let stdin = matches!(
        &args.command,
        UserCommand::Add {
            password_stdin: true,
            ..
        } | UserCommand::Passwd {
            password_stdin: true,
            ..
        }
    );
    let s = ApiSession::open(
        &api,
        args.token.as_deref(),
        &args.as_user,
        || read_password_once(&args.as_user, stdin),
        std::time::Duration::from_secs(30),
    )
    .await?;
    let enc = |u: &str| u.replace('@', "%40");
    let r = match &args.command {
        UserCommand::List => s.data("GET", "/api/v1/users", None).await.map(|v| {
            for u in v["users"].as_array().into_iter().flatten() {
                println!(
                    "{}\t{}\tcreated {}",
                    u["username"].as_str().unwrap_or("?"),
                    u["role"].as_str().unwrap_or("?"),
                    u["created_at"].as_str().unwrap_or("?")
                );
            }
        }),
        UserCommand::Add { username, role, .. } => s
            .data(
                "POST",
                "/api/v1/users",
                Some(&serde_json::json!({"username": username, "password": password, "role": role})),
            )
            .await
            .map(|_| println!("added user {username}, {role} (through {api})")),
        UserCommand::Role { username, role } => s
            .data(
                "PUT",
                &format!("/api/v1/users/{}/role", enc(username)),
                Some(&serde_json::json!({"role": role})),
            )
            .await
            .map(|_| println!("{username} is now {role} (through {api})")),
        UserCommand::Passwd { username, .. } => s
            .data(
                "PUT",
                &format!("/api/v1/users/{}/password", enc(username)),
                Some(&serde_json::json!({"password": password})),
            )
            .await
            .map(|v| {
                println!(
                    "password of {username} changed; {} session(s) ended",
                    v["sessions_ended"]
                )
            }),
        UserCommand::Delete { username } => s
            .data("DELETE", &format!("/api/v1/users/{}", enc(username)), None)
            .await
            .map(|_| println!("deleted user {username} (through {api})")),
        UserCommand::TotpReset { username } => s
            .data("DELETE", &format!("/api/v1/users/{}/totp", enc(username)), None)
            .await
            .map(|v| {
                println!(
                    "{} (through {api})",
                    totp_reset_text(username, v["was_enabled"] == true)
                )
            }),
    };
    s.logout().await;
    r
}

async fn user_inner(args: &UserArgs) -> anyhow::Result<()> {
    let data_dir = data_dir_of(args.data_dir.as_deref(), args.config.as_deref())?;
    // Read the password before opening the store, so a typo at the prompt holds no lock.
    let password = match &args.command {
        UserCommand::Add {
            username,
            password_stdin,
            ..
        }
        | UserCommand::Passwd {
            username,
            password_stdin,
        } => Some(read_password(username, *password_stdin)?),
        _ => None,
    };
    let password = password.unwrap_or_default();
    let Some(store) = open_store(&data_dir)? else {
        return user_via_api(args, &password).await;
    };
    match &args.command {
        UserCommand::List => {
            for u in list_users(&store)? {
                let created = u
                    .created_at
                    .format(&time::format_description::well_known::Rfc3339)
                    .unwrap_or_default();
                println!("{}\t{}\tcreated {created}", u.username, u.role);
            }
        }
        UserCommand::Add { username, role, .. } => {
            add_user(&store, username, &password, *role).await?;
            println!("added user {username}, {role}");
        }
        UserCommand::Role { username, role } => {
            set_role(&store, username, *role).await?;
            println!("{username} is now {role}");
        }
        UserCommand::Passwd { username, .. } => {
            set_password(&store, username, &password).await?;
            println!("password of {username} changed; their sessions were ended");
        }
        UserCommand::Delete { username } => {
            delete_user(&store, username).await?;
            println!("deleted user {username}");
        }
        UserCommand::TotpReset { username } => {
            let was = crate::api::totp::reset(&store, username).await?;
            println!("{}", totp_reset_text(username, was));
        }
    }
    Ok(())
}

fn totp_reset_text(username: &str, was: bool) -> String {
    if was {
        format!("second factor of {username} turned off; they sign in with the password until they enrol again")
    } else {
        format!("{username} had no second factor on")
    }
}

/// Runs `bootlane user ...`: exit 0, or 1 with the error on stderr.
pub fn user(args: &UserArgs) -> ExitCode {
    run_async(async { user_inner(args).await.map(|()| String::new()) })
}

/// Arguments of `bootlane audit ...`.
#[derive(Debug, Args)]
pub struct AuditArgs {
    /// Data directory holding the audit log (`journal/audit_entries`), its anchor and
    /// key. Default: `data_dir` from `--config`, else `/var/lib/bootlane`.
    #[arg(long, env = "BOOTLANE_DATA_DIR", global = true)]
    pub data_dir: Option<PathBuf>,
    /// Configuration file to take `data_dir` from when `--data-dir` is not given.
    #[arg(long, env = "BOOTLANE_CONFIG", global = true)]
    pub config: Option<PathBuf>,
    /// What to do.
    #[command(subcommand)]
    pub command: AuditCommand,
}

/// `bootlane audit ...` subcommands.
#[derive(Debug, Subcommand)]
pub enum AuditCommand {
    /// Check the hash chain of the audit log (from the signed anchor of pruned entries,
    /// if any): prints `ok` with the count (exit 0), or the first entry whose chain breaks
    /// with the expected and found hashes (exit 1). Reads files only; the server may run.
    Verify {
        /// Print the result as JSON (the `data` of `GET /api/v1/audit-logs/verify`).
        #[arg(long)]
        json: bool,
    },
}

/// The human report of a verification.
pub fn format_verification(v: &crate::audit::Verification) -> String {
    let mut out = String::new();
    if let Some(a) = &v.anchor {
        out.push_str(&format!(
            "anchor: entries up to id {} pruned, last hash {}\n",
            a.id, a.hash
        ));
    }
    if v.unchained > 0 {
        out.push_str(&format!(
            "{} entries from before the chain existed (not covered)\n",
            v.unchained
        ));
    }
    match &v.first_break {
        None => out.push_str(&format!("ok: {} chained entries verified\n", v.entries)),
        Some(b) => out.push_str(&format!(
            "BROKEN at entry {}: expected prev_hash {}, found {} ({} entries verified before it)\n",
            b.id,
            b.expected,
            b.found.as_deref().unwrap_or("none"),
            v.entries
        )),
    }
    out
}

/// Runs `bootlane audit ...`: exit 0 when the chain holds, 1 when it breaks or cannot be
/// read (the reason on stderr).
pub fn audit(args: &AuditArgs) -> ExitCode {
    let AuditCommand::Verify { json } = &args.command;
    let res =
        data_dir_of(args.data_dir.as_deref(), args.config.as_deref()).and_then(|d| crate::audit::verify_data_dir(&d));
    match res {
        Ok(v) => {
            if *json {
                println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
            } else {
                print!("{}", format_verification(&v));
            }
            if v.ok() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(e) => {
            eprintln!("bootlane: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Arguments of `bootlane status`.
#[derive(Debug, Args)]
pub struct StatusArgs {
    /// Base URL of the running server's API (`http://` or `https://`; for a private or
    /// self-signed certificate set `BOOTLANE_CACERT` to its PEM root, e.g.
    /// `<data_dir>/tls/cert.pem`). Default: from `--config`'s `[api] listen` (an
    /// unspecified address becomes loopback), else `http://127.0.0.1:8080`.
    #[arg(long, env = "BOOTLANE_API")]
    pub api: Option<String>,
    /// Configuration file to take `[api] listen` from when `--api` is not given.
    #[arg(long, env = "BOOTLANE_CONFIG")]
    pub config: Option<PathBuf>,
    /// Seconds to wait for the answer before reporting the server unreachable.
    #[arg(long, default_value_t = 5)]
    pub timeout_secs: u64,
}

/// Fetches `<api>/api/v1/status` and returns its `data` object.
///
/// # Errors
/// A URL that is not `http://host[:port]`, no connection, a timeout, a non-200 answer
/// or a body that is not the API's success envelope; each message names the URL.
pub async fn fetch_status(api: &str, timeout: std::time::Duration) -> anyhow::Result<serde_json::Value> {
    let url = format!("{}/api/v1/status", api.trim_end_matches('/'));
    let (code, _, body) = http_request(api, "GET", "/api/v1/status", &[], Vec::new(), timeout).await?;
    if !code.is_success() {
        bail!("{url} answered {code}: {}", String::from_utf8_lossy(&body));
    }
    let mut v: serde_json::Value =
        serde_json::from_slice(&body).with_context(|| format!("{url} did not answer JSON"))?;
    let ok = v.get("success") == Some(&serde_json::Value::Bool(true));
    match v.get_mut("data") {
        Some(d) if ok => Ok(d.take()),
        _ => bail!("{url} did not answer a success envelope: {v}"),
    }
}

/// One HTTP/1.1 request to the server at `api` (`http://host[:port]`): `method path` with
/// `headers` and `body`; answers the status, headers and whole body. Used by `status`
/// and by `backup` while the server runs.
///
/// # Errors
/// A URL that is not `http://host[:port]`, no connection, or no answer within `timeout`;
/// each message names the server.
pub(crate) async fn http_request(
    api: &str,
    method: &str,
    path: &str,
    headers: &[(&str, String)],
    body: Vec<u8>,
    timeout: std::time::Duration,
) -> anyhow::Result<(hyper::StatusCode, hyper::HeaderMap, hyper::body::Bytes)> {
    use http_body_util::BodyExt;
    let uri: hyper::Uri = api.parse().with_context(|| format!("{api:?} is not a URL"))?;
    let https = match uri.scheme_str() {
        Some("http") => false,
        Some("https") => true,
        _ => bail!("--api {api:?} must start with http:// or https://"),
    };
    let host = uri.host().context("the --api URL has no host")?.to_string();
    let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
    let fetch = async {
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        let host_port = format!("{bare}:{port}");
        let tcp = tokio::net::TcpStream::connect(&host_port)
            .await
            .with_context(|| format!("cannot connect to {host_port}"))?;
        let mut sender = if https {
            let tls = tls_connector()?
                .connect(rustls::pki_types::ServerName::try_from(bare.to_owned())?, tcp)
                .await
                .with_context(|| format!("TLS with {host_port} (set BOOTLANE_CACERT to a PEM root for a private or self-signed certificate)"))?;
            let (sender, conn) = hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tls)).await?;
            tokio::spawn(conn);
            sender
        } else {
            let (sender, conn) = hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tcp)).await?;
            tokio::spawn(conn);
            sender
        };
        let mut req = hyper::Request::builder()
            .method(method)
            .uri(path)
            .header(hyper::header::HOST, format!("{host}:{port}"));
        for (k, v) in headers {
            req = req.header(*k, v);
        }
        let req = req.body(http_body_util::Full::new(hyper::body::Bytes::from(body)))?;
        let resp = sender.send_request(req).await?;
        let code = resp.status();
        let headers = resp.headers().clone();
        let body = resp.into_body().collect().await?.to_bytes();
        anyhow::Ok((code, headers, body))
    };
    tokio::time::timeout(timeout, fetch)
        .await
        .map_err(|_| anyhow::anyhow!("no answer within {} s", timeout.as_secs()))
        .and_then(|r| r)
        .with_context(|| format!("server at {api} unreachable"))
}

/// The TLS client of [`http_request`] for `https://` URLs: the usual public roots plus
/// every certificate in the PEM file named by `BOOTLANE_CACERT` (e.g. the self-signed
/// `<data_dir>/tls/cert.pem`, or a private CA).
///
/// # Errors
/// An unreadable or certificate-less `BOOTLANE_CACERT` file.
fn tls_connector() -> anyhow::Result<tokio_rustls::TlsConnector> {
    use rustls::pki_types::{pem::PemObject, CertificateDer};
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    if let Some(path) = std::env::var_os("BOOTLANE_CACERT") {
        let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&path)
            .and_then(|i| i.collect::<Result<_, _>>())
            .map_err(|e| anyhow::anyhow!("BOOTLANE_CACERT {}: {e}", Path::new(&path).display()))?;
        anyhow::ensure!(!certs.is_empty(), "BOOTLANE_CACERT holds no certificate");
        for c in certs {
            roots.add(c)?;
        }
    }
    let cfg =
        rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()?
            .with_root_certificates(roots)
            .with_no_client_auth();
    Ok(tokio_rustls::TlsConnector::from(std::sync::Arc::new(cfg)))
}

/// Renders a status `data` object compactly: the version and uptime line, the DNS and XDP
/// line, then every other field as `key: value` (so fields added to the status later show
/// without a change here).
pub fn format_status(api: &str, v: &serde_json::Value) -> String {
    let s = |k: &str| v.get(k).and_then(|x| x.as_str()).unwrap_or("?").to_string();
    let mut out = format!(
        "bootlane {} at {api}: {}, up {} s\n",
        s("version"),
        s("status"),
        v.get("uptime_secs").and_then(serde_json::Value::as_u64).unwrap_or(0)
    );
    let dns = match v.get("dns_running").and_then(serde_json::Value::as_bool) {
        Some(true) => "running",
        Some(false) => "NOT running",
        None => "?",
    };
    let xdp = match (
        v.get("dns_xdp_active").and_then(serde_json::Value::as_bool),
        v.get("dns_xdp_reason").and_then(|x| x.as_str()),
    ) {
        (Some(true), _) => "XDP fast path active".to_string(),
        (_, Some(why)) => format!("XDP fast path off: {why}"),
        _ => "XDP fast path off".to_string(),
    };
    out.push_str(&format!("dns: {dns}; {xdp}\n"));
    const SHOWN: [&str; 6] = [
        "version",
        "status",
        "uptime_secs",
        "dns_running",
        "dns_xdp_active",
        "dns_xdp_reason",
    ];
    if let Some(obj) = v.as_object() {
        for (k, x) in obj.iter().filter(|(k, _)| !SHOWN.contains(&k.as_str())) {
            out.push_str(&format!("{k}: {x}\n"));
        }
    }
    out
}

/// The API base URL `bootlane status` asks: `--api`, else `http://<[api] listen>` of
/// `--config` (an unspecified address asked on loopback), else `http://127.0.0.1:8080`.
///
/// # Errors
/// An unreadable or invalid `--config` file.
pub fn status_url(args: &StatusArgs) -> anyhow::Result<String> {
    api_url(args.api.as_deref(), args.config.as_deref())
}

/// `api`, else `http://<[api] listen>` of `config` (unspecified address: loopback), else
/// `http://127.0.0.1:8080`.
///
/// # Errors
/// An unreadable or invalid `config` file.
pub(crate) fn api_url(api: Option<&str>, config: Option<&Path>) -> anyhow::Result<String> {
    if let Some(a) = api {
        return Ok(a.to_string());
    }
    let api_cfg = match config {
        Some(c) => Config::from_file(c)?.api,
        None => Config::default().api,
    };
    let mut listen = api_cfg.listen;
    // Over TLS the certificate names `localhost` (self-signed default), not 127.0.0.1.
    if api_cfg.tls != crate::config::TlsMode::Off && (listen.ip().is_unspecified() || listen.ip().is_loopback()) {
        return Ok(format!("https://localhost:{}", listen.port()));
    }
    if listen.ip().is_unspecified() {
        listen.set_ip(match listen {
            std::net::SocketAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
            std::net::SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
        });
    }
    Ok(format!("http://{listen}"))
}

/// Runs `bootlane status`: prints the server's status (exit 0), or why it could not be
/// asked (exit 1).
pub fn status(args: &StatusArgs) -> ExitCode {
    run_async(async {
        let url = status_url(args)?;
        let v = fetch_status(&url, std::time::Duration::from_secs(args.timeout_secs)).await?;
        Ok(format_status(&url, &v))
    })
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use argon2::{Argon2, PasswordHash, PasswordVerifier};

    use super::{
        add_user, config_problems, config_show, delete_user, fetch_status, format_status, list_users, open_store,
        set_password,
    };
    use crate::{
        api::auth::{Session, User, SESSIONS_KV, USERS_KV},
        store::Store,
    };

    fn password_ok(store: &Store, name: &str, pw: &str) -> bool {
        let u: User = store.kv(USERS_KV).unwrap().get(name).unwrap().unwrap();
        Argon2::default()
            .verify_password(pw.as_bytes(), &PasswordHash::new(&u.password_hash).unwrap())
            .is_ok()
    }

    #[tokio::test]
    async fn users_are_added_listed_repassworded_and_deleted() {
        let store = Store::temporary();
        add_user(&store, "admin", "old-Secret-Jw3nR8qT", crate::api::roles::Role::Admin)
            .await
            .unwrap();
        add_user(&store, "ops", "ops-Secret-Lh5tW9zB", crate::api::roles::Role::Admin)
            .await
            .unwrap();
        assert!(
            add_user(&store, "ops", "ops-Secret-Qd4rM7yN", crate::api::roles::Role::Admin)
                .await
                .is_err(),
            "taken name"
        );
        assert!(
            add_user(
                &store,
                "bad name",
                "ops-Secret-Qd4rM7yN",
                crate::api::roles::Role::Admin
            )
            .await
            .is_err(),
            "bad name"
        );
        assert!(
            add_user(&store, "carol", "", crate::api::roles::Role::Admin)
                .await
                .is_err(),
            "empty password"
        );
        let weak = add_user(&store, "carol", "carol1234567", crate::api::roles::Role::Admin)
            .await
            .unwrap_err()
            .to_string();
        assert!(
            weak.contains("too easy to guess"),
            "the CLI's path applies the policy: {weak}"
        );
        let names: Vec<String> = list_users(&store).unwrap().into_iter().map(|u| u.username).collect();
        assert_eq!(names, ["admin", "ops"]);

        // A session of admin's and one of ops'; passwd ends only admin's.
        let sessions = store.kv(SESSIONS_KV).unwrap();
        let exp = time::OffsetDateTime::now_utc() + time::Duration::hours(1);
        for (key, who) in [("s1", "admin"), ("s2", "ops")] {
            let s = Session {
                username: who.into(),
                expires_at: exp,
                role: None,
                source: Default::default(),
                id_token: None,
            };
            sessions.put(key, &s).await.unwrap();
        }
        set_password(&store, "admin", "new-Secret-Pc6vK2mX").await.unwrap();
        assert!(password_ok(&store, "admin", "new-Secret-Pc6vK2mX"));
        assert!(!password_ok(&store, "admin", "old-Secret-Jw3nR8qT"));
        assert!(sessions.get::<Session>("s1").unwrap().is_none());
        assert!(sessions.get::<Session>("s2").unwrap().is_some());
        assert!(set_password(&store, "nobody", "x").await.is_err());

        delete_user(&store, "ops").await.unwrap();
        assert!(sessions.get::<Session>("s2").unwrap().is_none());
        assert!(delete_user(&store, "ops").await.is_err(), "already gone");
        let err = delete_user(&store, "admin").await.unwrap_err().to_string();
        assert!(err.contains("last user"), "{err}");
        assert_eq!(list_users(&store).unwrap().len(), 1);
    }

    #[test]
    fn a_store_held_by_a_running_server_is_reported_as_such() {
        let dir = tempfile::tempdir().unwrap();
        let missing = open_store(dir.path()).err().unwrap().to_string();
        assert!(missing.contains("no database"), "{missing}");
        let _server = Store::open(dir.path()).unwrap();
        assert!(
            open_store(dir.path()).unwrap().is_none(),
            "a held database means: go through the API"
        );
    }

    fn check(text: &str) -> Vec<String> {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(text.as_bytes()).unwrap();
        config_problems(Some(f.path()))
    }

    #[test]
    fn a_good_file_and_the_defaults_have_no_problem() {
        assert!(config_problems(None).is_empty());
        assert_eq!(
            check("[server]\nname = \"pxe\"\n[api]\nlisten = \"127.0.0.1:8081\"\n"),
            Vec::<String>::new()
        );
    }

    #[test]
    fn every_failing_section_is_reported_with_its_key() {
        let p = check("[server]\nname = \"not a label\"\n[api]\nsession_ttl_secs = 0\n");
        // The bad name also makes the derived local domain `not a label.local` invalid.
        assert_eq!(p.len(), 3, "{p:?}");
        assert!(p[0].contains("[server] name"), "{p:?}");
        assert!(p[1].contains("[dns] local_domain"), "{p:?}");
        assert!(p[2].contains("[api] session_ttl_secs"), "{p:?}");
    }

    #[test]
    fn unknown_keys_bad_toml_and_missing_files_are_one_problem() {
        let p = check("[api]\nbogus = 1\n");
        assert_eq!(p.len(), 1);
        assert!(p[0].contains("bogus"), "{p:?}");
        assert_eq!(check("[api\n").len(), 1);
        let p = config_problems(Some(std::path::Path::new("/nonexistent/bootlane.toml")));
        assert!(p[0].contains("/nonexistent/bootlane.toml"), "{p:?}");
    }

    #[tokio::test]
    async fn status_is_fetched_from_a_server_and_unreachable_is_an_error() {
        let app = axum::Router::new().route(
            "/api/v1/status",
            axum::routing::get(|| async {
                axum::Json(serde_json::json!({"success": true, "data": {
                    "status": "ok", "version": "9.9.9", "uptime_secs": 42, "dns_running": true,
                    "dns_xdp_active": false, "dns_xdp_reason": "no CAP_BPF", "leases": 3}}))
            }),
        );
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(l, app).await });
        let api = format!("http://{addr}/");
        let v = fetch_status(&api, std::time::Duration::from_secs(5)).await.unwrap();
        let text = format_status(&api, &v);
        assert!(
            text.starts_with(&format!("bootlane 9.9.9 at {api}: ok, up 42 s\n")),
            "{text}"
        );
        assert!(text.contains("dns: running; XDP fast path off: no CAP_BPF\n"), "{text}");
        assert!(text.contains("leases: 3\n"), "{text}");

        // A port nobody listens on (bound, then released).
        let free = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let err = format!(
            "{:#}",
            fetch_status(&format!("http://{free}"), std::time::Duration::from_secs(5))
                .await
                .unwrap_err()
        );
        assert!(err.contains("unreachable"), "{err}");
        assert!(fetch_status("https://x", std::time::Duration::from_secs(1))
            .await
            .is_err());
    }

    #[test]
    fn show_prints_a_file_that_loads_back_the_same_with_the_secret_hidden() {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(
            b"[server]\nname = \"pxe\"\n[metrics]\nbearer_token = \"s3cret\"\n[dhcp.arch_map]\n7 = \"snponly.efi\"\n",
        )
        .unwrap();
        let text = config_show(Some(f.path())).unwrap();
        assert!(!text.contains("s3cret"), "{text}");
        assert!(text.contains("bearer_token = \"<hidden>\""), "{text}");
        let back: crate::config::Config = toml::from_str(&text).unwrap();
        assert_eq!(back.server.name, "pxe");
        assert_eq!(back.api.listen, crate::config::Config::default().api.listen);
        assert!(text.contains("snponly.efi"), "{text}");
        assert!(config_show(None).unwrap().contains("[api]"));
        let mut bad = tempfile::NamedTempFile::new().unwrap();
        bad.write_all(b"[api]\nsession_ttl_secs = 0\n").unwrap();
        assert!(config_show(Some(bad.path())).is_err());
    }

    #[tokio::test]
    async fn show_lists_the_settings_stored_through_the_api_with_secrets_hidden() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = crate::config::Config {
            data_dir: dir.path().to_path_buf(),
            dns: crate::dns::config::DnsConfig {
                upstream: "9.9.9.9:53".into(),
                ..Default::default()
            },
            dhcp: serde_json::from_value(serde_json::json!({"subnets": [{"mode": "server", "interface": "br0",
                "cidr": "10.77.0.0/24", "range_start": "10.77.0.100", "range_end": "10.77.0.199",
                "lease_time_secs": 600}]}))
            .unwrap(),
            ..Default::default()
        };
        assert!(super::stored_overrides(&cfg).contains("no database"));
        {
            let store = Store::open(dir.path()).unwrap();
            let kv = store.kv("settings").unwrap();
            kv.put("dns", &serde_json::json!({"port": 5353, "tsig": {"secret": "k3y"}}))
                .await
                .unwrap();
            kv.put("general", &serde_json::json!({"session_ttl_secs": 600}))
                .await
                .unwrap();
            kv.put("logging", &serde_json::json!({"level": "warn"})).await.unwrap();
            // As older versions store it: whole, the base URL set through the API.
            kv.put(
                "netboot",
                &serde_json::json!({"boot_root": cfg.boot_root().display().to_string(),
                    "http_base_url": "http://boot.lab", "ipxe_script_path": crate::boot::netboot::IPXE_SCRIPT_PATH}),
            )
            .await
            .unwrap();
            store
                .kv("tftp_settings")
                .unwrap()
                .put("overrides", &serde_json::json!({"retries": 7, "port": null}))
                .await
                .unwrap();
            // As older versions store them: per subnet, null for "not overridden"; the map whole.
            let dhcp = store.kv("dhcp_settings").unwrap();
            dhcp.put(
                "subnet_overrides",
                &serde_json::json!({"10.77.0.0/24": {"router": "10.77.0.1", "dns": null}}),
            )
            .await
            .unwrap();
            dhcp.put("arch_map", &serde_json::json!({"7": "snponly.efi"}))
                .await
                .unwrap();
            store
                .kv("access")
                .unwrap()
                .put("mode", &serde_json::json!("whitelist"))
                .await
                .unwrap();
            let text = super::stored_overrides(&cfg);
            assert!(text.contains(super::RUNNING_NOTE), "{text}");
        }
        let text = super::stored_overrides(&cfg);
        // The DNS group's values in effect, each with its source.
        assert!(text.contains("# settings.dns.port = 5353 (api)\n"), "{text}");
        assert!(
            text.contains("# settings.dns.upstream = \"9.9.9.9:53\" (file)\n"),
            "{text}"
        );
        assert!(text.contains("# settings.dns.enabled = true (default)\n"), "{text}");
        assert!(text.contains("# tftp_settings.overrides.retries = 7 (api)\n"), "{text}");
        assert!(
            text.contains("# settings.general.session_ttl_secs = 600 (api)\n"),
            "{text}"
        );
        assert!(
            text.contains("# settings.general.server_name = \"bootlane\" (default)\n"),
            "{text}"
        );
        assert!(
            text.contains("# tftp_settings.overrides.port = 69 (default)\n"),
            "{text}"
        );
        assert!(
            text.contains("# settings.dns = {\"port\":5353,\"tsig\":{\"secret\":\"<hidden>\"}}"),
            "{text}"
        );
        assert!(
            text.contains("# settings.netboot.http_base_url = \"http://boot.lab\" (api)\n"),
            "{text}"
        );
        assert!(text.contains("# settings.logging.level = \"warn\" (api)\n"), "{text}");
        assert!(
            text.contains("# settings.logging.rotation = \"daily\" (default)\n"),
            "{text}"
        );
        assert!(
            text.contains(&format!(
                "# settings.netboot.boot_root = \"{}\" (default)\n",
                cfg.boot_root().display()
            )),
            "{text}"
        );
        assert!(text.contains("# access.mode = \"whitelist\""), "{text}");
        // DHCP: per subnet and setting, and the architecture map whole.
        for line in [
            "# dhcp_settings.subnet_overrides.10.77.0.0/24.router = \"10.77.0.1\" (api)\n",
            "# dhcp_settings.subnet_overrides.10.77.0.0/24.lease_time_secs = 600 (file)\n",
            "# dhcp_settings.subnet_overrides.10.77.0.0/24.interface = \"br0\" (file)\n",
            "# dhcp_settings.subnet_overrides.10.77.0.0/24.dns = null (default)\n",
            "# dhcp_settings.arch_map.arch_map = {\"7\":\"snponly.efi\"} (api)\n",
        ] {
            assert!(text.contains(line), "{line} in {text}");
        }
        assert!(!text.contains("k3y"), "{text}");
    }
}
