//! The book's link check for `cargo xtask docs`: every relative link and `#anchor` in the
//! HTML that mdBook rendered must lead to an existing file and, for an anchor, to an element
//! with that `id` in the target page; every relative link of `README.md` must lead to an
//! existing file (and its anchor, for a chapter, to an id of the rendered chapter).
//!
//! mdBook writes plain, double-quoted attributes, so the pages are scanned for
//! `href="..."`, `src="..."` and `id="..."` rather than parsed with a full HTML parser.
//! Links with a scheme (`https:`, `mailto:`, ...), protocol-relative ones (`//host`) and
//! site-absolute ones (`/path`, only used by mdBook's own 404 page) are not checked: the
//! first two leave the book, and the third depends on where the book is served.

use std::{
    collections::{BTreeMap, BTreeSet},
    path::{Component, Path, PathBuf},
};

use anyhow::{Context, Result};

/// One link that does not resolve: the page (or `README.md`) it is in, the link as
/// written, and why.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Broken {
    pub(crate) page: String,
    pub(crate) link: String,
    pub(crate) reason: String,
}

impl std::fmt::Display for Broken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {} ({})", self.page, self.link, self.reason)
    }
}

/// The values of every `name="..."` attribute in `html`, in order. Entities in the values
/// are left as written except `&amp;`, the only one mdBook writes into URLs and ids.
fn attributes(html: &str, name: &str) -> Vec<String> {
    let needle = format!(" {name}=\"");
    let mut out = Vec::new();
    let mut rest = html;
    while let Some(i) = rest.find(&needle) {
        rest = &rest[i + needle.len()..];
        let Some(end) = rest.find('"') else { break };
        out.push(rest[..end].replace("&amp;", "&"));
        rest = &rest[end..];
    }
    out
}

/// Decodes `%XX` escapes in a link's path (mdBook escapes spaces and non-ASCII bytes).
fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() && b[i + 1].is_ascii_hexdigit() && b[i + 2].is_ascii_hexdigit() {
            let hex = |c: u8| (c as char).to_digit(16).unwrap_or(0) as u8;
            out.push(hex(b[i + 1]) * 16 + hex(b[i + 2]));
            i += 3;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Whether a link leaves the checked tree: it has a scheme, is protocol-relative or
/// site-absolute.
fn is_external(link: &str) -> bool {
    if link.starts_with('/') {
        return true;
    }
    match link.find(':') {
        Some(colon) => {
            let scheme = &link[..colon];
            !scheme.is_empty()
                && scheme.chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
                && !link[..colon].contains('/')
        }
        None => false,
    }
}

/// `base` joined with the relative `rel`, `..` and `.` resolved lexically (the target need
/// not exist, and symlinks are not followed).
fn join_lexically(base: &Path, rel: &str) -> PathBuf {
    let mut out = PathBuf::new();
    for c in base.join(rel).components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// Every `.html` file under `dir`, recursively.
fn html_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).with_context(|| format!("listing {}", d.display()))? {
            let p = e?.path();
            if p.is_dir() {
                todo.push(p);
            } else if p.extension().is_some_and(|x| x == "html") {
                out.push(p);
            }
        }
    }
    out.sort();
    Ok(out)
}

/// The ids of every rendered page, keyed by its path.
fn ids_by_page(pages: &[PathBuf]) -> Result<BTreeMap<PathBuf, BTreeSet<String>>> {
    pages
        .iter()
        .map(|p| {
            let html = std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?;
            Ok((p.clone(), attributes(&html, "id").into_iter().collect()))
        })
        .collect()
}

/// Checks one link found in `from` (a file under `root`); `ids` are the rendered pages' ids.
fn check_link(
    from: &Path,
    link: &str,
    ids: &BTreeMap<PathBuf, BTreeSet<String>>,
    page_name: &str,
    out: &mut Vec<Broken>,
) {
    if link.is_empty() || is_external(link) {
        return;
    }
    let (path, anchor) = match link.split_once('#') {
        Some((p, a)) => (p, Some(a)),
        None => (link, None),
    };
    let path = path.split('?').next().unwrap_or_default();
    let target = if path.is_empty() {
        from.to_path_buf()
    } else {
        join_lexically(from.parent().unwrap_or(Path::new("")), &percent_decode(path))
    };
    let broken = |reason: String| Broken {
        page: page_name.to_string(),
        link: link.to_string(),
        reason,
    };
    if !target.exists() {
        out.push(broken(format!("no file {}", target.display())));
        return;
    }
    let Some(anchor) = anchor.filter(|a| !a.is_empty()) else {
        return;
    };
    match ids.get(&target) {
        Some(page_ids) if page_ids.contains(&percent_decode(anchor)) => {}
        Some(_) => out.push(broken(format!("no id \"{anchor}\" in {}", target.display()))),
        // An anchor into a file that is not a rendered page (an image, a script).
        None => out.push(broken(format!("{} is not a page with ids", target.display()))),
    }
}

/// Every broken relative link or anchor in the rendered book under `book`.
///
/// # Errors
/// An unreadable directory or page.
pub(crate) fn check_book(book: &Path) -> Result<Vec<Broken>> {
    let pages = html_files(book)?;
    let ids = ids_by_page(&pages)?;
    let mut out = Vec::new();
    for page in &pages {
        let html = std::fs::read_to_string(page)?;
        let name = page.strip_prefix(book).unwrap_or(page).display().to_string();
        for link in attributes(&html, "href").into_iter().chain(attributes(&html, "src")) {
            check_link(page, &link, &ids, &name, &mut out);
        }
    }
    Ok(out)
}

/// The link targets of Markdown text: `[text](target)` and `![alt](target)` outside
/// fenced code blocks and inline code.
fn markdown_links(md: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_fence = false;
    for line in md.lines() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            continue;
        }
        // Drop inline code spans, whose brackets are not links.
        let text: String = line.split('`').step_by(2).collect::<Vec<_>>().join(" ");
        let mut rest = text.as_str();
        while let Some(i) = rest.find("](") {
            rest = &rest[i + 2..];
            if let Some(end) = rest.find(')') {
                let target = rest[..end].split_whitespace().next().unwrap_or_default();
                out.push(target.to_string());
                rest = &rest[end..];
            }
        }
    }
    out
}

/// Every broken relative link of the Markdown file `readme` (under the repository `root`).
/// A link to a chapter source `docs/src/<name>.md` with an anchor is checked against the
/// ids of the rendered `book/<name>.html`.
///
/// # Errors
/// An unreadable README or book.
pub(crate) fn check_readme(root: &Path, readme: &Path, book: &Path) -> Result<Vec<Broken>> {
    let md = std::fs::read_to_string(readme).with_context(|| format!("reading {}", readme.display()))?;
    let ids = ids_by_page(&html_files(book)?)?;
    let name = readme.strip_prefix(root).unwrap_or(readme).display().to_string();
    let mut out = Vec::new();
    for link in markdown_links(&md) {
        if link.is_empty() || is_external(&link) {
            continue;
        }
        let (path, anchor) = link.split_once('#').unwrap_or((link.as_str(), ""));
        let target = join_lexically(readme.parent().unwrap_or(root), &percent_decode(path));
        if !target.exists() {
            out.push(Broken {
                page: name.clone(),
                link: link.clone(),
                reason: format!("no file {}", target.display()),
            });
            continue;
        }
        if anchor.is_empty() {
            continue;
        }
        let chapter = target
            .strip_prefix(root.join("docs/src"))
            .ok()
            .map(|rel| book.join(rel.with_extension("html")));
        match chapter.as_ref().and_then(|c| ids.get(c)) {
            Some(page_ids) if page_ids.contains(anchor) => {}
            _ => out.push(Broken {
                page: name.clone(),
                link: link.clone(),
                reason: format!("no id \"{anchor}\" in the rendered chapter"),
            }),
        }
    }
    Ok(out)
}

/// Lines of product text that cite a tracker issue (`issue 12`, `issues 3 and 4`,
/// `(issue #7)`): the README and the book speak about the product, not about the work that
/// made it. Answers `(line number, line)` for each.
pub(crate) fn issue_citations(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let lower = line.to_ascii_lowercase();
        let cites = lower.match_indices("issue").any(|(i, _)| {
            let rest = lower[i + "issue".len()..].trim_start_matches('s');
            let rest = rest.trim_start().trim_start_matches('#');
            rest.starts_with(|c: char| c.is_ascii_digit())
        });
        if cites {
            out.push((n + 1, line.to_string()));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("xtask-links-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("sub")).unwrap();
        d
    }

    #[test]
    fn good_links_pass_and_each_kind_of_broken_link_is_reported() {
        let d = scratch("book");
        std::fs::write(
            d.join("a.html"),
            r#"<h2 id="top">T</h2><a href="sub/b.html#here">b</a>"#,
        )
        .unwrap();
        std::fs::write(
            d.join("sub/b.html"),
            r##"<p id="here"></p><a href="../a.html#top">a</a><a href="#here">self</a>
            <a href="https://example.org/x">out</a><a href="mailto:a@b">m</a><img src="../a.html">"##,
        )
        .unwrap();
        assert_eq!(check_book(&d).unwrap(), vec![]);

        std::fs::write(
            d.join("c.html"),
            r##"<a href="missing.html">1</a><a href="a.html#nope">2</a><a href="#gone">3</a><img src="img/x.png">"##,
        )
        .unwrap();
        let broken: Vec<String> = check_book(&d).unwrap().iter().map(|b| b.link.clone()).collect();
        assert_eq!(broken, ["missing.html", "a.html#nope", "#gone", "img/x.png"]);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn readme_links_are_checked_against_files_and_rendered_chapters() {
        let root = scratch("readme");
        std::fs::create_dir_all(root.join("docs/src")).unwrap();
        std::fs::create_dir_all(root.join("book")).unwrap();
        std::fs::write(root.join("docs/src/dns.md"), "# DNS").unwrap();
        std::fs::write(root.join("book/dns.html"), r#"<h2 id="the-xdp-fast-path"></h2>"#).unwrap();
        std::fs::write(
            root.join("README.md"),
            "[dns](docs/src/dns.md) [xdp](docs/src/dns.md#the-xdp-fast-path) `[no](x.md)`\n\
             ```\n[no](fenced.md)\n```\n[web](https://example.org) [bad](docs/src/gone.md) \
             [anchor](docs/src/dns.md#nope)\n",
        )
        .unwrap();
        let broken: Vec<String> = check_readme(&root, &root.join("README.md"), &root.join("book"))
            .unwrap()
            .iter()
            .map(|b| b.link.clone())
            .collect();
        assert_eq!(broken, ["docs/src/gone.md", "docs/src/dns.md#nope"]);
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn issue_citations_are_found_and_other_uses_of_the_word_are_not() {
        let text =
            "DHCP (issue 4)\nSee issues 3 and 4.\nFixed in issue #12\npebble issues the certificate\nno issue here";
        let lines: Vec<usize> = issue_citations(text).into_iter().map(|(n, _)| n).collect();
        assert_eq!(lines, [1, 2, 3]);
    }
}
