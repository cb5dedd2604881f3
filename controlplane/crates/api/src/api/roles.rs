//! Roles: who may call which route.
//!
//! Every user has one of three built-in roles ([`Role`]): `viewer` reads everything but
//! secrets, `operator` also does the day-to-day work (hosts, profiles, images, answer
//! templates, install tasks, leases, reservations, power, wake-on-LAN, diagnostics, DNS
//! records, scripts, access lists), `admin` may do everything, and alone manages users,
//! settings, service configuration, the access mode, updates, backups and imports from the
//! community store.
//!
//! The role a route needs is declared on the route itself, in its `#[utoipa::path]`
//! annotation, as the operation extension [`EXTENSION`] (`x-bootlane-role`: `public`,
//! `viewer`, `operator` or `admin`), so it is part of the OpenAPI document clients read.
//! [`RouteRoles::from_doc`] reads those declarations back from the finished document once
//! at start, and [`super::auth::require_session`], the one layer in front of every
//! signed-in route, answers 403 in the envelope when the signed-in user's role is below the
//! route's. A route without a declaration is refused to everyone but admins (and a test
//! fails on it). Users stored before roles existed read as `admin`: every user was one.

use std::collections::HashMap;

use axum::http::Method;
use utoipa::openapi::OpenApi;

/// The OpenAPI operation extension declaring the role a route needs.
pub const EXTENSION: &str = "x-bootlane-role";

pub use bootlane_core::identity::Role;

/// What a route declares it needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Needs {
    /// No sign-in (login, status, the machine routes that check their own token).
    Public,
    /// A signed-in user with at least this role.
    Role(Role),
}

impl Needs {
    fn parse(s: &str) -> Option<Self> {
        match s {
            "public" => Some(Self::Public),
            r => Role::parse(r).ok().map(Self::Role),
        }
    }
}

/// The declared needs of every operation, by method and path template (as axum's
/// `MatchedPath` gives it, e.g. `/api/v1/hosts/{id}`).
#[derive(Debug, Default, Clone)]
pub struct RouteRoles {
    by_route: HashMap<(Method, String), Needs>,
    undeclared: Vec<String>,
}

impl RouteRoles {
    /// Reads the [`EXTENSION`] of every operation of `doc`; operations without one (or with
    /// an unknown value) are listed by [`RouteRoles::undeclared`].
    pub fn from_doc(doc: &OpenApi) -> Self {
        let mut out = Self::default();
        for (path, item) in &doc.paths.paths {
            let ops = [
                (Method::GET, &item.get),
                (Method::PUT, &item.put),
                (Method::POST, &item.post),
                (Method::DELETE, &item.delete),
                (Method::PATCH, &item.patch),
                (Method::HEAD, &item.head),
            ];
            for (method, op) in ops {
                let Some(op) = op else { continue };
                let declared = op
                    .extensions
                    .as_ref()
                    .and_then(|e| e.get(EXTENSION))
                    .and_then(|v| v.as_str())
                    .and_then(Needs::parse);
                match declared {
                    Some(n) => {
                        out.by_route.insert((method, path.clone()), n);
                    }
                    None => out.undeclared.push(format!("{method} {path}")),
                }
            }
        }
        out.undeclared.sort();
        out
    }

    /// What `method` on the route template `path` needs; `None` when it declares nothing.
    /// A `HEAD` falls back to the route's `GET`.
    pub fn needs(&self, method: &Method, path: &str) -> Option<Needs> {
        self.by_route
            .get(&(method.clone(), path.to_owned()))
            .copied()
            .or_else(|| {
                (method == Method::HEAD)
                    .then(|| self.by_route.get(&(Method::GET, path.to_owned())).copied())
                    .flatten()
            })
    }

    /// The operations that declare no role (`METHOD /path`), sorted.
    pub fn undeclared(&self) -> &[String] {
        &self.undeclared
    }

    /// Whether `role` may call `method` on `path`: a declared `public` route or a role at
    /// least the declared one; an undeclared route only for admins.
    pub fn allows(&self, role: Role, method: &Method, path: &str) -> bool {
        match self.needs(method, path) {
            Some(Needs::Public) => true,
            Some(Needs::Role(r)) => role >= r,
            None => role == Role::Admin,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_route_of_the_document_declares_a_role() {
        let doc = super::super::openapi_doc();
        let roles = RouteRoles::from_doc(&doc);
        // The refusal is documented where it can happen.
        let responses = |p: &str| doc.paths.paths[p].post.as_ref().unwrap().responses.responses.clone();
        assert!(responses("/api/v1/hosts").contains_key("403"));
        // (`POST /auth/login` declares its own 403: a directory user with no mapped group.)
        assert!(!responses("/api/v1/auth/logout").contains_key("403"));
        assert_eq!(roles.undeclared(), &[] as &[String], "routes without x-bootlane-role");
        let get = |p: &str| roles.needs(&Method::GET, p);
        assert_eq!(get("/api/v1/hosts"), Some(Needs::Role(Role::Viewer)));
        assert_eq!(
            roles.needs(&Method::POST, "/api/v1/hosts"),
            Some(Needs::Role(Role::Operator))
        );
        assert_eq!(get("/api/v1/users"), Some(Needs::Role(Role::Admin)));
        assert_eq!(roles.needs(&Method::POST, "/api/v1/auth/login"), Some(Needs::Public));
        assert_eq!(roles.needs(&Method::HEAD, "/api/v1/hosts"), get("/api/v1/hosts"));
        assert!(!roles.allows(Role::Operator, &Method::GET, "/api/v1/not-declared"));
        assert!(roles.allows(Role::Admin, &Method::GET, "/api/v1/not-declared"));
    }
}
