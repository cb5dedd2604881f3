//! Versioned documents: a profile's menu script, an answer template and a post-install
//! script each keep every version they had, and share here how that history is read
//! ([`history`], newest first) and compared ([`unified_diff`]). Each kind keeps its own
//! version record, since what a version holds and restores differs (a profile's menu,
//! a template's format, a script's interpreter and variables), and implements
//! [`Revision`] for it; a rollback restores a version's fields through the owning
//! service's write path, which stores the result as a new version. No state.

use super::{Entity, Result, Table};

/// A stored version of a document.
pub trait Revision: Entity {
    /// Id of the document this is a version of.
    fn document(&self) -> u64;
    /// Where it sorts among the document's versions, oldest lowest: its version number
    /// (1, 2, ...), or its record id where versions are known by id.
    fn ordinal(&self) -> u64;
}

/// Every version of `document` in `table`, newest first.
///
/// # Errors
/// Store errors.
pub fn history<R: Revision>(table: &Table<R>, document: u64) -> Result<Vec<R>> {
    let mut v: Vec<R> = table.list()?.into_iter().filter(|r| r.document() == document).collect();
    v.sort_by_key(|r| std::cmp::Reverse(r.ordinal()));
    Ok(v)
}

/// The unified diff (three lines of context) from `old`, labelled `old_label` on the
/// `---` line, to `new`, labelled `new_label` on the `+++` line; empty when the two are
/// identical. Line-based, computed with the `similar` crate.
pub fn unified_diff(old: &str, new: &str, old_label: &str, new_label: &str) -> String {
    similar::TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header(old_label, new_label)
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identical_texts_have_an_empty_diff_and_a_change_is_labelled() {
        assert_eq!(unified_diff("a\nb\n", "a\nb\n", "version 1", "current"), "");
        let d = unified_diff("a\nb\n", "a\nc\n", "version 1", "current");
        assert!(d.starts_with("--- version 1\n+++ current\n@@"), "{d}");
        assert!(d.contains("-b\n+c\n"), "{d}");
    }
}
