//! Domain-name helpers shared by the record API and the zone: parsing a DNS owner name
//! into a hickory [`Name`] (the syntax rule itself, `_` and wildcards included, is
//! [`bootlane_core::net::types::validate_domain_name`]) and the rule that turns a record name
//! into an absolute name. Pure functions, no state.

use hickory_proto::rr::Name;

use bootlane_core::net::types::{validate_domain_name, NameError};

/// Parses a dotted DNS owner name (trailing dot optional) into a lowercased, fully
/// qualified [`Name`], after [`validate_domain_name`].
///
/// # Errors
/// [`NameError`] for empty names, bad labels or names over 253 characters.
pub fn parse_domain(s: &str) -> Result<Name, NameError> {
    validate_domain_name(s)?;
    let t = s.strip_suffix('.').unwrap_or(s);
    let mut name = Name::from_ascii(t.to_ascii_lowercase()).map_err(|_| NameError::BadChar(s.into()))?;
    name.set_fqdn(true);
    Ok(name)
}

/// Turns a record name into an absolute name under `origin` (spec "DNS record"): `@` is
/// the apex; a name ending in `.` or already inside `origin` is absolute; any other name
/// is relative to `origin` (`host1` → `host1.<origin>`).
///
/// # Errors
/// [`NameError`] when the result is not a valid name.
pub fn absolute(name: &str, origin: &Name) -> Result<Name, NameError> {
    let n = name.trim();
    if n == "@" {
        return Ok(origin.clone());
    }
    if n.ends_with('.') {
        return parse_domain(n);
    }
    let parsed = parse_domain(n)?;
    if origin.zone_of(&parsed) {
        return Ok(parsed);
    }
    let joined = parsed
        .append_domain(origin)
        .map_err(|_| NameError::NameTooLong(name.into()))?;
    if joined.len() > 255 {
        return Err(NameError::NameTooLong(name.into()));
    }
    Ok(joined)
}

/// Turns a CNAME/MX target into an absolute name: a trailing dot or at least one inner
/// dot makes it absolute (`www.example.com`), a single label is relative to `origin`
/// (`host1` → `host1.<origin>`), `@` is the apex.
///
/// # Errors
/// [`NameError`] when the target is not a valid name.
pub fn absolute_target(target: &str, origin: &Name) -> Result<Name, NameError> {
    let t = target.trim();
    if t == "@" {
        return Ok(origin.clone());
    }
    if t.trim_end_matches('.').contains('.') {
        return parse_domain(t);
    }
    absolute(t, origin)
}

/// Lowercased wire format of `name` (RFC 1035 §3.1), without compression.
pub fn to_wire_lower(name: &Name) -> Vec<u8> {
    let mut out = Vec::with_capacity(name.len() + 1);
    for label in name.iter() {
        out.push(label.len() as u8);
        out.extend(label.iter().map(u8::to_ascii_lowercase));
    }
    out.push(0);
    out
}

/// The presentation form of `name` with a trailing dot, lowercased.
pub fn display(name: &Name) -> String {
    let mut s = name.to_lowercase().to_ascii();
    if !s.ends_with('.') {
        s.push('.');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn origin() -> Name {
        parse_domain("bootlane.local").unwrap()
    }

    #[test]
    fn relative_absolute_and_apex() {
        assert_eq!(display(&absolute("host1", &origin()).unwrap()), "host1.bootlane.local.");
        assert_eq!(display(&absolute("A.B", &origin()).unwrap()), "a.b.bootlane.local.");
        assert_eq!(display(&absolute("@", &origin()).unwrap()), "bootlane.local.");
        assert_eq!(
            display(&absolute("Host1.Bootlane.Local", &origin()).unwrap()),
            "host1.bootlane.local."
        );
        assert_eq!(
            display(&absolute("www.example.com.", &origin()).unwrap()),
            "www.example.com."
        );
        assert_eq!(
            display(&absolute_target("www.example.com", &origin()).unwrap()),
            "www.example.com."
        );
        assert_eq!(
            display(&absolute_target("host2", &origin()).unwrap()),
            "host2.bootlane.local."
        );
    }

    #[test]
    fn rejects_bad_names() {
        assert!(matches!(parse_domain(""), Err(NameError::Empty)));
        assert!(matches!(parse_domain("a..b"), Err(NameError::EmptyLabel(_))));
        assert!(matches!(parse_domain(&"a".repeat(64)), Err(NameError::LabelTooLong(_))));
        assert!(matches!(parse_domain("a b"), Err(NameError::BadChar(_))));
        assert!(matches!(parse_domain("-a"), Err(NameError::BadChar(_))));
        let long = vec!["abcdefghi"; 26].join(".");
        assert!(matches!(parse_domain(&long), Err(NameError::NameTooLong(_))));
    }

    #[test]
    fn wire_is_lowercase() {
        let n = Name::from_ascii("HoSt1.Lab.").unwrap();
        assert_eq!(to_wire_lower(&n), b"\x05host1\x03lab\x00".to_vec());
    }
}
