//! TFTP wire format (RFC 1350 §5, option extension RFC 2347): parsing of every packet
//! type and encoding of the ones a read-only server sends. Parsing is total: any byte
//! string yields a [`Packet`] or a [`ParseError`], never a panic. Holds no state.

/// Opcodes (RFC 1350 §5, RFC 2347 §2).
pub mod opcode {
    /// Read request.
    pub const RRQ: u16 = 1;
    /// Write request.
    pub const WRQ: u16 = 2;
    /// Data block.
    pub const DATA: u16 = 3;
    /// Acknowledgement.
    pub const ACK: u16 = 4;
    /// Error.
    pub const ERROR: u16 = 5;
    /// Option acknowledgement (RFC 2347).
    pub const OACK: u16 = 6;
}

/// Error codes (RFC 1350 appendix, RFC 2347 code 8).
pub mod errcode {
    /// Not defined, see message.
    pub const UNDEFINED: u16 = 0;
    /// File not found.
    pub const NOT_FOUND: u16 = 1;
    /// Access violation.
    pub const ACCESS: u16 = 2;
    /// Illegal TFTP operation.
    pub const ILLEGAL: u16 = 4;
    /// Unknown transfer ID.
    pub const UNKNOWN_TID: u16 = 5;
    /// Option negotiation refused (RFC 2347).
    pub const OPTION_REFUSED: u16 = 8;
}

/// A request (RRQ or WRQ) with its options, names lower-cased (RFC 2347: case-insensitive).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// True for WRQ.
    pub write: bool,
    /// File name as sent (ASCII/UTF-8; invalid bytes replaced).
    pub filename: String,
    /// Transfer mode, lower case (`octet`, `netascii`, `mail`).
    pub mode: String,
    /// Options in the order sent: (lower-case name, value).
    pub options: Vec<(String, String)>,
}

/// A decoded packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Packet {
    /// RRQ or WRQ.
    Request(Request),
    /// DATA: block number and payload.
    Data(u16, Vec<u8>),
    /// ACK of a block number.
    Ack(u16),
    /// ERROR: code and message.
    Error(u16, String),
    /// OACK: options.
    Oack(Vec<(String, String)>),
}

/// Why bytes are not a TFTP packet.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ParseError {
    /// Shorter than its fixed fields.
    #[error("packet too short")]
    Short,
    /// Unknown opcode.
    #[error("unknown opcode {0}")]
    Opcode(u16),
    /// A string field without its terminating NUL, or an odd option list.
    #[error("malformed string fields")]
    Strings,
}

fn strings(b: &[u8]) -> Result<Vec<String>, ParseError> {
    if b.is_empty() {
        return Ok(Vec::new());
    }
    if *b.last().unwrap_or(&1) != 0 {
        return Err(ParseError::Strings);
    }
    Ok(b[..b.len() - 1]
        .split(|c| *c == 0)
        .map(|s| String::from_utf8_lossy(s).into_owned())
        .collect())
}

fn pairs(fields: &[String]) -> Result<Vec<(String, String)>, ParseError> {
    if !fields.len().is_multiple_of(2) {
        return Err(ParseError::Strings);
    }
    Ok(fields
        .chunks(2)
        .map(|c| (c[0].to_ascii_lowercase(), c[1].clone()))
        .collect())
}

impl Packet {
    /// Decodes one datagram.
    ///
    /// # Errors
    /// [`ParseError`].
    pub fn parse(b: &[u8]) -> Result<Self, ParseError> {
        if b.len() < 2 {
            return Err(ParseError::Short);
        }
        let op = u16::from_be_bytes([b[0], b[1]]);
        let rest = &b[2..];
        let num = || {
            rest.get(..2)
                .map(|n| u16::from_be_bytes([n[0], n[1]]))
                .ok_or(ParseError::Short)
        };
        match op {
            opcode::RRQ | opcode::WRQ => {
                let f = strings(rest)?;
                if f.len() < 2 {
                    return Err(ParseError::Strings);
                }
                Ok(Self::Request(Request {
                    write: op == opcode::WRQ,
                    filename: f[0].clone(),
                    mode: f[1].to_ascii_lowercase(),
                    // Some clients pad with extra NULs; drop a trailing empty field.
                    options: pairs(trim_empty(&f[2..]))?,
                }))
            }
            opcode::DATA => Ok(Self::Data(num()?, rest[2..].to_vec())),
            opcode::ACK => Ok(Self::Ack(num()?)),
            opcode::ERROR => {
                let code = num()?;
                let msg = strings(&rest[2..])
                    .ok()
                    .and_then(|v| v.into_iter().next())
                    .unwrap_or_default();
                Ok(Self::Error(code, msg))
            }
            opcode::OACK => Ok(Self::Oack(pairs(trim_empty(&strings(rest)?))?)),
            other => Err(ParseError::Opcode(other)),
        }
    }
}

fn trim_empty(f: &[String]) -> &[String] {
    let mut end = f.len();
    while end > 0 && f[end - 1].is_empty() && end % 2 == 1 {
        end -= 1;
    }
    &f[..end]
}

/// Encodes DATA.
pub fn data(block: u16, payload: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(4 + payload.len());
    v.extend_from_slice(&opcode::DATA.to_be_bytes());
    v.extend_from_slice(&block.to_be_bytes());
    v.extend_from_slice(payload);
    v
}

/// Encodes ACK (used by tests and clients).
pub fn ack(block: u16) -> Vec<u8> {
    let mut v = opcode::ACK.to_be_bytes().to_vec();
    v.extend_from_slice(&block.to_be_bytes());
    v
}

/// Encodes ERROR with a message.
pub fn error(code: u16, msg: &str) -> Vec<u8> {
    let mut v = opcode::ERROR.to_be_bytes().to_vec();
    v.extend_from_slice(&code.to_be_bytes());
    v.extend(msg.bytes().filter(|b| *b != 0));
    v.push(0);
    v
}

/// Encodes OACK.
pub fn oack(options: &[(String, String)]) -> Vec<u8> {
    let mut v = opcode::OACK.to_be_bytes().to_vec();
    for (k, val) in options {
        v.extend_from_slice(k.as_bytes());
        v.push(0);
        v.extend_from_slice(val.as_bytes());
        v.push(0);
    }
    v
}

/// Encodes a read request (used by tests).
pub fn rrq(filename: &str, mode: &str, options: &[(&str, &str)]) -> Vec<u8> {
    let mut v = opcode::RRQ.to_be_bytes().to_vec();
    for s in [filename, mode] {
        v.extend_from_slice(s.as_bytes());
        v.push(0);
    }
    for (k, val) in options {
        v.extend_from_slice(k.as_bytes());
        v.push(0);
        v.extend_from_slice(val.as_bytes());
        v.push(0);
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        let r = rrq("a/b.efi", "OCTET", &[("BlkSize", "1468"), ("tsize", "0")]);
        assert_eq!(
            Packet::parse(&r).unwrap(),
            Packet::Request(Request {
                write: false,
                filename: "a/b.efi".into(),
                mode: "octet".into(),
                options: vec![("blksize".into(), "1468".into()), ("tsize".into(), "0".into())],
            })
        );
        assert_eq!(Packet::parse(&ack(7)).unwrap(), Packet::Ack(7));
        assert_eq!(Packet::parse(&data(2, b"xy")).unwrap(), Packet::Data(2, b"xy".to_vec()));
        assert_eq!(Packet::parse(&error(8, "no")).unwrap(), Packet::Error(8, "no".into()));
        let o = vec![("tsize".to_string(), "5".to_string())];
        assert_eq!(Packet::parse(&oack(&o)).unwrap(), Packet::Oack(o));
    }

    #[test]
    fn malformed() {
        assert_eq!(Packet::parse(&[]), Err(ParseError::Short));
        assert_eq!(Packet::parse(&[0, 4, 1]), Err(ParseError::Short));
        assert_eq!(Packet::parse(&[0, 9]), Err(ParseError::Opcode(9)));
        assert_eq!(Packet::parse(&[0, 1, b'a']), Err(ParseError::Strings));
        assert_eq!(Packet::parse(&[0, 1, b'a', 0]), Err(ParseError::Strings));
        assert_eq!(
            Packet::parse(&[0, 1, b'a', 0, b'o', 0, b'x', 0]),
            Err(ParseError::Strings)
        );
        // Random bytes never panic.
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        for _ in 0..20_000 {
            let n = rng.gen_range(0..40);
            let mut b: Vec<u8> = (0..n).map(|_| rng.gen_range(0..8)).collect();
            if b.len() >= 2 {
                b[0] = 0;
            }
            let _ = Packet::parse(&b);
        }
    }
}
