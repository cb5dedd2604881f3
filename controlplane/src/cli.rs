//! The admin subcommands of the `bootlane` binary besides `serve` (issue 15 "Admin CLI"):
//! `config check`, and `user list|add|passwd|delete` on the data directory while the
//! server is stopped (so a lost admin password is recoverable). Each subcommand is a function returning what it prints and its exit
//! status, so it is tested without spawning the binary; `main.rs` only dispatches.
//! Holds no global state.

use std::{
    io::BufRead,
    path::{Path, PathBuf},
    process::ExitCode,
};

use anyhow::{bail, Context};
use clap::{Args, Subcommand};
use time::OffsetDateTime;

use crate::{
    api::auth::{hash_password, Session, User, SESSIONS_KV, USERS_KV},
    config::{Config, ConfigCommand},
    store::Store,
};

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

/// Runs `bootlane config ...`: prints the problems to stderr (exit 1) or `ok` (exit 0).
pub fn config(cmd: &ConfigCommand) -> ExitCode {
    match cmd {
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
    /// `/var/lib/bootlane`. The server must be stopped (it holds the database lock).
    #[arg(long, env = "BOOTLANE_DATA_DIR", global = true)]
    pub data_dir: Option<PathBuf>,
    /// Configuration file to take `data_dir` from when `--data-dir` is not given.
    #[arg(long, env = "BOOTLANE_CONFIG", global = true)]
    pub config: Option<PathBuf>,
    /// What to do.
    #[command(subcommand)]
    pub command: UserCommand,
}

/// `bootlane user ...` subcommands.
#[derive(Debug, Subcommand)]
pub enum UserCommand {
    /// List the users and when each was created.
    List,
    /// Add a user. The password is read from the terminal (asked twice, not echoed) or,
    /// when standard input is not a terminal, as its first line; never from the command line.
    Add {
        /// Login name: 1 to 64 letters, digits, '.', '_', '-' or '@'.
        username: String,
        /// Read the password as the first line of standard input even on a terminal.
        #[arg(long)]
        password_stdin: bool,
    },
    /// Set a user's password (ends that user's sessions). Read like `add`'s.
    Passwd {
        /// Login name of an existing user.
        username: String,
        /// Read the password as the first line of standard input even on a terminal.
        #[arg(long)]
        password_stdin: bool,
    },
    /// Delete a user and end their sessions. The last user cannot be deleted.
    Delete {
        /// Login name of an existing user.
        username: String,
    },
}

fn check_username(name: &str) -> anyhow::Result<()> {
    if name.is_empty()
        || name.len() > 64
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '@'))
    {
        bail!("user name {name:?} must be 1 to 64 letters, digits, '.', '_', '-' or '@'");
    }
    Ok(())
}

fn check_password(pw: &str) -> anyhow::Result<()> {
    if pw.is_empty() {
        bail!("the password must not be empty");
    }
    Ok(())
}

/// Every user as `(name, created_at)`, in name order.
///
/// # Errors
/// Store errors.
pub fn list_users(store: &Store) -> anyhow::Result<Vec<(String, OffsetDateTime)>> {
    Ok(store
        .kv(USERS_KV)?
        .iter::<User>()?
        .into_iter()
        .map(|(name, u)| (name, u.created_at))
        .collect())
}

/// Creates `username` with `password` (argon2id-hashed, as `Auth` expects).
///
/// # Errors
/// A bad or taken user name, an empty password, store errors.
pub async fn add_user(store: &Store, username: &str, password: &str) -> anyhow::Result<()> {
    check_username(username)?;
    check_password(password)?;
    let users = store.kv(USERS_KV)?;
    if users.get::<User>(username)?.is_some() {
        bail!("user {username:?} already exists; use 'bootlane user passwd {username}' to change its password");
    }
    let user = User {
        username: username.into(),
        password_hash: hash_password(password)?,
        created_at: OffsetDateTime::now_utc(),
    };
    users.put(username, &user).await?;
    Ok(())
}

/// Replaces the password of `username` and ends their sessions.
///
/// # Errors
/// An unknown user, an empty password, store errors.
pub async fn set_password(store: &Store, username: &str, password: &str) -> anyhow::Result<()> {
    check_password(password)?;
    let users = store.kv(USERS_KV)?;
    let Some(mut user) = users.get::<User>(username)? else {
        bail!("no user {username:?}; 'bootlane user list' shows the users");
    };
    user.password_hash = hash_password(password)?;
    users.put(username, &user).await?;
    end_sessions(store, username).await
}

/// Deletes `username` and ends their sessions; refuses to delete the last user (nobody
/// could log in any more).
///
/// # Errors
/// An unknown user, the last user, store errors.
pub async fn delete_user(store: &Store, username: &str) -> anyhow::Result<()> {
    let users = store.kv(USERS_KV)?;
    if users.get::<User>(username)?.is_none() {
        bail!("no user {username:?}; 'bootlane user list' shows the users");
    }
    if users.iter::<User>()?.len() <= 1 {
        bail!("refusing to delete {username:?}, the last user: add another user first");
    }
    users.remove(username).await?;
    end_sessions(store, username).await
}

async fn end_sessions(store: &Store, username: &str) -> anyhow::Result<()> {
    let sessions = store.kv(SESSIONS_KV)?;
    for (key, s) in sessions.iter::<Session>()? {
        if s.username == username {
            sessions.remove(&key).await?;
        }
    }
    Ok(())
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
    let mut line = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut line)
        .context("reading the password from standard input")?;
    Ok(line.trim_end_matches(['\r', '\n']).to_string())
}

/// Opens the store of `data_dir`, explaining a lock held by a running server.
fn open_store(data_dir: &Path) -> anyhow::Result<Store> {
    if !data_dir.join("db").exists() {
        bail!(
            "no database in {} (wrong --data-dir? the server creates it on first start)",
            data_dir.display()
        );
    }
    Store::open(data_dir).map_err(|e| {
        if e.is_locked() {
            anyhow::anyhow!(
                "the database in {} is in use: bootlane serve is running. Stop it first \
                 (systemctl stop bootlane), or change users through the API / web UI while it runs",
                data_dir.display()
            )
        } else {
            anyhow::Error::new(e).context(format!("opening the database in {}", data_dir.display()))
        }
    })
}

async fn user_inner(args: &UserArgs) -> anyhow::Result<()> {
    let data_dir = match (&args.data_dir, &args.config) {
        (Some(d), _) => d.clone(),
        (None, Some(c)) => Config::from_file(c)?.data_dir,
        (None, None) => Config::default().data_dir,
    };
    // Read the password before opening the store, so a typo at the prompt holds no lock.
    let password = match &args.command {
        UserCommand::Add {
            username,
            password_stdin,
        }
        | UserCommand::Passwd {
            username,
            password_stdin,
        } => Some(read_password(username, *password_stdin)?),
        _ => None,
    };
    let store = open_store(&data_dir)?;
    let password = password.unwrap_or_default();
    match &args.command {
        UserCommand::List => {
            for (name, created) in list_users(&store)? {
                let created = created
                    .format(&time::format_description::well_known::Rfc3339)
                    .unwrap_or_default();
                println!("{name}\tcreated {created}");
            }
        }
        UserCommand::Add { username, .. } => {
            add_user(&store, username, &password).await?;
            println!("added user {username}");
        }
        UserCommand::Passwd { username, .. } => {
            set_password(&store, username, &password).await?;
            println!("password of {username} changed; their sessions were ended");
        }
        UserCommand::Delete { username } => {
            delete_user(&store, username).await?;
            println!("deleted user {username}");
        }
    }
    Ok(())
}

/// Runs `bootlane user ...`: exit 0, or 1 with the error on stderr.
pub fn user(args: &UserArgs) -> ExitCode {
    let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("bootlane: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match rt.block_on(user_inner(args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bootlane: {e:#}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use argon2::{Argon2, PasswordHash, PasswordVerifier};

    use super::{add_user, config_problems, delete_user, list_users, open_store, set_password};
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
        add_user(&store, "admin", "old-secret").await.unwrap();
        add_user(&store, "ops", "x").await.unwrap();
        assert!(add_user(&store, "ops", "y").await.is_err(), "taken name");
        assert!(add_user(&store, "bad name", "y").await.is_err(), "bad name");
        assert!(add_user(&store, "carol", "").await.is_err(), "empty password");
        let names: Vec<String> = list_users(&store).unwrap().into_iter().map(|(n, _)| n).collect();
        assert_eq!(names, ["admin", "ops"]);

        // A session of admin's and one of ops'; passwd ends only admin's.
        let sessions = store.kv(SESSIONS_KV).unwrap();
        let exp = time::OffsetDateTime::now_utc() + time::Duration::hours(1);
        for (key, who) in [("s1", "admin"), ("s2", "ops")] {
            let s = Session {
                username: who.into(),
                expires_at: exp,
            };
            sessions.put(key, &s).await.unwrap();
        }
        set_password(&store, "admin", "new-secret").await.unwrap();
        assert!(password_ok(&store, "admin", "new-secret"));
        assert!(!password_ok(&store, "admin", "old-secret"));
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
        let err = format!("{:#}", open_store(dir.path()).err().unwrap());
        assert!(err.contains("bootlane serve is running"), "{err}");
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
}
