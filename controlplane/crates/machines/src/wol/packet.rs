//! The magic packet (AMD "Magic Packet Technology" white paper, 1995): 6 bytes of `0xFF`
//! then the target's MAC address 16 times (102 bytes), optionally followed by a 6-byte
//! SecureOn password that NICs supporting it require before they wake. Pure functions.

use bootlane_core::net::types::{normalise_mac, MacAddr};

/// Length of a magic packet without a password.
pub const MAGIC_LEN: usize = 6 + 16 * 6;
/// Length of a SecureOn password.
pub const SECUREON_LEN: usize = 6;

/// A SecureOn password: six bytes, written like a MAC address (`aa:bb:cc:dd:ee:ff`, any
/// of the MAC forms [`normalise_mac`] accepts).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SecureOn(pub [u8; SECUREON_LEN]);

impl SecureOn {
    /// Parses the six bytes.
    ///
    /// # Errors
    /// A message for the API naming the `password` field.
    pub fn parse(s: &str) -> Result<Self, String> {
        normalise_mac(s)
            .map(|m| Self(m.0))
            .map_err(|_| "'password' (SecureOn) must be six hex bytes, e.g. 01:23:45:67:89:ab".to_string())
    }
}

/// The magic packet for `mac`: `FF x6`, `mac x16`, then the password when given
/// (102 or 108 bytes).
pub fn magic_packet(mac: MacAddr, password: Option<SecureOn>) -> Vec<u8> {
    let mut p = Vec::with_capacity(MAGIC_LEN + SECUREON_LEN);
    p.extend_from_slice(&[0xFF; 6]);
    for _ in 0..16 {
        p.extend_from_slice(&mac.0);
    }
    if let Some(pw) = password {
        p.extend_from_slice(&pw.0);
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_bytes_without_password() {
        let mac = normalise_mac("52:54:00:12:34:56").unwrap();
        let p = magic_packet(mac, None);
        assert_eq!(p.len(), 102);
        assert_eq!(&p[..6], &[0xFF; 6]);
        for i in 0..16 {
            assert_eq!(
                &p[6 + 6 * i..12 + 6 * i],
                &[0x52, 0x54, 0x00, 0x12, 0x34, 0x56],
                "copy {i}"
            );
        }
        // The whole packet spelled out once, so a change of layout cannot pass unnoticed.
        let hex: String = p.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex, format!("{}{}", "ff".repeat(6), "525400123456".repeat(16)));
    }

    #[test]
    fn secureon_password_follows_the_sixteen_copies() {
        let mac = normalise_mac("aa-bb-cc-dd-ee-ff").unwrap();
        let pw = SecureOn::parse("01:23:45:67:89:AB").unwrap();
        let p = magic_packet(mac, Some(pw));
        assert_eq!(p.len(), 108);
        assert_eq!(&p[102..], &[0x01, 0x23, 0x45, 0x67, 0x89, 0xab]);
        assert_eq!(&p[96..102], &[0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff]);
        assert!(SecureOn::parse("0123456789").unwrap_err().contains("'password'"));
        assert_eq!(SecureOn::parse("0123456789ab").unwrap(), pw);
    }
}
