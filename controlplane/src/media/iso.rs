//! Reading an ISO image's file trees for inspection (issue 9 "OS images": ISO 9660 with
//! Joliet and Rock Ridge, and UDF, whose tree Windows images hide everything in). Both
//! trees are read with the `isomage` crate (`iso9660::parse_iso9660`,
//! `udf::parse_udf`) and merged, and the small files detection wants
//! ([`super::detect::WANTED_FILES`]) are read from them, giving a
//! [`super::detect::DetectInput`].
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

/// Every file path under `root` (iteratively: the tree may be deep), at most `max`
/// entries counted with `count`.
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
        } else {
            out.push((path, node));
        }
    }
    Ok(())
}

fn parse(path: &Path, limits: IsoLimits) -> Result<IsoListing, String> {
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
    let mut file = g.inner;
    let mut count = 0;
    let mut seen = std::collections::HashSet::new();
    let mut out = IsoListing::default();
    for (name, tree) in &trees {
        out.trees.push((*name).to_string());
        let mut files = Vec::new();
        walk(tree, limits.max_entries, &mut count, &mut files)?;
        for (p, node) in files {
            let lower = p.to_lowercase();
            if !seen.insert(lower.clone()) {
                continue;
            }
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
    }
    out.input.paths.sort();
    Ok(out)
}

/// Reads both trees of the ISO at `path` within `limits`, on a thread of
/// [`PARSE_STACK_BYTES`] stack (the trees are dropped there too).
///
/// # Errors
/// A message for the image's `reason`: unreadable, too large, neither ISO 9660 nor UDF,
/// over a limit.
pub fn read_image(path: &Path, limits: IsoLimits) -> Result<IsoListing, String> {
    let path: PathBuf = path.to_path_buf();
    std::thread::Builder::new()
        .name("iso-inspect".into())
        .stack_size(PARSE_STACK_BYTES)
        .spawn(move || parse(&path, limits))
        .map_err(|e| format!("starting the inspection thread: {e}"))?
        .join()
        .unwrap_or_else(|_| Err("the image reader failed on this image (a damaged image?)".into()))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

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

    /// A Debian-netinst-shaped tree made into an ISO with `xorriso -as mkisofs -R -J`;
    /// `None` (with a message) when xorriso is missing.
    pub(crate) fn debian_iso(dir: &Path) -> Option<PathBuf> {
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
    }
}
