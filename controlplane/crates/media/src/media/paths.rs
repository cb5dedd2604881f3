//! Path safety of the file API (nothing leaves the boot root): [`resolve`] is the one place
//! a client-supplied path becomes a path on disk. Every endpoint that takes a path
//! (`/files`, `/files/upload`, `/bootloader/check-file`) goes through it.
//!
//! Rules, each refusal a [`PathError::Invalid`] (400) naming the problem:
//! - paths are relative to the boot root, `/`-separated, already decoded (query values and
//!   multipart fields are decoded by the HTTP layer); the empty path is the root itself;
//!   one trailing `/` is allowed;
//! - refused: a leading `/` (absolute), `..` and `.` components, empty components (`a//b`),
//!   NUL and other control characters, backslashes (`\` is a separator elsewhere), the
//!   percent sequences `%2e`, `%2f`, `%5c` and `%00` in any case (a second decoding
//!   somewhere would turn them into `.`, `/`, `\` or NUL: a double-encoded `..%2f` must not
//!   pass), U+FFFD (the replacement for bytes that were not UTF-8: names that are not valid
//!   UTF-8 cannot be named), components longer than 255 bytes and paths longer than 4096;
//! - names and places [`bootlane_boot::boot::guard::is_protected`] refuses (keys, the admin
//!   password, a data directory outside its `boot/`) are refused, even under a root set
//!   by hand to such a place;
//! - the result must lie under the canonical root once symlinks are followed
//!   ([`PathError::Outside`], also a 400): with [`Follow::All`] the whole path is
//!   canonicalised (reading: a symlink inside the root to a file inside it is fine), with
//!   [`Follow::Parent`] only the parent is and the last component is kept as is (writing
//!   and deleting act on the link itself, never on what it points to).
//!
//! No state.

use std::path::{Path, PathBuf};

/// Longest path accepted, in bytes.
pub const MAX_PATH: usize = 4096;
/// Longest component accepted, in bytes (the usual `NAME_MAX`).
pub const MAX_NAME: usize = 255;

/// Why a path was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PathError {
    /// The string breaks a rule (see the module docs); 400.
    #[error("path {path:?} is refused: {reason}")]
    Invalid {
        /// The path as given.
        path: String,
        /// The rule it breaks.
        reason: String,
    },
    /// It resolves through a symlink to somewhere outside the boot root; 400.
    #[error("path {0:?} is refused: it leads out of the boot root through a symlink")]
    Outside(String),
    /// It (or, for [`Follow::Parent`], its parent directory) does not exist; 404.
    #[error("no such file or directory {0:?} under the boot root")]
    NotFound(String),
}

/// How much of the path [`resolve`] follows through symlinks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Follow {
    /// Canonicalise the whole path; it must exist (reading files, listing directories).
    All,
    /// Canonicalise the parent only; the last component need not exist and is not
    /// followed (uploading, deleting).
    Parent,
}

/// Resolves client-supplied `input` (relative to `root`, see the module docs) to a path
/// under the canonical `root`. The empty path (or `/`-less `""`) is the canonical root.
///
/// # Errors
/// [`PathError`]: a rule broken, a symlink leading out, or a missing path/parent.
pub fn resolve(root: &Path, input: &str, follow: Follow) -> Result<PathBuf, PathError> {
    let bad = |reason: &str| PathError::Invalid {
        path: input.chars().take(200).collect(),
        reason: reason.to_string(),
    };
    if input.len() > MAX_PATH {
        return Err(bad("it is longer than 4096 bytes"));
    }
    if input.contains('\0') {
        return Err(bad("it contains a NUL byte"));
    }
    if input.chars().any(char::is_control) {
        return Err(bad("it contains a control character"));
    }
    if input.contains('\\') {
        return Err(bad("it contains a backslash; separate directories with '/'"));
    }
    if input.contains('\u{FFFD}') {
        return Err(bad(
            "it contains U+FFFD, the replacement for bytes that are not UTF-8; names must be valid UTF-8",
        ));
    }
    let lower = input.to_ascii_lowercase();
    if ["%2e", "%2f", "%5c", "%00"].iter().any(|s| lower.contains(s)) {
        return Err(bad(
            "it contains a percent-encoded '.', '/', '\\' or NUL (%2e, %2f, %5c, %00); send the path decoded once",
        ));
    }
    if input.starts_with('/') {
        return Err(bad("it is absolute; paths are relative to the boot root"));
    }
    let trimmed = input.strip_suffix('/').unwrap_or(input);
    let parts: Vec<&str> = if trimmed.is_empty() {
        Vec::new()
    } else {
        trimmed.split('/').collect()
    };
    for p in &parts {
        match *p {
            "" => return Err(bad("it has an empty component ('//')")),
            "." => return Err(bad("it has a '.' component")),
            ".." => return Err(bad("it has a '..' component")),
            p if p.len() > MAX_NAME => return Err(bad("a component is longer than 255 bytes")),
            _ => {}
        }
    }
    let not_found = || PathError::NotFound(input.to_string());
    let canon_root = root.canonicalize().map_err(|_| not_found())?;
    let Some((last, dirs)) = parts.split_last() else {
        return Ok(canon_root);
    };
    let inside = |p: PathBuf| {
        if !p.starts_with(&canon_root) {
            Err(PathError::Outside(input.to_string()))
        } else if bootlane_boot::boot::guard::is_protected(&p) {
            Err(bad(
                "it names a key, a password or a file of Bootlane's data directory, which are never served",
            ))
        } else {
            Ok(p)
        }
    };
    let mut joined = canon_root.clone();
    joined.extend(dirs);
    match follow {
        Follow::All => {
            joined.push(last);
            inside(joined.canonicalize().map_err(|_| not_found())?)
        }
        Follow::Parent => {
            let parent = inside(joined.canonicalize().map_err(|_| not_found())?)?;
            inside(parent.join(last))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree() -> (tempfile::TempDir, PathBuf) {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("boot");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::write(root.join("a.bin"), b"a").unwrap();
        std::fs::write(tmp.path().join("secret"), b"s").unwrap();
        std::fs::create_dir(tmp.path().join("outdir")).unwrap();
        std::os::unix::fs::symlink(tmp.path().join("secret"), root.join("leak")).unwrap();
        std::os::unix::fs::symlink(tmp.path().join("outdir"), root.join("outlink")).unwrap();
        std::os::unix::fs::symlink("../..", root.join("sub/up")).unwrap();
        std::os::unix::fs::symlink(root.join("a.bin"), root.join("inner")).unwrap();
        (tmp, root)
    }

    #[test]
    fn hostile_inputs_are_refused_naming_the_problem() {
        let (_tmp, root) = tree();
        let cases: &[(&str, &str)] = &[
            ("..", "'..'"),
            ("../secret", "'..'"),
            ("sub/../../secret", "'..'"),
            ("sub/..", "'..'"),
            ("/etc/passwd", "absolute"),
            ("/", "absolute"),
            ("a.bin\0.txt", "NUL"),
            ("a\nb", "control"),
            ("%2e%2e/secret", "percent"),
            ("%2E%2E%2Fsecret", "percent"),
            ("..%2fsecret", "percent"),
            ("sub%2F..", "percent"),
            ("a%00", "percent"),
            ("..%5csecret", "percent"),
            ("..\\secret", "backslash"),
            ("sub\\a", "backslash"),
            ("./a.bin", "'.'"),
            ("sub//a", "empty"),
            ("bad\u{FFFD}name", "UTF-8"),
        ];
        for (input, problem) in cases {
            for follow in [Follow::All, Follow::Parent] {
                match resolve(&root, input, follow) {
                    Err(e @ PathError::Invalid { .. }) => {
                        assert!(e.to_string().contains(problem), "{input:?}: {e} should name {problem}")
                    }
                    other => panic!("{input:?} ({follow:?}) must be refused, got {other:?}"),
                }
            }
        }
        let long = "a".repeat(256);
        assert!(resolve(&root, &long, Follow::Parent).is_err());
        assert!(resolve(&root, &"a/".repeat(2100), Follow::Parent).is_err());
    }

    #[test]
    fn symlinks_out_of_the_root_are_refused() {
        let (_tmp, root) = tree();
        for p in ["leak", "outlink", "outlink/x", "sub/up", "sub/up/secret"] {
            let r = resolve(&root, p, Follow::All);
            assert!(
                matches!(r, Err(PathError::Outside(_)) | Err(PathError::NotFound(_))),
                "{p}: {r:?}"
            );
        }
        assert!(matches!(
            resolve(&root, "leak", Follow::All),
            Err(PathError::Outside(_))
        ));
        // Writing into a directory reached through a symlink that leaves the root.
        assert!(matches!(
            resolve(&root, "outlink/new.bin", Follow::Parent),
            Err(PathError::Outside(_))
        ));
        assert!(matches!(
            resolve(&root, "sub/up/new.bin", Follow::Parent),
            Err(PathError::Outside(_))
        ));
        // The link itself is inside the root: deleting it is allowed, and does not follow.
        let canon = root.canonicalize().unwrap();
        assert_eq!(resolve(&root, "leak", Follow::Parent).unwrap(), canon.join("leak"));
    }

    #[test]
    fn plain_paths_resolve_under_the_root() {
        let (_tmp, root) = tree();
        let canon = root.canonicalize().unwrap();
        assert_eq!(resolve(&root, "", Follow::All).unwrap(), canon);
        assert_eq!(resolve(&root, "", Follow::Parent).unwrap(), canon);
        assert_eq!(resolve(&root, "a.bin", Follow::All).unwrap(), canon.join("a.bin"));
        assert_eq!(resolve(&root, "sub/", Follow::All).unwrap(), canon.join("sub"));
        assert_eq!(resolve(&root, "inner", Follow::All).unwrap(), canon.join("a.bin"));
        assert_eq!(
            resolve(&root, "sub/new.iso", Follow::Parent).unwrap(),
            canon.join("sub/new.iso")
        );
        // Odd but harmless names pass: a single '%', dots inside names, spaces, unicode.
        assert!(resolve(&root, "100%25 done..iso", Follow::Parent).is_ok());
        assert!(resolve(&root, "...", Follow::Parent).is_ok());
        assert!(resolve(&root, "ümlaut ü.efi", Follow::Parent).is_ok());
        assert!(matches!(
            resolve(&root, "missing", Follow::All),
            Err(PathError::NotFound(_))
        ));
        assert!(matches!(
            resolve(&root, "nodir/x", Follow::Parent),
            Err(PathError::NotFound(_))
        ));
    }
}
