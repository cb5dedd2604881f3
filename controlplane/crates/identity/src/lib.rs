//! Who signs in, and the secrets that prove it, below the API: the directory client that
//! checks a user name and password against LDAP and maps groups to roles
//! ([`ldap`], with its `[auth.ldap]` configuration), the OpenID Connect client for single
//! sign-on ([`oidc`], with `[auth.oidc]`), one-time codes ([`totp`]), API token secrets ([`tokens`]), and secrets sealed at rest with a
//! key file per purpose ([`sealed`]: BMC passwords, TOTP secrets). The API's session,
//! token and second-factor routes build on it; the roles themselves are
//! [`bootlane_core::identity::Role`].

pub mod ldap;
pub mod oidc;
pub mod sealed;
pub mod tokens;
pub mod totp;
