//! Reading an ISO image's file trees for inspection (ISO 9660 with Joliet and Rock
//! Ridge, and UDF, whose tree Windows images hide everything in). Both trees are read
//! with the `isomage` crate (`iso9660::parse_iso9660`, `udf::parse_udf`) and merged,
//! and the small files detection wants ([`super::detect::WANTED_FILES`]) are read from
//! them, giving a [`super::detect::DetectInput`].
//!
//! `isomage` has no limits of its own (a directory pointing at itself recurses without
//! end, a directory extent's length is allocated as is), so [`read_image`] guards it:
//! the image's size ([`IsoLimits::max_image_bytes`]), the metadata bytes and the read
//! calls each parse may make (a [`Guarded`] reader fails past them, which also bounds the
//! recursion depth), the entries kept ([`IsoLimits::max_entries`]) and the size of each
//! small file read; parsing runs on its own thread with a large stack
//! ([`PARSE_STACK_BYTES`]). Blocking: call it from a blocking task. No state.

use std::{
    fs::File,
    io::{self, Read, Seek, SeekFrom},
    path::{Path, PathBuf},
};

use isomage::TreeNode;

use super::detect::{DetectInput, WANTED_FILES};

/// Stack of the parsing thread: `isomage` recurses once per directory level, and the
/// read-call limit bounds the depth well within it. Reserved, not committed.
pub const PARSE_STACK_BYTES: usize = 256 << 20;

/// Limits of [`read_image`].
#[derive(Debug, Clone, Copy)]
pub struct IsoLimits {
    /// Largest image inspected, in bytes.
    pub max_image_bytes: u64,
    /// Bytes each tree's parse may read (directory records, file entries).
    pub max_metadata_bytes: u64,
    /// Read calls each tree's parse may make.
    pub max_reads: u64,
    /// Entries (files and directories) kept over both trees.
    pub max_entries: usize,
    /// Largest small file ([`WANTED_FILES`]) read, in bytes.
    pub max_small_file: u64,
}

impl Default for IsoLimits {
    /// 64 GiB images, 64 MiB of metadata and 200 000 reads per tree, 500 000 entries,
    /// 64 KiB small files: far above any distribution's or Windows' media.
    fn default() -> Self {
        Self {
            max_image_bytes: 64 << 30,
            max_metadata_bytes: 64 << 20,
            max_reads: 200_000,
            max_entries: 500_000,
            max_small_file: 64 << 10,
        }
    }
}

/// What [`read_image`] found.
#[derive(Debug, Clone, Default)]
pub struct IsoListing {
    /// The trees read: `iso9660`, `udf` or both.
    pub trees: Vec<String>,
    /// Paths and small files for [`super::detect::detect`].
    pub input: DetectInput,
}

/// A reader that fails once a parse has read more than its limits allow.
pub struct Guarded<R> {
    inner: R,
    bytes: u64,
    reads: u64,
    limits: IsoLimits,
}

impl<R> Guarded<R> {
    /// Wraps `inner` with fresh counters.
    pub fn new(inner: R, limits: IsoLimits) -> Self {
        Self {
            inner,
            bytes: 0,
            reads: 0,
            limits,
        }
    }
}

impl<R: Read> Read for Guarded<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.reads += 1;
        if self.reads > self.limits.max_reads || self.bytes > self.limits.max_metadata_bytes {
            return Err(io::Error::other(format!(
                "the image's metadata is larger than the inspection limits ({} reads, {} bytes); \
                 it is damaged or hostile",
                self.limits.max_reads, self.limits.max_metadata_bytes
            )));
        }
        let n = self.inner.read(buf)?;
        self.bytes += n as u64;
        Ok(n)
    }
}

impl<R: Seek> Seek for Guarded<R> {
    fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
        self.inner.seek(pos)
    }
}

/// Every entry under `root` (iteratively: the tree may be deep), directories included,
/// at most `max` entries counted with `count`.
fn walk<'a>(
    root: &'a TreeNode,
    max: usize,
    count: &mut usize,
    out: &mut Vec<(String, &'a TreeNode)>,
) -> Result<(), String> {
    let mut stack: Vec<(String, &TreeNode)> = root.children.iter().map(|c| (c.name.clone(), c)).collect();
    while let Some((path, node)) = stack.pop() {
        *count += 1;
        if *count > max {
            return Err(format!("the image holds more than {max} entries; not inspected"));
        }
        if node.is_directory {
            stack.extend(node.children.iter().map(|c| (format!("{path}/{}", c.name), c)));
        }
        out.push((path, node));
    }
    Ok(())
}

/// The image's trees, each parse guarded, with the open file: both trees are read; an
/// image with neither is refused.
/// The trees an image holds, each with its kind (`iso9660`, `udf`).
type Trees = Vec<(&'static str, TreeNode)>;
/// Paths with their nodes, borrowed from [`Trees`].
type Entries<'a> = Vec<(String, &'a TreeNode)>;

fn open_trees(path: &Path, limits: IsoLimits) -> Result<(File, Trees), String> {
    let file = File::open(path).map_err(|e| format!("opening the image: {e}"))?;
    let size = file
        .metadata()
        .map_err(|e| format!("reading the image's size: {e}"))?
        .len();
    if size > limits.max_image_bytes {
        return Err(format!(
            "the image is {size} bytes, more than the {} bytes inspection reads",
            limits.max_image_bytes
        ));
    }
    let mut trees = Vec::new();
    let mut errors = Vec::new();
    let mut g = Guarded::new(file, limits);
    match isomage::iso9660::parse_iso9660(&mut g) {
        Ok(t) => trees.push(("iso9660", t)),
        Err(e) => errors.push(format!("ISO 9660: {e}")),
    }
    let mut g = Guarded::new(g.inner, limits);
    match isomage::udf::parse_udf(&mut g) {
        Ok(t) => trees.push(("udf", t)),
        Err(e) => errors.push(format!("UDF: {e}")),
    }
    if trees.is_empty() {
        return Err(format!("not an ISO 9660 or UDF image ({})", errors.join("; ")));
    }
    Ok((g.inner, trees))
}

/// Every entry of both trees (the first tree's spelling wins for a path both hold,
/// compared case-insensitively), with the trees' names.
fn merged<'a>(trees: &'a [(&'static str, TreeNode)], limits: IsoLimits) -> Result<(Vec<String>, Entries<'a>), String> {
    let mut count = 0;
    let mut seen = std::collections::HashSet::new();
    let mut names = Vec::new();
    let mut out = Vec::new();
    for (name, tree) in trees {
        names.push((*name).to_string());
        let mut all = Vec::new();
        walk(tree, limits.max_entries, &mut count, &mut all)?;
        out.extend(all.into_iter().filter(|(p, _)| seen.insert(p.to_lowercase())));
    }
    Ok((names, out))
}

fn parse(path: &Path, limits: IsoLimits) -> Result<IsoListing, String> {
    let (mut file, trees) = open_trees(path, limits)?;
    let (names, entries) = merged(&trees, limits)?;
    let mut out = IsoListing {
        trees: names,
        ..IsoListing::default()
    };
    for (p, node) in entries.into_iter().filter(|(_, n)| !n.is_directory) {
        let lower = p.to_lowercase();
        if WANTED_FILES.contains(&lower.as_str()) && node.size <= limits.max_small_file {
            let mut buf = Vec::new();
            if isomage::cat_node(&mut file, node, &mut buf).is_ok() {
                out.input
                    .files
                    .insert(lower, String::from_utf8_lossy(&buf).into_owned());
            }
        }
        out.input.paths.push(p);
    }
    out.input.paths.sort();
    Ok(out)
}

/// Runs `f` on a thread of [`PARSE_STACK_BYTES`] stack (the trees are dropped there too).
fn on_parse_thread<T: Send + 'static>(f: impl FnOnce() -> Result<T, String> + Send + 'static) -> Result<T, String> {
    std::thread::Builder::new()
        .name("iso-inspect".into())
        .stack_size(PARSE_STACK_BYTES)
        .spawn(f)
        .map_err(|e| format!("starting the inspection thread: {e}"))?
        .join()
        .unwrap_or_else(|_| Err("the image reader failed on this image (a damaged image?)".into()))
}

/// One entry of an image's merged tree ([`IsoIndex`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IsoEntry {
    /// Path inside the image as the image spells it (`/`-separated, no leading `/`).
    pub path: String,
    /// A directory.
    pub is_dir: bool,
    /// Size in bytes (0 for directories).
    pub size: u64,
    /// Byte offset of the file's data in the ISO, when its data is one extent (ISO 9660
    /// files always are; UDF files with one allocation descriptor).
    pub offset: Option<u64>,
}

/// The merged file tree of an image (ISO 9660 and UDF), looked up case-insensitively:
/// what `mount` serves and `extract` writes. Built by [`index_image`].
#[derive(Debug, Clone, Default)]
pub struct IsoIndex {
    /// Lower-case path -> entry.
    entries: std::collections::BTreeMap<String, IsoEntry>,
}

/// `path` as an index key: lower-case, without leading, trailing or doubled `/`.
fn key(path: &str) -> String {
    path.split('/')
        .filter(|c| !c.is_empty())
        .collect::<Vec<_>>()
        .join("/")
        .to_lowercase()
}

impl IsoIndex {
    /// The entry at `path` (case-insensitive; `""` or `/` is the root, a directory).
    pub fn get(&self, path: &str) -> Option<IsoEntry> {
        let k = key(path);
        if k.is_empty() {
            return Some(IsoEntry {
                path: String::new(),
                is_dir: true,
                size: 0,
                offset: None,
            });
        }
        self.entries.get(&k).cloned()
    }

    /// The entries directly inside directory `path`, in name order; `None` when `path`
    /// is not a directory of the image.
    pub fn children(&self, path: &str) -> Option<Vec<IsoEntry>> {
        let k = key(path);
        if !self.get(&k)?.is_dir {
            return None;
        }
        let prefix = if k.is_empty() { String::new() } else { format!("{k}/") };
        Some(
            self.entries
                .range(prefix.clone()..)
                .take_while(|(p, _)| p.starts_with(&prefix))
                .filter(|(p, _)| !p[prefix.len()..].contains('/'))
                .map(|(_, e)| e.clone())
                .collect(),
        )
    }

    /// Every entry, parents before children.
    pub fn entries(&self) -> impl Iterator<Item = &IsoEntry> {
        self.entries.values()
    }

    /// Number of files and their total size in bytes.
    pub fn file_totals(&self) -> (usize, u64) {
        self.entries
            .values()
            .filter(|e| !e.is_dir)
            .fold((0, 0), |(n, b), e| (n + 1, b + e.size))
    }
}

/// Builds the [`IsoIndex`] of the ISO at `path` within `limits` (the guards of
/// [`read_image`]). Blocking.
///
/// # Errors
/// As [`read_image`].
pub fn index_image(path: &Path, limits: IsoLimits) -> Result<IsoIndex, String> {
    let path: PathBuf = path.to_path_buf();
    on_parse_thread(move || {
        let (_file, trees) = open_trees(&path, limits)?;
        let (_, all) = merged(&trees, limits)?;
        let mut idx = IsoIndex::default();
        for (p, node) in all {
            idx.entries.insert(
                key(&p),
                IsoEntry {
                    path: p,
                    is_dir: node.is_directory,
                    size: if node.is_directory { 0 } else { node.size },
                    offset: node.file_location.filter(|_| !node.is_directory),
                },
            );
        }
        Ok(idx)
    })
}

/// Whether `c` may be a path component written to disk by [`extract_tree`]: not empty,
/// not `.` or `..`, no `/`, backslash, NUL or other control character.
pub fn safe_component(c: &str) -> bool {
    !c.is_empty() && c != "." && c != ".." && !c.chars().any(|ch| ch == '/' || ch == '\\' || ch.is_control())
}

/// Writes every entry of `index` from the ISO at `iso` under `dest` (which must not
/// exist; it is created), calling `progress(bytes_done, bytes_total)` after each file.
/// Files are created new (never through an existing path); every path component is
/// checked with [`safe_component`]. Returns the files and bytes written. Blocking.
///
/// # Errors
/// A message for the operator: an unsafe name in the image, a file whose data is not one
/// extent, I/O (with the path).
pub fn extract_tree(
    iso: &Path,
    index: &IsoIndex,
    dest: &Path,
    mut progress: impl FnMut(u64, u64),
) -> Result<(usize, u64), String> {
    let (_, total) = index.file_totals();
    let mut src = File::open(iso).map_err(|e| format!("opening the image: {e}"))?;
    std::fs::create_dir(dest).map_err(|e| format!("creating {}: {e}", dest.display()))?;
    let (mut files, mut done) = (0usize, 0u64);
    for e in index.entries() {
        if let Some(bad) = e.path.split('/').find(|c| !safe_component(c)) {
            return Err(format!(
                "the image holds an unsafe name {bad:?} (in {:?}); not extracted",
                e.path
            ));
        }
        let out = dest.join(&e.path);
        if e.is_dir {
            std::fs::create_dir_all(&out).map_err(|err| format!("creating {}: {err}", e.path))?;
            continue;
        }
        if let Some(parent) = out.parent() {
            std::fs::create_dir_all(parent).map_err(|err| format!("creating the directory of {}: {err}", e.path))?;
        }
        let offset = e
            .offset
            .ok_or_else(|| format!("{} is not stored as one extent; this image cannot be extracted", e.path))?;
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&out)
            .map_err(|err| format!("creating {}: {err}", e.path))?;
        src.seek(SeekFrom::Start(offset))
            .map_err(|err| format!("reading {}: {err}", e.path))?;
        let n = io::copy(&mut (&mut src).take(e.size), &mut f).map_err(|err| format!("writing {}: {err}", e.path))?;
        if n != e.size {
            return Err(format!("{} ends past the end of the image (damaged image?)", e.path));
        }
        files += 1;
        done += n;
        progress(done, total);
    }
    Ok((files, done))
}

/// Reads both trees of the ISO at `path` within `limits`, on a thread of
/// [`PARSE_STACK_BYTES`] stack (the trees are dropped there too).
///
/// # Errors
/// A message for the image's `reason`: unreadable, too large, neither ISO 9660 nor UDF,
/// over a limit.
pub fn read_image(path: &Path, limits: IsoLimits) -> Result<IsoListing, String> {
    let path: PathBuf = path.to_path_buf();
    on_parse_thread(move || parse(&path, limits))
}

/// Images for the tests of this crate and of the API above it (feature `test-support`).
#[cfg(any(test, feature = "test-support"))]
pub mod test_support {
    use std::path::{Path, PathBuf};

    /// A Debian-netinst-shaped tree made into an ISO with `xorriso -as mkisofs -R -J`;
    /// `None` (with a message) when xorriso is missing.
    pub fn debian_iso(dir: &Path) -> Option<PathBuf> {
        let tree = dir.join("tree");
        std::fs::create_dir_all(tree.join("install.amd")).unwrap();
        std::fs::create_dir_all(tree.join(".disk")).unwrap();
        std::fs::write(tree.join("install.amd/vmlinuz"), b"fake kernel").unwrap();
        std::fs::write(tree.join("install.amd/initrd.gz"), b"fake initrd").unwrap();
        std::fs::write(
            tree.join(".disk/info"),
            "Debian GNU/Linux 12.5.0 \"Bookworm\" - Official amd64 NETINST with firmware 20240210-11:27",
        )
        .unwrap();
        let out = dir.join("debian.iso");
        match std::process::Command::new("xorriso")
            .args(["-as", "mkisofs", "-quiet", "-R", "-J", "-V", "DEBIAN_NETINST", "-o"])
            .arg(&out)
            .arg(&tree)
            .status()
        {
            Ok(s) if s.success() => Some(out),
            Ok(s) => panic!("xorriso failed: {s}"),
            Err(e) => {
                eprintln!("SKIPPED: xorriso is not installed ({e}); scripts/setup.sh installs it");
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{test_support::debian_iso, *};

    #[test]
    fn the_guard_stops_reading_past_its_limits() {
        let limits = IsoLimits {
            max_reads: 2,
            ..IsoLimits::default()
        };
        let mut g = Guarded::new(io::Cursor::new(vec![0u8; 10]), limits);
        let mut b = [0u8; 4];
        assert_eq!(g.read(&mut b).unwrap(), 4);
        assert_eq!(g.read(&mut b).unwrap(), 4);
        assert!(g.read(&mut b).is_err());
    }

    #[test]
    fn not_an_image_is_a_reason_not_a_panic() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.iso");
        std::fs::write(&p, vec![0u8; 100_000]).unwrap();
        let e = read_image(&p, IsoLimits::default()).unwrap_err();
        assert!(e.contains("not an ISO 9660 or UDF image"), "{e}");
        let e = read_image(
            &p,
            IsoLimits {
                max_image_bytes: 10,
                ..IsoLimits::default()
            },
        )
        .unwrap_err();
        assert!(e.contains("more than the 10 bytes"), "{e}");
    }

    #[test]
    fn a_debian_netinst_shaped_iso_is_detected() {
        let dir = tempfile::tempdir().unwrap();
        let Some(iso) = debian_iso(dir.path()) else {
            return;
        };
        let l = read_image(&iso, IsoLimits::default()).unwrap();
        assert_eq!(l.trees, ["iso9660"]);
        assert!(l.input.files[".disk/info"].contains("Debian GNU/Linux 12.5.0"));
        let d = crate::media::detect::detect(&l.input);
        assert_eq!(d.family, crate::media::detect::Family::Debian);
        assert_eq!(d.version.as_deref(), Some("12.5.0"));
        assert_eq!(d.kernel.as_deref(), Some("install.amd/vmlinuz"));
        assert_eq!(d.initrds, ["install.amd/initrd.gz"]);
        // The entry limit is enforced.
        let e = read_image(
            &iso,
            IsoLimits {
                max_entries: 2,
                ..IsoLimits::default()
            },
        )
        .unwrap_err();
        assert!(e.contains("more than 2 entries"), "{e}");
    }

    /// A python with pycdlib: the system one or the project's venv.
    fn pycdlib_python() -> Option<&'static str> {
        ["python3", "/opt/bootlane-venv/bin/python3"].into_iter().find(|p| {
            std::process::Command::new(p)
                .args(["-c", "import pycdlib"])
                .stderr(std::process::Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        })
    }

    #[test]
    fn a_udf_only_windows_shaped_iso_is_detected() {
        let Some(py) = pycdlib_python() else {
            eprintln!("SKIPPED: pycdlib is not installed (scripts/setup.sh puts it in /opt/bootlane-venv)");
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("win.iso");
        // The ISO 9660 side holds only README.TXT; everything else is on the UDF side.
        let script = r#"
import io, sys, pycdlib
iso = pycdlib.PyCdlib()
iso.new(interchange_level=3, udf='2.60')
def add(path, data):
    iso.add_fp(io.BytesIO(data), len(data), udf_path=path)
iso.add_fp(io.BytesIO(b'udf only'), 8, '/README.TXT;1')
for d in ['/boot', '/sources', '/efi', '/efi/boot']:
    iso.add_directory(udf_path=d)
add('/bootmgr', b'bootmgr')
add('/boot/bcd', b'bcd')
add('/boot/boot.sdi', b'sdi')
add('/sources/boot.wim', b'wim' * 100)
add('/efi/boot/bootx64.efi', b'MZ')
iso.write(sys.argv[1])
"#;
        let st = std::process::Command::new(py)
            .args(["-c", script])
            .arg(&out)
            .status()
            .unwrap();
        assert!(st.success(), "pycdlib failed");
        let l = read_image(&out, IsoLimits::default()).unwrap();
        assert_eq!(l.trees, ["iso9660", "udf"]);
        let d = crate::media::detect::detect(&l.input);
        assert_eq!(d.family, crate::media::detect::Family::Windows);
        assert_eq!(d.boot_method, crate::media::detect::BootMethod::Wimboot);
        assert_eq!(d.initrds, ["bootmgr", "boot/bcd", "boot/boot.sdi", "sources/boot.wim"]);
        assert_eq!(d.arch.as_deref(), Some("x86_64"));
        // The UDF side's files can be served mounted: one extent each, at the right place.
        let idx = index_image(&out, IsoLimits::default()).unwrap();
        let wim = idx.get("SOURCES/boot.wim").unwrap();
        let mut f = File::open(&out).unwrap();
        f.seek(SeekFrom::Start(wim.offset.unwrap())).unwrap();
        let mut buf = vec![0u8; wim.size as usize];
        f.read_exact(&mut buf).unwrap();
        assert_eq!(buf, b"wim".repeat(100));
        let ex = dir.path().join("tree");
        let (files, _) = extract_tree(&out, &idx, &ex, |_, _| {}).unwrap();
        assert_eq!(files, 6);
        assert_eq!(std::fs::read(ex.join("boot/bcd")).unwrap(), b"bcd");
    }

    #[test]
    fn hostile_names_in_an_image_are_never_written() {
        for bad in ["", ".", "..", "a/b", "a\\b", "nul\0", "tab\t", "new\nline"] {
            assert!(!safe_component(bad), "{bad:?}");
        }
        for good in ["vmlinuz", "initrd.gz", ".disk", "boot.wim", "é"] {
            assert!(safe_component(good), "{good:?}");
        }
        let dir = tempfile::tempdir().unwrap();
        let iso = dir.path().join("x.iso");
        std::fs::write(&iso, b"0123456789").unwrap();
        for path in ["../escape", "a/../../escape", "/abs", "a//b"] {
            let mut idx = IsoIndex::default();
            idx.entries.insert(
                path.to_lowercase(),
                IsoEntry {
                    path: path.into(),
                    is_dir: false,
                    size: 2,
                    offset: Some(0),
                },
            );
            let dest = dir.path().join("out");
            let e = extract_tree(&iso, &idx, &dest, |_, _| {}).unwrap_err();
            assert!(e.contains("unsafe name"), "{path}: {e}");
            assert!(!dir.path().join("escape").exists());
            std::fs::remove_dir_all(&dest).unwrap();
        }
        // A file past the end of the image is an error, not a short file.
        let mut idx = IsoIndex::default();
        idx.entries.insert(
            "f".into(),
            IsoEntry {
                path: "f".into(),
                is_dir: false,
                size: 20,
                offset: Some(5),
            },
        );
        let e = extract_tree(&iso, &idx, &dir.path().join("out2"), |_, _| {}).unwrap_err();
        assert!(e.contains("past the end"), "{e}");
        // The index answers case-insensitively and lists children.
        let mut idx = IsoIndex::default();
        for (p, d) in [
            ("Boot", true),
            ("Boot/BCD", false),
            ("Boot/Fonts", true),
            ("Boot/Fonts/a.ttf", false),
        ] {
            idx.entries.insert(
                key(p),
                IsoEntry {
                    path: p.into(),
                    is_dir: d,
                    size: 1,
                    offset: Some(0),
                },
            );
        }
        assert_eq!(idx.get("/boot/bcd").unwrap().path, "Boot/BCD");
        let c: Vec<String> = idx.children("BOOT").unwrap().into_iter().map(|e| e.path).collect();
        assert_eq!(c, ["Boot/BCD", "Boot/Fonts"]);
        assert!(idx.children("boot/bcd").is_none());
        assert_eq!(idx.children("").unwrap().len(), 1);
    }
}
