//! What the Debian package ships besides the binary, generated from the binary's own clap
//! definitions so it can never drift from `--help` (`clap_mangen` generates the man pages
//! and `clap_complete` the completions at package time): the hidden
//! `bootlane generate man|completions --out DIR` subcommand, run by `cargo xtask package`.
//! Man pages: `bootlane.1` and one page per visible subcommand (`bootlane-serve.1`,
//! `bootlane-config-check.1`, ...); completions: bash (`bootlane.bash`), zsh (`_bootlane`)
//! and fish (`bootlane.fish`). The default configuration file of the package
//! (`controlplane/debian/bootlane.toml`) is hand-written with an explanation per key; a unit
//! test here keeps it equal to the defaults. Holds no global state.

use std::{
    path::{Path, PathBuf},
    process::ExitCode,
};

use anyhow::Context;
use clap::{Args, CommandFactory, ValueEnum};
use clap_complete::Shell;

use super::Cli;

/// Arguments of the hidden `bootlane generate` subcommand.
#[derive(Debug, Args)]
pub struct GenerateArgs {
    /// What to generate: `man` (roff man pages, section 1) or `completions` (bash, zsh, fish).
    pub what: Generated,
    /// Directory to write into (created when missing; existing files of the same names
    /// are replaced).
    #[arg(long)]
    pub out: PathBuf,
}

/// The kinds of generated file (`bootlane generate <WHAT>`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Generated {
    /// Man pages: `bootlane.1` and `bootlane-<subcommand>[-<subcommand>].1`.
    Man,
    /// Shell completions: `bootlane.bash`, `_bootlane` (zsh), `bootlane.fish`.
    Completions,
}

/// The shells completions are generated for (the ones Debian has vendor directories for).
pub const SHELLS: [Shell; 3] = [Shell::Bash, Shell::Zsh, Shell::Fish];

/// Writes the man pages of `bootlane` and of every visible subcommand (hidden ones such
/// as `generate` are left out) into `out`; returns the files written, sorted.
///
/// # Errors
/// Creating `out` or writing a page fails (the path is in the error).
pub fn man_pages(out: &Path) -> anyhow::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    clap_mangen::generate_to(Cli::command(), out)
        .with_context(|| format!("writing man pages into {}", out.display()))?;
    list(out, |name| name.ends_with(".1"))
}

/// Writes the completion scripts for [`SHELLS`] into `out`; returns the files written.
///
/// # Errors
/// Creating `out` or writing a script fails (the path is in the error).
pub fn completions(out: &Path) -> anyhow::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let mut cmd = visible(Cli::command());
    SHELLS
        .iter()
        .map(|shell| {
            clap_complete::generate_to(*shell, &mut cmd, "bootlane", out)
                .with_context(|| format!("writing the {shell} completions into {}", out.display()))
        })
        .collect()
}

/// `cmd` without its hidden subcommands: clap_complete, unlike clap_mangen, would offer
/// them. The top level of `bootlane` has only subcommands (and `--help`/`--version`).
fn visible(cmd: clap::Command) -> clap::Command {
    let subcommands: Vec<clap::Command> = cmd.get_subcommands().filter(|s| !s.is_hide_set()).cloned().collect();
    let mut out = clap::Command::new("bootlane")
        .version(env!("CARGO_PKG_VERSION"))
        .subcommand_required(true)
        .subcommands(subcommands)
        .args(cmd.get_arguments().filter(|a| !a.is_hide_set()).cloned());
    if let Some(a) = cmd.get_about() {
        out = out.about(a.clone());
    }
    out
}

fn list(dir: &Path, keep: impl Fn(&str) -> bool) -> anyhow::Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("listing {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(&keep))
        .collect();
    files.sort();
    Ok(files)
}

/// `bootlane generate`: writes the files and prints one path per line; exit 1 (with the
/// error on stderr) when writing fails.
pub fn generate(args: &GenerateArgs) -> ExitCode {
    let written = match args.what {
        Generated::Man => man_pages(&args.out),
        Generated::Completions => completions(&args.out),
    };
    super::finish(written.map(|files| files.iter().map(|f| format!("{}\n", f.display())).collect()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    fn names(files: &[PathBuf]) -> Vec<String> {
        files
            .iter()
            .map(|f| f.file_name().unwrap().to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn man_pages_cover_every_visible_subcommand_and_document_flags() {
        let dir = tempfile::tempdir().unwrap();
        let files = man_pages(dir.path()).unwrap();
        let names = names(&files);
        for page in [
            "bootlane.1",
            "bootlane-serve.1",
            "bootlane-config.1",
            "bootlane-config-check.1",
            "bootlane-config-show.1",
            "bootlane-user.1",
            "bootlane-status.1",
        ] {
            assert!(names.iter().any(|n| n == page), "{page} missing from {names:?}");
        }
        assert!(
            !names.iter().any(|n| n.contains("generate")),
            "hidden subcommand documented: {names:?}"
        );
        let serve = std::fs::read_to_string(dir.path().join("bootlane-serve.1")).unwrap();
        assert!(serve.starts_with(".ie"), "roff: {}", &serve[..40]);
        for flag in ["config", "data\\-dir", "api\\-listen", "dns\\-port", "log"] {
            assert!(serve.contains(&format!("\\-\\-{flag}")), "--{flag} missing:\n{serve}");
        }
        assert!(serve.contains("BOOTLANE_CONFIG"), "environment variables listed");
    }

    #[test]
    fn completions_for_bash_zsh_fish_know_the_subcommands() {
        let dir = tempfile::tempdir().unwrap();
        let files = completions(dir.path()).unwrap();
        assert_eq!(names(&files), ["bootlane.bash", "_bootlane", "bootlane.fish"]);
        for f in &files {
            let text = std::fs::read_to_string(f).unwrap();
            for word in ["serve", "config", "status", "--data-dir"] {
                let word = if f.ends_with("bootlane.fish") {
                    word.trim_start_matches("--")
                } else {
                    word
                };
                assert!(text.contains(word), "{word} missing from {}", f.display());
            }
            assert!(
                !text.contains("generate"),
                "hidden subcommand completed in {}",
                f.display()
            );
        }
    }

    /// The package's `/etc/bootlane/bootlane.toml`: every line is a comment, so as shipped
    /// it configures nothing; every `#key = value` and `#[section]` line (no space after
    /// the `#`; explanations have one), uncommented, must parse (unknown keys are errors)
    /// and give exactly the defaults; and every key of the defaults appears (so a new key
    /// cannot be forgotten).
    #[test]
    fn packaged_config_file_lists_every_key_with_its_default() {
        let shipped = include_str!("../../debian/bootlane.toml");
        let as_shipped: Config = toml::from_str(shipped).expect("shipped file parses as is");
        assert!(as_shipped.problems().is_empty());
        let mut uncommented = String::new();
        for line in shipped.lines() {
            assert!(line.is_empty() || line.starts_with('#'), "not a comment: {line:?}");
            if let Some(entry) = line
                .strip_prefix('#')
                .filter(|r| !r.is_empty() && !r.starts_with([' ', '#']))
            {
                uncommented.push_str(entry);
            }
            uncommented.push('\n');
        }
        let parsed: Config = toml::from_str(&uncommented)
            .unwrap_or_else(|e| panic!("uncommented file does not parse: {e}\n{uncommented}"));
        assert!(parsed.problems().is_empty());
        let render = |c: &Config| toml::to_string_pretty(c).unwrap();
        assert_eq!(
            render(&parsed),
            render(&Config::default()),
            "uncommented file == defaults"
        );
        // Completeness: every `key =` of the rendered defaults is in the file.
        let listed: Vec<&str> = uncommented
            .lines()
            .filter_map(|l| l.split_once(" = ").map(|(k, _)| k))
            .collect();
        let mut section = String::new();
        for line in render(&Config::default()).lines() {
            if line.starts_with('[') {
                section = line.to_string();
            } else if let Some((key, _)) = line.split_once(" = ") {
                assert!(listed.contains(&key), "{section} {key} is not in debian/bootlane.toml");
            }
        }
    }
}
