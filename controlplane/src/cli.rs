//! The admin subcommands of the `bootlane` binary besides `serve` (issue 15 "Admin CLI"):
//! `config check`. Each subcommand is a function returning what it prints and its exit
//! status, so it is tested without spawning the binary; `main.rs` only dispatches.
//! Holds no global state.

use std::{path::Path, process::ExitCode};

use crate::config::{Config, ConfigCommand};

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

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::config_problems;

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
