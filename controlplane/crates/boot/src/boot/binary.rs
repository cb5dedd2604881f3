//! What a boot binary is, read from its bytes: whether a PE image carries an Authenticode
//! signature (Secure Boot needs one) and which iPXE version a build is. Used by the GRUB
//! menu's Secure Boot findings and by the boot-file checks of the media API. Pure
//! functions over files and byte slices; no state.

use std::{io::Read, path::Path};

/// Whether the PE image at `path` carries an Authenticode signature: `Some(true)` when
/// its attribute certificate table (PE/COFF data directory 4, `IMAGE_DIRECTORY_ENTRY_SECURITY`,
/// a file offset and size) is present, lies inside the file and starts with a
/// `WIN_CERTIFICATE` of revision 2.0 and type `WIN_CERT_TYPE_PKCS_SIGNED_DATA` (2), as
/// shim, signed GRUB and Debian's signed kernels carry; `Some(false)` for a PE without
/// one (iPXE, a self-built kernel); `None` when the file is not a PE image. Only the
/// signature's presence is checked, not its signer (the firmware's `db` and shim's
/// keys decide that at boot).
///
/// # Errors
/// Reading the file.
pub fn authenticode(path: &Path) -> std::io::Result<Option<bool>> {
    use object::{
        pe::{ImageDosHeader, ImageNtHeaders32, ImageNtHeaders64, IMAGE_DIRECTORY_ENTRY_SECURITY},
        read::pe::ImageNtHeaders,
        FileKind, LittleEndian as LE,
    };
    fn security_dir<H: ImageNtHeaders>(head: &[u8]) -> Option<(u64, u64)> {
        let dos = ImageDosHeader::parse(head).ok()?;
        let mut off = dos.nt_headers_offset().into();
        let (_, dirs) = H::parse(head, &mut off).ok()?;
        let d = dirs.get(IMAGE_DIRECTORY_ENTRY_SECURITY)?;
        Some((u64::from(d.virtual_address.get(LE)), u64::from(d.size.get(LE))))
    }
    let mut f = std::fs::File::open(path)?;
    let len = f.metadata()?.len();
    let mut head = Vec::with_capacity(64 << 10);
    (&mut f).take(64 << 10).read_to_end(&mut head)?;
    let dir = match FileKind::parse(&head[..]) {
        Ok(FileKind::Pe32) => security_dir::<ImageNtHeaders32>(&head),
        Ok(FileKind::Pe64) => security_dir::<ImageNtHeaders64>(&head),
        _ => return Ok(None),
    };
    let Some((at, size)) = dir.filter(|(at, size)| *at > 0 && *size >= 8) else {
        return Ok(Some(false));
    };
    if at.saturating_add(size) > len {
        return Ok(Some(false));
    }
    use std::io::Seek as _;
    f.seek(std::io::SeekFrom::Start(at))?;
    let mut cert = [0u8; 8];
    f.read_exact(&mut cert)?;
    let revision = u16::from_le_bytes([cert[4], cert[5]]);
    let kind = u16::from_le_bytes([cert[6], cert[7]]);
    Ok(Some(revision == 0x0200 && kind == 0x0002))
}

/// The iPXE version string in `data`: `iPXE` followed by a space or NUL padding, then a
/// version token starting with a digit and containing a dot (iPXE's `product_name` and
/// `product_version` sit next to each other; a banner reads `iPXE 1.21.1+...`).
pub fn ipxe_version(data: &[u8]) -> Option<String> {
    const TAG: &[u8] = b"iPXE";
    let mut from = 0;
    while let Some(i) = data[from..].windows(TAG.len()).position(|w| w == TAG) {
        let start = from + i + TAG.len();
        from = start;
        let pad = data[start..]
            .iter()
            .take(64)
            .take_while(|b| **b == b' ' || **b == 0)
            .count();
        if pad == 0 {
            continue;
        }
        let tok: Vec<u8> = data[start + pad..]
            .iter()
            .take(128)
            .take_while(|b| b.is_ascii_alphanumeric() || b"._+-~".contains(b))
            .copied()
            .collect();
        if tok.first().is_some_and(u8::is_ascii_digit) && tok.contains(&b'.') && tok.len() >= 3 {
            return String::from_utf8(tok).ok();
        }
    }
    None
}
