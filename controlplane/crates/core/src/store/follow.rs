//! Following other nodes' changes: a service that keeps something derived from store
//! trees (a zone, an index, a gate) implements [`Follower`] next to its own rebuild, and
//! names the trees it derives from. On a shared store the wiring registers the
//! followers, gathers a burst of [`super::RemoteChange`]s into a [`Burst`] and hands it to
//! every follower whose trees it touches. With sled there are no other nodes and no
//! bursts.

use std::collections::HashMap;

pub use futures::future::BoxFuture;

use super::RemoteChange;

/// The error a follower reports (logged by the caller; the next burst tries again).
pub type FollowError = Box<dyn std::error::Error + Send + Sync>;

/// What other nodes changed since the last burst: the trees and their changed keys, or
/// everything (the announcements overflowed and some were lost).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Burst {
    everything: bool,
    ids: HashMap<String, Vec<u64>>,
}

impl Burst {
    /// A burst that changed everything: each follower rebuilds all it derives.
    pub fn everything() -> Self {
        Self {
            everything: true,
            ..Self::default()
        }
    }

    /// Adds one announced change (its tree and the ids among its keys).
    pub fn add(&mut self, change: &RemoteChange) {
        self.ids.entry(change.tree.clone()).or_default().extend(change.ids());
    }

    /// Marks the burst as changing everything (announcements were lost).
    pub fn lost_some(&mut self) {
        self.everything = true;
    }

    /// Whether the burst changed nothing.
    pub fn is_empty(&self) -> bool {
        !self.everything && self.ids.is_empty()
    }

    /// Whether any of `trees` changed (always, when everything did).
    pub fn touches(&self, trees: &[&str]) -> bool {
        self.everything || trees.iter().any(|t| self.ids.contains_key(*t))
    }

    /// The changed ids of table `tree`, for a follower that follows key by key:
    /// `Some(None)` reload every row (everything changed), `Some(Some(ids))` these rows
    /// (in announcement order, possibly repeated), `None` no id of the tree changed.
    pub fn ids(&self, tree: &str) -> Option<Option<Vec<u64>>> {
        if self.everything {
            return Some(None);
        }
        match self.ids.get(tree) {
            Some(ids) if !ids.is_empty() => Some(Some(ids.clone())),
            _ => None,
        }
    }
}

/// A service that rebuilds what it derived from store trees when another node changed
/// them. Implemented by each following service next to its rebuild; registered with one
/// line in the wiring.
pub trait Follower: Send + Sync {
    /// The service's name in logs (`"dns"`, `"dhcp"`).
    fn name(&self) -> &'static str;

    /// The trees ([`super::Entity::TREE`] or [`super::Kv`] names) it derives from: a
    /// burst that touches none of them is not given to it.
    fn trees(&self) -> &'static [&'static str];

    /// Brings the service up to date with `burst` (which touches [`Follower::trees`]):
    /// rebuilds from the store, or follows changed ids key by key ([`Burst::ids`]).
    ///
    /// # Errors
    /// The rebuild's error; the service keeps its last state.
    fn follow<'a>(&'a self, burst: &'a Burst) -> BoxFuture<'a, Result<(), FollowError>>;
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    fn change(tree: &str, ids: &[u64]) -> RemoteChange {
        RemoteChange {
            tree: tree.into(),
            keys: Arc::new(ids.iter().map(|i| i.to_be_bytes().to_vec()).collect()),
        }
    }

    #[test]
    fn a_burst_names_the_trees_and_ids_it_changed() {
        let mut b = Burst::default();
        assert!(b.is_empty());
        b.add(&change("leases", &[3, 1]));
        b.add(&change("leases", &[3]));
        b.add(&RemoteChange {
            tree: "dhcp_settings".into(),
            keys: Arc::new(vec![b"subnet_overrides".to_vec()]),
        });
        assert!(b.touches(&["hosts", "leases"]));
        assert!(b.touches(&["dhcp_settings"]));
        assert!(!b.touches(&["hosts"]));
        assert_eq!(b.ids("leases"), Some(Some(vec![3, 1, 3])));
        assert_eq!(b.ids("dhcp_settings"), None);
        assert_eq!(b.ids("hosts"), None);
        b.lost_some();
        assert!(b.touches(&["hosts"]));
        assert_eq!(b.ids("hosts"), Some(None));
        assert_eq!(Burst::everything().ids("leases"), Some(None));
    }
}
