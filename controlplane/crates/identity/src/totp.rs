//! One-time codes (TOTP, RFC 6238: HMAC-SHA-1, [`DIGITS`] digits, [`STEP_SECS`]-second
//! steps, [`SKEW_STEPS`] step of clock skew either way) and recovery codes: the
//! primitives the API's second-factor store and routes use. Codes are checked one step at
//! a time so the caller can refuse a step already spent (no replay).

use rand::Rng;
use sha2::{Digest, Sha256};
use time::OffsetDateTime;
use totp_rs::{Algorithm, TOTP};

/// Time step, in seconds (RFC 6238's default, what authenticator apps use).
pub const STEP_SECS: u64 = 30;
/// Digits of a code.
pub const DIGITS: usize = 6;
/// Steps of clock skew accepted either way (a code of the step before or after now).
pub const SKEW_STEPS: u64 = 1;
/// Recovery codes made at each confirmation.
pub const RECOVERY_CODES: usize = 10;
/// Longest `code`/`otp` accepted, in bytes (a recovery code with its dashes is 19).
pub const MAX_CODE_BYTES: usize = 64;
/// Issuer shown by authenticator apps.
pub const ISSUER: &str = "Bootlane";
/// Recovery-code alphabet (RFC 4648 base32, lower case): 5 bits a character.
const RECOVERY_ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz234567";

/// What a code check decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The user has no active second factor.
    NotEnabled,
    /// A current code (never used before) or an unused recovery code (now spent).
    Accepted,
    /// No code was given.
    Missing,
    /// Wrong, too old, reused, or a spent recovery code.
    Refused,
}

/// Current Unix time in seconds.
pub fn unix_now() -> u64 {
    u64::try_from(OffsetDateTime::now_utc().unix_timestamp()).unwrap_or(0)
}

/// A recovery code normalised for hashing: lower case, without dashes and spaces.
pub fn normalise_recovery(code: &str) -> String {
    code.chars()
        .filter(|c| *c != '-' && !c.is_whitespace())
        .flat_map(char::to_lowercase)
        .collect()
}

/// Hex SHA-256 of a normalised recovery code (what is stored).
pub fn hash_recovery(code: &str) -> String {
    hex::encode(Sha256::digest(normalise_recovery(code).as_bytes()))
}

/// A new recovery code: 16 base32 characters (80 random bits) in groups of four,
/// `abcd-efgh-ijkl-mnop`.
pub fn new_recovery_code() -> String {
    let mut rng = rand::rngs::OsRng;
    let chars: Vec<char> = (0..16)
        .map(|_| char::from(RECOVERY_ALPHABET[rng.gen_range(0..RECOVERY_ALPHABET.len())]))
        .collect();
    chars
        .chunks(4)
        .map(|c| c.iter().collect::<String>())
        .collect::<Vec<_>>()
        .join("-")
}

/// True for a 6-digit code (otherwise a code is taken as a recovery code).
pub fn is_totp_code(code: &str) -> bool {
    code.len() == DIGITS && code.bytes().all(|b| b.is_ascii_digit())
}

/// The generator for `secret` and `username` (no skew: each step is probed on its own).
pub fn generator(secret: Vec<u8>, username: &str) -> anyhow::Result<TOTP> {
    TOTP::new(
        Algorithm::SHA1,
        DIGITS,
        0,
        STEP_SECS,
        secret,
        Some(ISSUER.into()),
        username.replace(':', "_"),
    )
    .map_err(|e| anyhow::anyhow!("TOTP parameters: {e}"))
}

/// The step of `now` within [`SKEW_STEPS`] whose code is `code` and which is after
/// `last_step`; `None` when there is none (each comparison is constant-time).
pub fn matching_step(totp: &TOTP, code: &str, now: u64, last_step: u64) -> Option<u64> {
    let step = now / STEP_SECS;
    (step.saturating_sub(SKEW_STEPS)..=step + SKEW_STEPS)
        .filter(|s| *s > last_step)
        .find(|s| totp.check(code, s * STEP_SECS))
}
