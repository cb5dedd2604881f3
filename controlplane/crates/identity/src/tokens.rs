//! API token secrets: their shape (`blt_<id>_<secret>`, so a leaked one is easy to
//! recognise and scan for), how they are made and hashed for storage, and the rule for
//! token names. The API's token store and routes build on these.

use bootlane_core::service_error::ServiceError;
use rand::{distributions::Alphanumeric, Rng};
use sha2::{Digest, Sha256};

/// What every token secret starts with.
pub const PREFIX: &str = "blt_";
/// Longest token name, in characters.
pub const MAX_NAME_CHARS: usize = 64;
const ID_LEN: usize = 10;
const SECRET_LEN: usize = 40;

/// Hex SHA-256 of a whole secret (what is stored).
pub fn hash_secret(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
}

fn random(n: usize) -> String {
    rand::thread_rng()
        .sample_iter(&Alphanumeric)
        .take(n)
        .map(char::from)
        .collect()
}

/// A new random token id (10 letters and digits).
pub fn new_id() -> String {
    random(ID_LEN)
}

/// A new secret for token `id`: `blt_<id>_<40 random letters and digits>` (about 238
/// random bits).
pub fn new_secret(id: &str) -> String {
    format!("{PREFIX}{id}_{}", random(SECRET_LEN))
}

/// The id inside a well-formed secret (`blt_` + 10 + `_` + 40 letters and digits).
pub fn id_of(secret: &str) -> Option<&str> {
    let rest = secret.strip_prefix(PREFIX)?;
    let (id, tail) = rest.split_once('_')?;
    (id.len() == ID_LEN
        && tail.len() == SECRET_LEN
        && id.bytes().chain(tail.bytes()).all(|b| b.is_ascii_alphanumeric()))
    .then_some(id)
}

/// Checks a token name: 1 to [`MAX_NAME_CHARS`] letters, digits, spaces or `. _ - : @ /`,
/// without spaces at either end.
///
/// # Errors
/// [`ServiceError::Invalid`] naming the rule.
pub fn check_name(name: &str) -> Result<(), ServiceError> {
    let n = name.chars().count();
    if n == 0
        || n > MAX_NAME_CHARS
        || name.trim() != name
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, ' ' | '.' | '_' | '-' | ':' | '@' | '/'))
    {
        return Err(ServiceError::Invalid(format!(
            "'name' must be 1 to {MAX_NAME_CHARS} letters, digits, spaces or '. _ - : @ /', without spaces at either end"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_well_formed_secrets_have_an_id() {
        let good = format!("blt_{}_{}", "a".repeat(10), "B".repeat(40));
        assert_eq!(id_of(&good), Some("aaaaaaaaaa"));
        assert_eq!(id_of(&good[..good.len() - 1]), None);
        assert_eq!(id_of(&good.replace("blt_", "xyz_")), None);
        assert_eq!(id_of(&format!("blt_{}_{}", "a/../a/../", "B".repeat(40))), None);
        assert_eq!(id_of("blt_"), None);
    }

    #[test]
    fn names_are_checked() {
        assert!(check_name("ci deploy: rack-1/prod").is_ok());
        for bad in ["", " lead", "trail ", "tab\there", "<script>", &"x".repeat(65)] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
    }
}
